"""Loading the compiled kernels: numba's import, the kernel modules and their compiled code, on a background
thread or on the caller's.

Importing numba and loading the kernels from numba's on-disk cache takes a few tenths of a second; compiling them
(the first run after install, or with an empty cache) takes seconds. With the flag ``CPU_JIT_BACKGROUND`` on (the
default), the first kernel call that could use them starts that work on a daemon thread and runs its numpy (or C
module) path; the calls after the thread has finished use the compiled kernels. Off, the first call does the work
itself and waits for it (the tests' setting, where each call must take the compiled path); each kernel then
compiles at its own first call, as numba does.

The background thread compiles, besides the C callbacks (compiled when their modules are imported), every
argument type list recorded in :mod:`._signatures` (``tools/record_jit_signatures.py``), so the models' calls
find their kernels compiled. A call with argument types not recorded there compiles its kernel when it is made.

When the thread finishes it bumps the flags' version (``env().version``): decisions kept from the time the compiled
kernels were missing (plans' bound calls, replayed calls' memos) are made again.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from types import ModuleType
from typing import Any

from ....core.flags import env

logger = logging.getLogger("ndflow")

#: Modules of numba-compiled functions (compiled on first call, or here from :mod:`._signatures`).
KERNEL_MODULES = ("_kernels", "_conv_kernels", "_dw_kernels", "_dw3_kernels", "_epilogue", "_image_kernels",
                  "_nms_kernels", "_grad_kernels")  # fmt: skip
#: Modules of numba C callbacks (compiled when imported).
CALLBACK_MODULES = ("_dw_rows", "_conv_rows")

_lock = threading.RLock()
_job: dict[str, Any] = {"thread": None, "module": None, "error": None, "gate": None}


def _types() -> ModuleType:
    from numba.core import types

    return types


def spell(t: Any) -> str:
    """A numba argument type as a short string: ``float32[4C]`` (an array: rank, layout, ``r`` if read-only),
    ``int64``, ``float32``."""
    types = _types()
    if isinstance(t, types.Array):
        return f"{t.dtype}[{t.ndim}{t.layout}{'' if t.mutable else 'r'}]"
    return str(t)


def parse(text: str) -> Any:
    """The numba type a :func:`spell` string names."""
    types = _types()
    if text.endswith("]"):
        dtype, rest = text[:-1].split("[")
        readonly = rest.endswith("r")
        rest = rest.rstrip("r")
        return types.Array(getattr(types, dtype), int(rest[:-1]), rest[-1], readonly=readonly)
    return getattr(types, text)


def dispatchers() -> dict[str, Any]:
    """The public numba functions of the kernel modules (imports them, and numba), by ``module.name``."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name in KERNEL_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        for attr, value in vars(module).items():
            if (
                isinstance(value, Dispatcher)
                and not attr.startswith("_")
                and value.py_func.__module__ == module.__name__
            ):
                found[f"{name}.{attr}"] = value
    return found


def compiled_signatures() -> dict[str, list[tuple[str, ...]]]:
    """The argument types each public kernel has been compiled for in this process (spelled by :func:`spell`)."""
    return {
        key: sorted(tuple(spell(t) for t in sig) for sig in fn.signatures)
        for key, fn in dispatchers().items()
        if fn.signatures
    }


def load(ahead: bool = True) -> ModuleType:
    """Import numba and the kernel modules and return :mod:`._kernels`; ``ahead``, also compile the recorded
    signatures and the C callbacks (or load them from numba's cache) rather than at their first calls. Raises what
    numba raises where it is unusable."""
    import numba

    if "NUMBA_THREADING_LAYER" not in os.environ:
        numba.config.THREADING_LAYER = "workqueue"
    from ._signatures import SIGNATURES

    kernels = importlib.import_module(f"{__package__}._kernels")
    if not ahead:
        return kernels
    found = dispatchers()
    for key, signatures in SIGNATURES.items():
        fn = found.get(key)
        if fn is None:
            continue  # a kernel renamed or removed since the recording
        for signature in signatures:
            fn.compile(tuple(parse(t) for t in signature))
    for name in CALLBACK_MODULES:
        importlib.import_module(f"{__package__}.{name}")
    return kernels


def _run(ahead: bool) -> None:
    """Load the kernels (``ahead``: compiled ahead of their calls) and record the module or the error (on the
    thread that loads them)."""
    gate = _job["gate"]
    if gate is not None:
        gate.wait()
    try:
        module = load(ahead)
    except Exception as exc:  # numba present but unusable (e.g. a numpy it does not support)
        _job["error"] = exc
        return
    _job["module"] = module
    env().version += 1  # decisions made while the kernels were missing are made again


def ready(background: bool) -> ModuleType | None:
    """The compiled kernels' module once loaded; None while the background thread loads them (started by the
    first call). With ``background`` off, load them on this thread (or wait for the thread) first. Raises the
    loading's error (once)."""
    module = _job["module"]
    if module is not None:
        return module
    with _lock:
        thread = _job["thread"]
        if _job["module"] is None and _job["error"] is None and thread is None:
            if background:
                thread = threading.Thread(target=_run, args=(True,), name="ndflow-jit-warmup", daemon=True)
                _job["thread"] = thread
                thread.start()
            else:
                _run(False)  # under the lock: a concurrent first call waits for this one
    if not background and thread is not None and thread is not threading.current_thread():
        thread.join()
    error = _job["error"]
    if error is not None:
        _job["error"] = None
        raise error
    return _job["module"]


def wait(timeout: float | None = None) -> bool:
    """Wait for a background load to finish (``timeout`` seconds at most); whether no load is running now."""
    thread = _job["thread"]
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)
        return not thread.is_alive()
    return True


def reset(gate: threading.Event | None = None) -> None:
    """Forget the loaded module, as at the start of the process (for tests; waits for a running load first). A
    ``gate`` holds the next background load until it is set."""
    wait()
    with _lock:
        _job.update(thread=None, module=None, error=None, gate=gate)
