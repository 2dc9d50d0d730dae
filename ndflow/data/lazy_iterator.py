"""``LazyIterator``: the iterator every dataset hands out (tfjs-data's ``LazyIterator``), sync and async.

An iterator gives one element per ``next()``: an :class:`IteratorResult` with ``value`` and ``done``, which is
also awaitable (``await it.next()`` returns it), so TF.js's ``const {value, done} = await it.next()`` ports as
``r = await it.next()``. Python's protocols come with it: ``for x in it`` and ``async for x in it``.

A subclass implements :meth:`LazyIterator.next` (blocking). Iterators whose source is asynchronous (an async
generator, a device) override :meth:`LazyIterator.next_async` as well; their ``next()`` then drives the
coroutine to completion on a private event loop when no loop runs in the calling thread, and refuses with a
clear error when one does (use ``await it.next_async()`` or ``async for`` there).

Every iterator can be closed (``close()`` or ``with``): a source holding a file, a camera or a microphone
releases it. Closing twice does nothing.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["IteratorResult", "LazyIterator", "run_coroutine_blocking"]


class IteratorResult(Generic[T]):
    """One step of an iterator: ``value`` (None when done) and ``done``; awaitable, and readable as
    ``r['value']`` / ``r['done']`` as TF.js's ``{value, done}`` object."""

    __slots__ = ("done", "value")

    def __init__(self, value: T | None, done: bool) -> None:
        self.value = value
        self.done = bool(done)

    def __getitem__(self, key: str) -> Any:
        if key == "value":
            return self.value
        if key == "done":
            return self.done
        raise KeyError(f"IteratorResult has 'value' and 'done', not {key!r}")

    def __await__(self) -> Generator[Any, None, IteratorResult[T]]:
        return self
        yield  # pragma: no cover - makes this a generator

    def __iter__(self):  # (value, done) unpacking
        return iter((self.value, self.done))

    def __repr__(self) -> str:
        return f"IteratorResult(value={self.value!r}, done={self.done})"


def run_coroutine_blocking(make: Callable[[], Awaitable[T]], what: str) -> T:
    """Run the awaitable ``make()`` to completion from synchronous code; ``what`` names the caller in the error
    raised when an event loop already runs in this thread (blocking there would deadlock it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            f"{what}: the source is asynchronous and an event loop is running in this thread; use "
            "'await it.next_async()', 'async for' or 'await dataset.for_each_async(f)' there"
        )
    return asyncio.run(_await(make))


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


class LazyIterator(ABC, Generic[T]):
    """An iterator over a dataset's elements (see the module docstring)."""

    #: Whether the source is asynchronous (its ``next_async`` is the primary method).
    is_async: bool = False
    _closed: bool = False

    @abstractmethod
    def next(self) -> IteratorResult[T]:
        """The next element (blocking); ``done`` once the source is exhausted, and every call after."""

    async def next_async(self) -> IteratorResult[T]:
        """The next element, awaitable; sources that are asynchronous override it."""
        return self.next()

    def summary(self) -> str:
        """A one-line description of the iterator chain (tfjs-data's ``summary()``)."""
        return type(self).__name__

    def close(self) -> None:
        """Release what the source holds (a file, a camera, ...); further ``next()`` calls are done."""
        self._closed = True

    # Python's protocols -------------------------------------------------------------------------------------
    def __iter__(self) -> LazyIterator[T]:
        return self

    def __next__(self) -> T:
        result = self.next()
        if result.done:
            raise StopIteration
        return result.value  # type: ignore[return-value]

    def __aiter__(self) -> LazyIterator[T]:
        return self

    async def __anext__(self) -> T:
        result = await self.next_async()
        if result.done:
            raise StopAsyncIteration
        return result.value  # type: ignore[return-value]

    def __await__(self) -> Generator[Any, None, LazyIterator[T]]:
        """``await ds.iterator()`` (TF.js returns a Promise of the iterator) gives the iterator itself."""
        return self
        yield  # pragma: no cover

    def __enter__(self) -> LazyIterator[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{self.summary()}>"
