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

The transformations of tfjs-data's ``LazyIterator`` (``map``, ``filter``, ``take``, ``skip``, ``batch``,
``shuffle``, ``prefetch``, ``concatenate``, ``to_array``, ``for_each_async``) are here too; they build the
iterators of :mod:`ndflow.data.iterators` and :mod:`ndflow.data.buffered`. An iterator chain with an
asynchronous stage drives it, from synchronous code, on ONE private event loop per iterator (made on first
use, closed by ``close()``), not a new loop per element.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.coroutines import drive_without_loop, refuse_in_running_loop

if TYPE_CHECKING:
    from .results import ArrayResult, Completed

T = TypeVar("T")

__all__ = ["IteratorResult", "LazyIterator", "drive_sync", "run_coroutine_blocking"]


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
    refuse_in_running_loop(
        f"{what}: the source is asynchronous and an event loop is running in this thread; use "
        "'await it.next_async()', 'async for' or 'await dataset.for_each_async(f)' there"
    )
    return asyncio.run(_await(make))


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def _check_no_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{what}: the source is asynchronous and an event loop is running in this thread; use "
        "'await it.next_async()', 'async for' or 'await dataset.for_each_async(f)' there"
    )


def drive_sync(coro: Coroutine[Any, Any, T], what: str) -> T:
    """Run a coroutine that never suspends (a chain of synchronous stages) to its result without a loop."""
    return drive_without_loop(coro, f"{what}: a stage suspended although the chain is synchronous (is_async is False)")


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    if loop.is_closed() or loop.is_running():
        return
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class LazyIterator(ABC, Generic[T]):
    """An iterator over a dataset's elements (see the module docstring)."""

    #: Whether the source is asynchronous (its ``next_async`` is the primary method).
    is_async: bool = False
    _closed: bool = False
    _loop: asyncio.AbstractEventLoop | None = None

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
        loop = self._loop
        if loop is not None:
            self._loop = None
            _close_loop(loop)

    def run_blocking(self, make: Callable[[], Awaitable[T]], what: str) -> Any:
        """Run ``make()`` to completion on this iterator's private event loop (made on first use, closed by
        ``close()`` or when the iterator is garbage); refuses inside a running loop as
        :func:`run_coroutine_blocking` does."""
        _check_no_running_loop(what)
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.new_event_loop()
            weakref.finalize(self, _close_loop, loop)
        return loop.run_until_complete(_await(make))

    # tfjs-data's LazyIterator transformations ------------------------------------------------------------
    def map(self, transform: Callable[[Any], Any]) -> LazyIterator[Any]:
        """Each element through ``transform``; input tensors absent from the output are disposed."""
        from .iterators import MapIterator

        return MapIterator(self, transform, tidy_transform=False)

    def map_async(self, transform: Callable[[Any], Any]) -> LazyIterator[Any]:
        """As :meth:`map` for a ``transform`` that may return an awaitable (a coroutine function)."""
        from .iterators import MapIterator

        return MapIterator(self, transform, tidy_transform=False, asynchronous=True)

    def filter(self, predicate: Callable[[Any], Any]) -> LazyIterator[T]:
        """The elements for which ``predicate`` is true; the others are disposed."""
        from .iterators import FilterIterator

        return FilterIterator(self, predicate)

    def take(self, count: int | float | None) -> LazyIterator[T]:
        """The first ``count`` elements (all when ``count`` is None or negative, as tfjs-data's iterator)."""
        from .iterators import TakeIterator

        return self if count is None or count < 0 else TakeIterator(self, count)

    def skip(self, count: int | float | None) -> LazyIterator[T]:
        """All but the first ``count`` elements, which are disposed (None or negative: skip none)."""
        from .iterators import SkipIterator

        return self if count is None or count < 0 else SkipIterator(self, count)

    def batch(self, batch_size: int, small_last_batch: bool = True) -> LazyIterator[Any]:
        """Elements stacked ``batch_size`` at a time (tfjs-data's ``columnMajorBatch`` with deep batching)."""
        from .iterators import BatchIterator

        return BatchIterator(self, batch_size, small_last_batch)

    def concatenate(self, other: LazyIterator[T]) -> LazyIterator[T]:
        """This iterator's elements, then ``other``'s."""
        from .iterators import ChainedIterator

        return ChainedIterator([self, other])

    def prefetch(self, buffer_size: int) -> LazyIterator[T]:
        """Elements read ahead by a background thread into a queue of ``buffer_size``."""
        from .buffered import PrefetchIterator

        return PrefetchIterator(self, buffer_size)

    def shuffle(self, window_size: int, seed: str | int | None = None) -> LazyIterator[T]:
        """Elements drawn at random from a window of ``window_size`` (tfjs-data's ``ShuffleIterator``)."""
        from .buffered import ShuffleIterator

        return ShuffleIterator(self, window_size, seed)

    def to_array(self) -> ArrayResult | Coroutine[Any, Any, ArrayResult]:
        """Every remaining element in a list; see :func:`ndflow.data.results.run_to_completion`."""
        from .results import run_to_completion, to_array_async

        return run_to_completion(self, to_array_async, "to_array")

    def for_each_async(self, f: Callable[[Any], Any]) -> Completed | Coroutine[Any, Any, Completed]:
        """Call ``f`` on every remaining element (awaiting it when it returns an awaitable); the element's
        tensors that ``f`` does not return are disposed."""
        from .results import for_each_async, run_to_completion

        return run_to_completion(self, lambda it: for_each_async(it, f), "for_each_async", f)

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
