"""The methods every ``Dataset`` has (tfjs-data's ``Dataset`` methods), as a mixin of
:class:`~ndflow.data.dataset.Dataset`.

Each transformation returns a new dataset whose ``iterator()`` builds the matching iterator over a fresh
iterator of this one, and whose ``size`` follows tfjs-data's rules. ``unbatch`` and ``shard`` are ndflow
additions (TF.js 4.22 has neither).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..core.alea import Alea

if TYPE_CHECKING:
    from .dataset import Dataset
    from .lazy_iterator import LazyIterator
    from .results import ArrayResult, Completed

__all__ = ["Transforms"]


def _count(what: str, arg: str, value: Any, allow_inf: bool = True) -> int | float:
    if isinstance(value, bool) or not (
        isinstance(value, int) or (allow_inf and isinstance(value, float) and value == math.inf)
    ):
        raise TypeError(f"{what}: {arg} must be an int{' or math.inf' if allow_inf else ''}, got {value!r}")
    if value < 0:
        raise ValueError(f"{what}: {arg} must be >= 0, got {value}")
    return value


def _positive(what: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: {arg} must be a positive int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{what}: {arg} must be a positive int, got {value}")
    return value


def _function(what: str, arg: str, f: Any) -> None:
    if not callable(f):
        raise TypeError(f"{what}: {arg} must be a function, got {type(f).__name__}")


def _make(make: Callable[[], LazyIterator[Any]], size: int | float | None) -> Dataset[Any]:
    from .dataset import dataset_from_iterator_fn

    return dataset_from_iterator_fn(make, size)


class Transforms:
    """tfjs-data's ``Dataset`` methods (see the module docstring)."""

    #: tfjs-data's ``Dataset.MAX_BUFFER_SIZE`` (a hint, not enforced, as in TF.js).
    MAX_BUFFER_SIZE = 10000
    size: int | float | None

    def iterator(self) -> LazyIterator[Any]:  # implemented by Dataset subclasses
        raise NotImplementedError

    def batch(self, batch_size: int, small_last_batch: bool = True) -> Dataset[Any]:
        """Group ``batch_size`` elements into one (tensors stacked on a new axis 0; numbers, strings, lists and
        numpy arrays become tensors; dicts, tuples and lists of tensors are batched per entry). The last, smaller
        batch is kept unless ``small_last_batch`` is False."""
        _positive("Dataset.batch", "batch_size", batch_size)
        size = self.size
        if size is not None and size != math.inf:
            size = math.ceil(size / batch_size) if small_last_batch else size // batch_size
        return _make(lambda: self.iterator().batch(batch_size, small_last_batch), size)

    def concatenate(self, dataset: Dataset[Any]) -> Dataset[Any]:
        """This dataset's elements, then ``dataset``'s."""
        from .dataset import Dataset

        if not isinstance(dataset, Dataset):
            raise TypeError(f"Dataset.concatenate: dataset must be a Dataset, got {type(dataset).__name__}")
        if self.size == math.inf or dataset.size == math.inf:
            size: int | float | None = math.inf
        elif self.size is not None and dataset.size is not None:
            size = self.size + dataset.size
        else:
            size = None
        return _make(lambda: self.iterator().concatenate(dataset.iterator()), size)

    def filter(self, predicate: Callable[[Any], Any]) -> Dataset[Any]:
        """The elements for which ``predicate`` (run inside ``tidy``) is true; ``size`` becomes unknown."""
        _function("Dataset.filter", "predicate", predicate)
        if inspect.iscoroutinefunction(predicate):
            raise TypeError("Dataset.filter: predicate must be synchronous, got a coroutine function")
        return _make(lambda: self.iterator().filter(predicate), math.inf if self.size == math.inf else None)

    def map(self, transform: Callable[[Any], Any]) -> Dataset[Any]:
        """Each element through ``transform``, run inside ``tidy``; the element's tensors that the result does
        not hold are disposed."""
        from .iterators import MapIterator

        _function("Dataset.map", "transform", transform)
        if inspect.iscoroutinefunction(transform):
            raise TypeError("Dataset.map: transform is a coroutine function; use map_async for asynchronous transforms")
        return _make(lambda: MapIterator(self.iterator(), transform), self.size)

    def map_async(self, transform: Callable[[Any], Any]) -> Dataset[Any]:
        """As :meth:`map` for a ``transform`` returning an awaitable (a coroutine function); it is not run inside
        ``tidy``, so it disposes its own intermediate tensors (as in TF.js)."""
        from .iterators import MapIterator

        _function("Dataset.map_async", "transform", transform)
        return _make(
            lambda: MapIterator(self.iterator(), transform, False, asynchronous=True, what="Dataset.map_async"),
            self.size,
        )

    def prefetch(self, buffer_size: int) -> Dataset[Any]:
        """Elements read ahead by a background thread, at most ``buffer_size`` at a time."""
        if buffer_size is None:
            raise ValueError("Dataset.prefetch: buffer_size must be specified")
        _positive("Dataset.prefetch", "buffer_size", buffer_size)
        return _make(lambda: self.iterator().prefetch(buffer_size), self.size)

    def repeat(self, count: int | None = None) -> Dataset[Any]:
        """The dataset ``count`` times (endlessly when None or negative); each repetition is a fresh iterator."""
        from .iterators import ChainedIterator

        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise TypeError(f"Dataset.repeat: count must be an int or None, got {count!r}")
        if self.size is not None and count is not None and count > 0:
            size: int | float | None = self.size * count
        elif count == 0:
            size = 0
        elif self.size is not None:
            size = math.inf
        else:
            size = None

        def make() -> LazyIterator[Any]:
            if count == 0:
                return ChainedIterator([])
            first = self.iterator()

            def iterators() -> Any:
                yield first
                k = 1
                while count is None or count < 0 or k < count:
                    k += 1
                    yield self.iterator()

            return ChainedIterator(iterators(), asynchronous=first.is_async)

        return _make(make, size)

    def skip(self, count: int) -> Dataset[Any]:
        """All but the first ``count`` elements (the skipped ones are disposed)."""
        _count("Dataset.skip", "count", count)
        size = self.size
        if size is not None:
            size = size - count if size >= count else 0
        return _make(lambda: self.iterator().skip(count), size)

    def take(self, count: int) -> Dataset[Any]:
        """The first ``count`` elements."""
        _count("Dataset.take", "count", count)
        size = self.size
        if size is not None:
            size = min(size, count)
        return _make(lambda: self.iterator().take(count), size)

    def shuffle(
        self, buffer_size: int | None = None, seed: int | str | None = None, reshuffle_each_iteration: bool = True
    ) -> Dataset[Any]:
        """Elements in a random order, drawn from a window of ``buffer_size`` (the same order as TF.js for the
        same ``seed``). Each ``iterator()`` draws its own seed from a generator seeded with ``seed`` (as TF.js
        does; note that TF.js 4.22 draws a new one per iteration even when ``reshuffle_each_iteration`` is False,
        so ndflow does too). ``seed`` None (or 0, as in TF.js) seeds from the clock."""
        if buffer_size is None or (isinstance(buffer_size, int) and buffer_size < 0):
            hint = (
                ""
                if self.size is None
                else f"; if the data fits in memory, set buffer_size to the dataset size ({self.size} elements)"
            )
            raise ValueError(f"Dataset.shuffle: buffer_size must be specified{hint}")
        _positive("Dataset.shuffle", "buffer_size", buffer_size)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | str | float)):
            raise TypeError(f"Dataset.shuffle: seed must be an int or a str, got {seed!r}")
        from .buffered import time_seed

        random = Alea(seed if seed not in (None, 0, "") else time_seed())

        def make() -> LazyIterator[Any]:
            seed2 = random.int32()
            if reshuffle_each_iteration:
                seed2 += random.int32()
            return self.iterator().shuffle(buffer_size, str(seed2))

        return _make(make, self.size)

    def to_array(self) -> ArrayResult | Coroutine[Any, Any, ArrayResult]:
        """Every element in a list (awaitable; see :mod:`ndflow.data.results`)."""
        from .results import run_to_completion, to_array_async

        if self.size == math.inf:
            raise ValueError("Dataset.to_array: cannot convert an endless dataset to a list")
        return run_to_completion(self.iterator(), to_array_async, "Dataset.to_array", close=True)

    def for_each_async(self, f: Callable[[Any], Any]) -> Completed | Coroutine[Any, Any, Completed]:
        """Call ``f`` on every element (awaiting its result when awaitable); the element's tensors are disposed
        afterwards unless ``f`` returns them. A plain call runs to completion; the result is awaitable."""
        from .results import for_each_async, run_to_completion

        _function("Dataset.for_each_async", "f", f)
        return run_to_completion(
            self.iterator(), lambda it: for_each_async(it, f), "Dataset.for_each_async", f, close=True
        )

    def unbatch(self) -> Dataset[Any]:
        """Split each element along axis 0 into its rows (an ndflow addition; TF.js 4.22 has no unbatch). Every
        tensor (and list, numpy array) of an element must have the same leading size."""
        from .iterators import UnbatchIterator, unbatched_size

        return _make(lambda: UnbatchIterator(self.iterator()), unbatched_size(self.size))

    def shard(self, num_shards: int, index: int) -> Dataset[Any]:
        """Every ``num_shards``-th element, from the ``index``-th (an ndflow addition, as tf.data's ``shard``)."""
        from .iterators import ShardIterator

        _positive("Dataset.shard", "num_shards", num_shards)
        _count("Dataset.shard", "index", index, allow_inf=False)
        if index >= num_shards:
            raise ValueError(f"Dataset.shard: index must be < num_shards ({num_shards}), got {index}")
        size = self.size
        if size is not None and size != math.inf:
            size = max(0, math.ceil((size - index) / num_shards))
        return _make(lambda: ShardIterator(self.iterator(), num_shards, index), size)
