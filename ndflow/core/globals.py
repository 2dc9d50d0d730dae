"""The engine's public functions: memory management, backends, modes and measurement."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import types
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .backend import Backend
from .coroutines import sleep as _sleep
from .engine import ENGINE, Engine, Priority
from .flags import env
from .kernel_registry import get_kernels_for_backend, register_kernel
from .leaks import LeakReport
from .leaks import expect_no_leaks as _expect_no_leaks
from .profiler import MemoryInfo, ProfileInfo, TimingInfo
from .tensor import Tensor

T = TypeVar("T")


@overload
def tidy(name_or_fn: Callable[..., T], /, *args: Any) -> T: ...
@overload
def tidy(name_or_fn: str, fn: Callable[..., T], /, *args: Any) -> T: ...
@overload
def tidy(name_or_fn: str | None = None, /) -> Callable[[Callable[..., T]], Callable[..., T]]: ...


def tidy(name_or_fn: str | Callable[..., T] | None = None, fn: Any = None, *args: Any) -> Any:
    """Run ``fn`` and dispose every tensor it created except those it returns (or ``keep()``-ed).

    ``tidy(fn)``, ``tidy(fn, *args)``, ``tidy("name", fn, *args)`` run now, as TF.js's ``tf.tidy``.
    ``tidy()`` or ``tidy("name")`` with no function return a decorator: ``@nf.tidy()``.
    """
    if isinstance(name_or_fn, str) or name_or_fn is None:
        name = name_or_fn
        if fn is None:
            return _decorator(name)
    else:
        name, args, fn = None, ((fn,) + args if fn is not None else args), name_or_fn
    if not callable(fn):
        raise TypeError(f"tidy: expected a function, got {type(fn).__name__}")
    if not args and _needs_arguments(fn):
        raise TypeError(
            f"tidy: {getattr(fn, '__name__', 'fn')} needs arguments, and tidy(fn) calls it at once; "
            "to decorate a function use @nf.tidy() (with parentheses)"
        )
    return ENGINE.tidy(name, fn, args, {})


def _needs_arguments(fn: Callable[..., Any]) -> bool:
    code = getattr(fn, "__code__", None)
    if code is not None and type(fn) is types.FunctionType and not hasattr(fn, "__wrapped__"):  # fast: no signature
        required = code.co_argcount - len(fn.__defaults__ or ())
        kwonly = set(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])
        return required > 0 or bool(kwonly - set(fn.__kwdefaults__ or {}))
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params
    )


def _decorator(name: str | None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        if inspect.iscoroutinefunction(fn):
            raise TypeError("tidy: cannot decorate an async function; await its results outside tidy instead")

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> T:
            return ENGINE.tidy(name or fn.__name__, fn, args, kwargs)

        return run

    return wrap


def keep(result: Tensor) -> Tensor:
    """Exempt a tensor from disposal by the enclosing ``tidy`` scopes."""
    return ENGINE.keep(result)


def dispose(container: Any) -> None:
    """Dispose a tensor, or every tensor in nested lists, tuples and dicts. Disposing twice is harmless."""
    ENGINE.dispose(container)


def memory() -> MemoryInfo:
    """``num_tensors``, ``num_data_buffers``, ``num_bytes``, ``unreliable``, ``reasons`` (+ backend fields)."""
    return ENGINE.memory()


def time(fn: Callable[[], Any]) -> TimingInfo:
    """Run ``fn`` (its tensors are disposed) and report ``kernel_ms`` and ``wall_ms``."""
    return ENGINE.time(fn)


def profile(fn: Callable[[], Any], trace: str | os.PathLike[str] | None = None) -> ProfileInfo:
    """Run ``fn`` and report ``new_bytes``, ``new_tensors``, ``peak_bytes`` and each kernel it ran.

    ``trace``: also write the run as a Chrome trace (``ProfileInfo.save_trace``) to this path."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError("profile: pass a synchronous function")
    if trace is not None and not isinstance(trace, str | os.PathLike):
        raise TypeError(f"profile: argument 'trace' must be a file path, got {type(trace).__name__}")
    info = ENGINE.profile(fn)
    if trace is not None:
        info.save_trace(trace)
    return info


def dispose_variables() -> None:
    """Dispose every registered variable."""
    ENGINE.dispose_variables()


def engine() -> Engine:
    return ENGINE


def register_backend(name: str, factory: Callable[[], Backend], priority: Priority = 1) -> bool:
    """Register a backend (TF.js's ``registerBackend``); the highest priority that initializes is chosen on
    first use. ``priority`` may also be a function, called once when the backends are first ranked."""
    return ENGINE.register_backend(name, factory, priority)


