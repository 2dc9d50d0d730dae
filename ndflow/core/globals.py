"""The engine's public functions: memory management, backends, modes and measurement."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .backend import Backend
from .engine import ENGINE, Engine
from .flags import env
from .profiler import MemoryInfo, ProfileInfo, TimingInfo
from .tensor import Tensor

T = TypeVar("T")


def tidy(name_or_fn: str | Callable[..., T] | None = None, fn: Callable[..., T] | None = None, *args: Any) -> Any:
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


def profile(fn: Callable[[], Any]) -> ProfileInfo:
    """Run ``fn`` and report ``new_bytes``, ``new_tensors``, ``peak_bytes`` and each kernel it ran."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError("profile: pass a synchronous function")
    return ENGINE.profile(fn)


def dispose_variables() -> None:
    """Dispose every registered variable."""
    ENGINE.dispose_variables()


def engine() -> Engine:
    return ENGINE


def register_backend(name: str, factory: Callable[[], Backend], priority: int = 1) -> bool:
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
    """Wait until the active backend is initialized."""
    ENGINE.backend  # noqa: B018 - initializes the best backend
    await asyncio.sleep(0)


async def next_frame() -> None:
    """Yield to the event loop once (TF.js's ``tf.nextFrame``)."""
    await asyncio.sleep(0)


def enable_debug_mode() -> None:
    """Time and log every kernel and raise on NaN/Inf in float outputs."""
    env().set("DEBUG", True)


def enable_prod_mode() -> None:
    """Skip argument validation and debug checks, for speed."""
    env().set("PROD", True)
    env().set("DEBUG", False)


def disable_deprecation_warnings() -> None:
    """Present for TF.js parity; ndflow prints no deprecation warnings."""
