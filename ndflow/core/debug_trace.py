"""Debug mode's trace: with the flags ``DEBUG`` and ``DEBUG_TRACE=path`` (a file name; ``true`` means
``ndflow_trace.json``), every kernel that debug mode times, and the ops, graph nodes and layers around them, are
recorded as ``nf.profile`` records them, and written as a Chrome trace (core/chrome_trace.py) to the path when
debug mode or the flag is turned off, or the process exits. :func:`write_debug_trace` writes what was recorded
so far.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

from .flags import env
from .profiler import ProfileInfo, device_timer

logger = logging.getLogger("ndflow")

DEFAULT_PATH = "ndflow_trace.json"
_state: dict[str, Any] = {"info": None, "path": "", "engine": None, "atexit": False}


def trace_path() -> str:
    """The path the flag ``DEBUG_TRACE`` names, or "" when it is off."""
    if not env().has("DEBUG_TRACE"):
        return ""
    value = env().get("DEBUG_TRACE")
    if value is True:
        return DEFAULT_PATH
    if value is False or value in (0, ""):
        return ""
    return str(value)


def update(engine: Any) -> None:
    """Start or stop recording after ``DEBUG`` or ``DEBUG_TRACE`` changed (a recording stopped is written)."""
    path = trace_path()
    want = bool(engine.debug) and bool(path)
    if _state["info"] is not None and (not want or path != _state["path"]):
        _finish()
    if want and _state["info"] is None:
        backend = engine._backend
        info = ProfileInfo(
            peak_bytes=engine.num_bytes,
            backend=engine.backend_name or "",
            gpu_timer=device_timer(backend) if backend is not None else "",
        )
        from threading import get_ident

        info.thread = get_ident()
        engine.start_profile_recording(info)
        _state.update(info=info, path=path, engine=engine)
        if not _state["atexit"]:
            atexit.register(_finish)
            _state["atexit"] = True


def write_debug_trace() -> str | None:
    """Write the trace debug mode has recorded so far (recording goes on); its path, or None when debug mode
    records no trace."""
    info = _state["info"]
    if info is None:
        return None
    import time

    info.end = time.perf_counter()
    try:
        return info.save_trace(_state["path"])
    finally:
        info.end = 0.0


def _finish() -> None:
    info, engine = _state["info"], _state["engine"]
    if info is None:
        return
    _state["info"] = None
    engine.stop_profile_recording(info)
    try:
        path = info.save_trace(_state["path"])
    except (OSError, ValueError) as exc:
        logger.warning("debug mode could not write its trace: %s", exc)
        return
    logger.info("debug mode wrote a trace of %d kernels to %s", len(info.kernels), path)