def set_backend(name: str) -> bool:
    """Make ``name`` the active backend; False if it failed to initialize."""
    return ENGINE.set_backend(name)


def get_backend() -> str:
    """The name of the active backend (choosing the best one on first use)."""
    return ENGINE.get_backend()


def backend() -> Backend:
    """The active backend object."""
    return ENGINE.backend


def find_backend(name: str) -> Backend | None:
    return ENGINE.find_backend(name)


def remove_backend(name: str) -> None:
    ENGINE.remove_backend(name)


async def ready() -> None:
    """Wait until the active backend is initialized and runs at full speed (the cpu backend: its compiled kernels
    loaded, which happens in the background after the first kernel call); the event loop keeps running."""
    backend = ENGINE.backend
    while not backend.wait_ready(0):
        await _sleep(0.02)
    await _sleep(0)


async def next_frame() -> None:
    """Yield to the event loop once (TF.js's ``tf.nextFrame``)."""
    await _sleep(0)


def enable_debug_mode() -> None:
    """Time and log every kernel and raise on NaN/Inf in float outputs."""
    env().set("DEBUG", True)


def enable_prod_mode() -> None:
    """Skip argument validation and debug checks, for speed."""
    env().set("PROD", True)
    env().set("DEBUG", False)


def disable_deprecation_warnings() -> None:
    """Silence ``deprecation_warn`` messages."""
    env().set("DEPRECATION_WARNINGS_ENABLED", False)


def print_(x: Tensor, verbose: bool = False) -> None:
    """Print a tensor in TF.js's layout (``nf.print``; ``verbose`` adds dtype, rank and shape)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"print: argument 'x' must be a Tensor, got {type(x).__name__}")
    print(x.to_string(verbose))


def op(f: Callable[..., Any] | dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    """Wrap a function of tensors in a named scope that frees its intermediates (TF.js's ``tf.op``).

    ``op(fn)`` or ``op({"name": fn})``; the name prefixes errors raised inside, as in TF.js.
    """
    if isinstance(f, dict):
        if len(f) != 1:
            raise ValueError(f"op: the dict must hold a single name -> function entry, got {len(f)}")
        ((name, fn),) = f.items()
    else:
        fn, name = f, getattr(f, "__name__", "op")
    if not callable(fn):
        raise TypeError(f"op: expected a function, got {type(fn).__name__}")
    if inspect.iscoroutinefunction(fn):
        raise TypeError("op: cannot wrap an async function")
    op_name = name[:-1] if name.endswith("_") else name

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return ENGINE.tidy(op_name, fn, args, kwargs)
        except Exception as exc:
            exc.args = (f"Error in {op_name}: {exc.args[0]}" if exc.args else f"Error in {op_name}",) + exc.args[1:]
            raise

    return run


def deprecation_warn(msg: str) -> None:
    """Log a deprecation warning unless ``disable_deprecation_warnings()`` was called."""
    if env().get_bool("DEPRECATION_WARNINGS_ENABLED"):
        logging.getLogger("ndflow").warning(
            "%s You can disable deprecation warnings with nf.disable_deprecation_warnings().", msg
        )


def find_backend_factory(name: str) -> Callable[[], Backend] | None:
    """The factory a backend was registered with, or None."""
    entry = ENGINE._factories.get(name)
    return None if entry is None else entry[0]


def copy_registered_kernels(registered_backend_name: str, new_backend_name: str) -> None:
    """Register every kernel of one backend for another (TF.js's ``copyRegisteredKernels``)."""
    kernels = get_kernels_for_backend(registered_backend_name)
    if not kernels:
        raise ValueError(f"copy_registered_kernels: backend '{registered_backend_name}' has no kernels")
    for config in kernels:
        register_kernel(
            config.kernel_name, new_backend_name, config.kernel_func, config.setup_func, config.dispose_func
        )


def set_platform(platform_name: str, platform: Any) -> None:
    """Set the platform object (``now()``, ``fetch(...)``, ...) that I/O handlers use, as TF.js's."""
    env().set_platform(platform_name, platform)


def leaks(include_alive: bool = False) -> list[LeakReport]:
    """Tensors dropped without ``dispose()`` since tracking began (``TRACK_LEAKS`` or debug mode),
    with where each was created; ``include_alive`` adds the undisposed tensors still reachable."""
    return ENGINE.leak_tracker().reports(include_alive)


def expect_no_leaks() -> Any:
    """``with nf.expect_no_leaks():`` raises ``nf.LeakError`` if the block drops undisposed tensors."""
    return _expect_no_leaks(ENGINE)
