"""Running coroutines from synchronous code: the two rules every blocking wrapper of an async API follows."""

from __future__ import annotations

import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["drive_without_loop", "refuse_in_running_loop", "sleep"]


def drive_without_loop(coro: Coroutine[Any, Any, T], message: str) -> T:
    """The result of a coroutine that never really suspends (a chain of synchronous stages, a CPU read), driven
    without an event loop; a ``RuntimeError(message)`` if it does suspend."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(message)


async def sleep(seconds: float) -> None:
    """``asyncio.sleep(seconds)``, asyncio imported on the first call (not by ``import ndflow``)."""
    import asyncio

    await asyncio.sleep(seconds)


def refuse_in_running_loop(message: str) -> None:
    """Raise ``RuntimeError(message)`` when an event loop runs in this thread: blocking on a coroutine there would
    deadlock it."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:  # no event loop runs where asyncio was never imported (saves importing it here)
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(message)
