"""The one-to-one and chaining iterators of ``nf.data``: map, filter, take, skip, batch, chain, zip, unbatch,
shard (tfjs-data's ``MapIterator``, ``FilterIterator``, ..., ``ZipIterator``; unbatch and shard are ndflow's).

Each stage writes its step once, as a coroutine (``_step``). A synchronous chain runs that coroutine without
an event loop (it never suspends); a chain with an asynchronous stage runs it on the iterator's private loop
(:meth:`LazyIterator.run_blocking`) when called from synchronous code. Disposal follows tfjs-data: a map frees
the input tensors its output does not hold, a batch frees the rows it stacked, filter/skip/shard free what
they drop. ``close()`` closes every upstream iterator.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core.globals import dispose, tidy
from ..core.tensor import Tensor
from ..ops import unstack
from .deep_map import check_element, deep_batch, deep_map, dispose_unless_in, refuse_awaitable
from .lazy_iterator import IteratorResult, LazyIterator, drive_sync

__all__ = [
    "BatchIterator",
    "ChainedIterator",
    "FilterIterator",
    "MapIterator",
    "ShardIterator",
    "SkipIterator",
    "Stage",
    "TakeIterator",
    "UnbatchIterator",
    "ZipIterator",
]

DONE: IteratorResult[Any] = IteratorResult(None, True)


class Stage(LazyIterator[Any]):
    """An iterator built on upstream iterators; subclasses implement ``_step`` (a coroutine)."""

    def __init__(self, upstreams: list[LazyIterator[Any]], asynchronous: bool = False) -> None:
        self._upstreams = upstreams
        self.is_async = asynchronous or any(u.is_async for u in upstreams)

    async def _step(self) -> IteratorResult[Any]:
        raise NotImplementedError

    def next(self) -> IteratorResult[Any]:
        if self._closed:
            return DONE
        if self.is_async:
            return self.run_blocking(self.next_async, self.summary())
        return drive_sync(self._step(), self.summary())

    async def next_async(self) -> IteratorResult[Any]:
        if self._closed:
            return DONE
        return await self._step()

    def _release(self) -> None:
        """Free what the stage holds itself (buffered elements)."""

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._release()
            for u in self._upstreams:
                u.close()
        finally:
            super().close()

    def summary(self) -> str:
        up = self._upstreams[0].summary() if self._upstreams else ""
        return f"{up} -> {type(self).__name__.removesuffix('Iterator')}"


class MapIterator(Stage):
    """``transform`` on each element (in a ``tidy`` when ``tidy_transform``); an awaitable result is awaited
    when ``asynchronous``."""

    def __init__(
        self,
        upstream: LazyIterator[Any],
        transform: Callable[[Any], Any],
        tidy_transform: bool = True,
        asynchronous: bool = False,
        what: str = "Dataset.map",
    ) -> None:
        super().__init__([upstream], asynchronous)
        self._transform = transform
        self._tidy = tidy_transform
        self._asynchronous = asynchronous
        self._what = what

    async def _step(self) -> IteratorResult[Any]:
        r = await self._upstreams[0].next_async()
        if r.done:
            return DONE
        value = r.value
        try:
            if self._asynchronous:
                out = self._transform(value)
                if inspect.isawaitable(out):
                    out = await out
            elif self._tidy:
                out = tidy(lambda: refuse_awaitable(self._transform(value), f"{self._what}: transform"))
            else:
                out = self._transform(value)
            check_element(out, f"{self._what}: transform")
        except BaseException:
            dispose(value)
            raise
        dispose_unless_in(value, out)
        return IteratorResult(out, False)


def _truth(keep: Any, what: str) -> bool:
    if isinstance(keep, Tensor):
        try:
            if keep.size != 1:
                raise ValueError(f"{what}: predicate returned a tensor of shape {keep.shape}; expected one value")
            return bool(keep.data_sync().reshape(-1)[0])
        finally:
            keep.dispose()
    if inspect.isawaitable(keep):
        if inspect.iscoroutine(keep):
            keep.close()
        raise TypeError(f"{what}: predicate returned an awaitable; filter takes a synchronous predicate")
    return bool(keep)


class FilterIterator(Stage):
    """The elements for which ``predicate`` (run in a ``tidy``) is true; rejected ones are disposed."""

    def __init__(self, upstream: LazyIterator[Any], predicate: Callable[[Any], Any]) -> None:
        super().__init__([upstream])
        self._predicate = predicate

    async def _step(self) -> IteratorResult[Any]:
        while True:
            r = await self._upstreams[0].next_async()
            if r.done:
                return r
            try:
                keep = _truth(tidy(lambda v=r.value: self._predicate(v)), "Dataset.filter")
            except BaseException:
                dispose(r.value)
                raise
            if keep:
                return r
            dispose(r.value)


class TakeIterator(Stage):
    """The first ``count`` elements."""

    def __init__(self, upstream: LazyIterator[Any], count: int | float) -> None:
        super().__init__([upstream])
        self._max = count
        self._count = 0

    async def _step(self) -> IteratorResult[Any]:
        if self._count >= self._max:
            return DONE
        self._count += 1
        return await self._upstreams[0].next_async()


class SkipIterator(Stage):
    """All but the first ``count`` elements (the skipped ones are disposed)."""

    def __init__(self, upstream: LazyIterator[Any], count: int | float) -> None:
        super().__init__([upstream])
        self._max = count
        self._count = 0

    async def _step(self) -> IteratorResult[Any]:
        up = self._upstreams[0]
        while self._count < self._max:
            self._count += 1
            skipped = await up.next_async()
            if skipped.done:
                return skipped
            dispose(skipped.value)
        return await up.next_async()


class ShardIterator(Stage):
    """Every ``num_shards``-th element from the ``index``-th (ndflow's ``shard``); the others are disposed."""

    def __init__(self, upstream: LazyIterator[Any], num_shards: int, index: int) -> None:
        super().__init__([upstream])
        self._num = num_shards
        self._skip_next = index

    async def _step(self) -> IteratorResult[Any]:
        up = self._upstreams[0]
        while self._skip_next > 0:
            self._skip_next -= 1
            r = await up.next_async()
            if r.done:
                return r
            dispose(r.value)
        self._skip_next = self._num - 1
        return await up.next_async()


class BatchIterator(Stage):
    """``batch_size`` elements at a time, stacked by :func:`~ndflow.data.deep_map.deep_batch`; the rows'
    tensors are disposed once stacked."""

    def __init__(self, upstream: LazyIterator[Any], batch_size: int, small_last_batch: bool = True) -> None:
        super().__init__([upstream])
        self._batch_size = batch_size
        self._small_last = small_last_batch

    async def _step(self) -> IteratorResult[Any]:
        rows: list[Any] = []
        up = self._upstreams[0]
        try:
            while len(rows) < self._batch_size:
                r = await up.next_async()
                if r.done:
                    if not (self._small_last and rows):
                        dispose(rows)
                        return DONE
                    break
                rows.append(r.value)
            value = deep_batch(rows)
        except BaseException:
            dispose(rows)
            raise
        dispose_unless_in(rows, value)
        return IteratorResult(value, False)


class ChainedIterator(Stage):
    """The elements of each iterator in turn; ``sources`` is a list or an iterator of iterators (each one is
    closed when exhausted)."""

    def __init__(self, sources: list[LazyIterator[Any]] | Iterator[LazyIterator[Any]], asynchronous: bool = False):
        pending = list(sources) if isinstance(sources, list) else []
        super().__init__(pending, asynchronous)
        self._sources: Iterator[LazyIterator[Any]] = iter(pending) if isinstance(sources, list) else sources
        self._current: LazyIterator[Any] | None = None

    async def _step(self) -> IteratorResult[Any]:
        while True:
            if self._current is None:
                self._current = next(self._sources, None)
                if self._current is None:
                    return DONE
            r = await self._current.next_async()
            if not r.done:
                return r
            self._current.close()
            self._current = None

    def _release(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None

    def summary(self) -> str:
        return "Chained"


def _leaves(structure: Any) -> list[Any]:
    out: list[Any] = []
    deep_map(structure, out.append)
    return out


def _rebuild(structure: Any, values: list[Any]) -> Any:
    it = iter(values)
    return deep_map(structure, lambda _: next(it))


class ZipIterator(Stage):
    """Elements of a nested structure (dict/list/tuple) of iterators, zipped into that structure; ends with the
    shortest. The values drawn from the longer iterators at the end are disposed."""

    def __init__(self, structure: Any) -> None:
        leaves = _leaves(structure)
        super().__init__(leaves)
        self._structure = structure
        self._finished = False

    async def _step(self) -> IteratorResult[Any]:
        if self._finished or not self._upstreams:
            return DONE
        results = [await u.next_async() for u in self._upstreams]
        if any(r.done for r in results):
            self._finished = True
            dispose([r.value for r in results if not r.done])
            return DONE
        return IteratorResult(_rebuild(self._structure, [r.value for r in results]), False)

    def summary(self) -> str:
        return "Zip"


def _split_leaf(x: Any, n: int | None) -> list[Any]:
    if isinstance(x, Tensor):
        if x.rank == 0:
            raise ValueError("Dataset.unbatch: an element holds a scalar tensor; nothing to unbatch")
        parts = list(unstack(x))
    elif isinstance(x, np.ndarray) and x.ndim > 0:
        parts = list(x)
    elif isinstance(x, list):
        parts = list(x)
    else:
        raise TypeError(f"Dataset.unbatch: cannot split a {type(x).__name__} along a batch axis")
    if n is not None and len(parts) != n:
        dispose(parts)
        raise ValueError(f"Dataset.unbatch: the parts of an element have different batch sizes ({n} and {len(parts)})")
    return parts


class UnbatchIterator(Stage):
    """Each batched element split along axis 0 into its rows (ndflow's ``unbatch``); the batch is disposed."""

    def __init__(self, upstream: LazyIterator[Any]) -> None:
        super().__init__([upstream])
        self._pending: list[Any] = []

    async def _step(self) -> IteratorResult[Any]:
        while not self._pending:
            r = await self._upstreams[0].next_async()
            if r.done:
                return DONE
            columns: list[list[Any]] = []
            try:
                leaves = _leaves(r.value)
                n: int | None = None
                for leaf in leaves:
                    columns.append(_split_leaf(leaf, n))
                    n = len(columns[-1])
                rows = [_rebuild(r.value, [c[i] for c in columns]) for i in range(n or 0)]
            except BaseException:
                dispose(r.value)
                dispose(columns)
                raise
            dispose(r.value)
            self._pending = rows[::-1]
        return IteratorResult(self._pending.pop(), False)

    def _release(self) -> None:
        dispose(self._pending)
        self._pending = []


def unbatched_size(size: int | float | None) -> int | float | None:
    """The size of an unbatched dataset: unknown, unless endless or empty."""
    if size == math.inf or size == 0:
        return size
    return None
