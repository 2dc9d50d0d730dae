"""Running an iterator to its end: ``to_array`` and ``for_each_async``, sync or awaited.

ndflow's rule for awaitable APIs (DESIGN.md): a plain call runs to completion and returns its result, which is
also awaitable, so TF.js's ``await ds.toArray()`` ports unchanged. With no event loop running in the thread,
the call runs at once (an asynchronous chain on the iterator's private loop). Inside a running loop (async
code, a notebook) a synchronous chain still runs at once; an asynchronous one (an async generator source,
``map_async``, an async ``f``) cannot block the loop, so the call returns a coroutine to ``await``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from ..core.awaitable import ResolvedList
from .deep_map import dispose_unless_in
from .lazy_iterator import LazyIterator, drive_sync

__all__ = ["ArrayResult", "Completed", "for_each_async", "run_to_completion", "to_array_async"]


class ArrayResult(ResolvedList[Any]):
    """The list ``to_array()`` returns; ``await`` on it gives the list itself (ndflow/core/awaitable.py)."""


class Completed:
    """What ``for_each_async()`` returns once it has run; ``await`` on it gives None (TF.js's ``void``)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return None
        yield  # pragma: no cover

    def __repr__(self) -> str:
        return "Completed()"


async def to_array_async(it: LazyIterator[Any]) -> ArrayResult:
    """Every remaining element of ``it``."""
    out = ArrayResult()
    while True:
        r = await it.next_async()
        if r.done:
            return out
        out.append(r.value)


async def for_each_async(it: LazyIterator[Any], f: Callable[[Any], Any]) -> Completed:
    """Call ``f`` on every remaining element of ``it``, awaiting what it returns when awaitable; the element's
    tensors not in ``f``'s result are disposed (tfjs-data maps ``f`` over the iterator)."""
    while True:
        r = await it.next_async()
        if r.done:
            return Completed()
        out = f(r.value)
        if inspect.isawaitable(out):
            out = await out
        dispose_unless_in(r.value, out)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_to_completion(
    it: LazyIterator[Any],
    run: Callable[[LazyIterator[Any]], Coroutine[Any, Any, Any]],
    what: str,
    f: Callable[[Any], Any] | None = None,
    close: bool = False,
) -> Any:
    """Run ``run(it)`` per the module's rule; ``close`` closes ``it`` afterwards (a dataset's own iterator)."""
    asynchronous = it.is_async or (f is not None and (inspect.iscoroutinefunction(f) or _is_async_callable(f)))
    if _loop_running():
        if asynchronous:
            return _closing(it, run(it), close)
        try:
            return drive_sync(run(it), what)
        finally:
            if close:
                it.close()
    try:
        return it.run_blocking(lambda: run(it), what)
    finally:
        if close:
            it.close()


def _is_async_callable(f: Callable[[Any], Any]) -> bool:
    call = getattr(f, "__call__", None)  # noqa: B004 - an object whose __call__ is a coroutine function
    return call is not None and inspect.iscoroutinefunction(call)


async def _closing(it: LazyIterator[Any], coro: Coroutine[Any, Any, Any], close: bool) -> Any:
    try:
        return await coro
    finally:
        if close:
            it.close()
