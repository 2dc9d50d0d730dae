"""Optional compiled (numba) kernels for the cpu backend.

numba is an optional dependency (``pip install ndflow[fast]``). Without it, or with the flag
``CPU_JIT`` off (``NDFLOW_FLAGS="CPU_JIT=false"`` or ``nf.env().set("CPU_JIT", False)``), every cpu
kernel runs its numpy path. numba is imported lazily, on the first kernel call that can use it, so
that ``import ndflow`` stays fast; compiled code is cached on disk (``cache=True``), so only the
very first run on a machine pays compile time. That first call does not wait for numba: the kernels load on a
background thread while the numpy (and C module) paths serve the calls (:mod:`.warmup`, flag
``CPU_JIT_BACKGROUND``).

Threading: numba's parallel loops run on its ``workqueue`` layer (unless ``NUMBA_THREADING_LAYER``
says otherwise). Its OpenMP layer spins its threads after each loop and fights OpenBLAS's threads
for the cores (4-10x slower on two cores); the workqueue threads sleep instead. Compiled functions
keep the GIL, so two Python threads never run a parallel loop at the same time (which the
workqueue layer does not support).
"""

from __future__ import annotations

import importlib.util
import logging
from types import ModuleType

from ....core.flags import env

logger = logging.getLogger("ndflow")

# Activation codes of the compiled epilogues (bias, then activation, applied where the output is written).
ACTIVATION_CODES = {"linear": 0, "relu": 1, "relu6": 2, "leakyrelu": 3, "prelu": 4, "sigmoid": 5, "elu": 6}

_state: dict[str, object] = {"enabled": None, "module": None, "failed": None, "background": None}


def set_enabled(value: object) -> None:
    """Set hook of the flag ``CPU_JIT`` (registered in :mod:`..flags`)."""
    _state["enabled"] = bool(value)


def set_parallel(value: object) -> None:
    """Set hook of the flag ``CPU_JIT_PARALLEL`` (registered in :mod:`..flags`)."""
    _state["parallel"] = bool(value)


def set_plans(value: object) -> None:
    """Set hook of the flag ``CPU_CONV_PLANS`` (registered in :mod:`..flags`)."""
    _state["plans"] = bool(value)


def numba_available() -> bool:
    """Whether numba can be imported here (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def plans_enabled() -> bool:
    """Whether the convolution kernels keep per-call plans (flag ``CPU_CONV_PLANS``)."""
    on = _state.get("plans")
    if on is None:
        on = _state["plans"] = env().get_bool("CPU_CONV_PLANS")
    return bool(on)


def parallel() -> bool:
    """Whether large compiled loops run on numba's threads (flag ``CPU_JIT_PARALLEL``)."""
    on = _state.get("parallel")
    if on is None:
        on = _state["parallel"] = env().get_bool("CPU_JIT_PARALLEL")
    return bool(on)


def enabled() -> bool:
    """Whether the cpu kernels use the compiled paths: numba installed, flag ``CPU_JIT`` on, no load failure."""
    on = _state["enabled"]
    if on is None:
        on = _state["enabled"] = env().get_bool("CPU_JIT")
    return bool(on) and _state["failed"] is None


def background() -> bool:
    """Whether the kernels load on a background thread while the first calls run their numpy paths (flag
    ``CPU_JIT_BACKGROUND``; :mod:`.warmup`)."""
    on = _state.get("background")
    if on is None:
        on = _state["background"] = env().get_bool("CPU_JIT_BACKGROUND")
    return bool(on)


def set_background(value: object) -> None:
    """Set hook of the flag ``CPU_JIT_BACKGROUND`` (registered in :mod:`..flags`)."""
    _state["background"] = bool(value)


def kernels() -> ModuleType | None:
    """The compiled kernels module, or None when the numpy paths must run: JIT off, numba unusable, or (flag
    ``CPU_JIT_BACKGROUND`` on) the kernels still loading on the background thread.

    This is the one place that decides between the compiled kernels and the numpy paths. The first call starts
    loading numba and the kernels (:func:`.warmup.ready`); a failure there is logged once and turns the JIT off for
    the rest of the process.
    """
    module = _state["module"]
    if module is not None:
        return module if enabled() else None  # type: ignore[return-value]
    if not enabled():
        return None
    from . import warmup

    try:
        module = warmup.ready(background())
    except Exception as exc:  # numba present but unusable (e.g. a numpy it does not support)
        _state["failed"] = f"{type(exc).__name__}: {exc}"
        logger.warning("cpu backend: numba kernels unavailable, using numpy (%s)", _state["failed"])
        return None
    if module is not None:
        _state["module"] = module
    return module


def forget() -> None:
    """Forget the loaded kernels and a load failure, as at the start of the process (for tests)."""
    from . import warmup

    warmup.reset()
    _state["module"] = None
    _state["failed"] = None


def status() -> str:
    """One line for ``ndflow info``: whether the compiled kernels are on, and why not."""
    if not numba_available():
        return "off (numba not installed; pip install ndflow[fast])"
    if _state["failed"] is not None:
        return f"off (numba failed to load: {_state['failed']})"
    if not env().get_bool("CPU_JIT"):
        return "off (flag CPU_JIT is false)"
    import numba

    return f"on (numba {numba.__version__})"
