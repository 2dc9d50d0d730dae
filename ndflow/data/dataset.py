"""``Dataset``: a lazy, re-iterable collection of elements (tfjs-data's ``Dataset``).

A dataset makes a fresh :class:`~ndflow.data.lazy_iterator.LazyIterator` on each ``iterator()`` call, so it
can be iterated again (each epoch of ``fit_dataset``). ``size`` is the number of elements when known, ``math.inf``
for an endless dataset, None when unknown. Subclasses implement ``iterator()`` and set ``size``.

The transformations (``batch``, ``shuffle``, ``map``, ...) return new datasets and propagate ``size`` as
tfjs-data does; they are in :mod:`ndflow.data.transforms` (mixed in here), the elements' disposal in
:mod:`ndflow.data.iterators`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .lazy_iterator import LazyIterator
from .transforms import Transforms

T = TypeVar("T")

__all__ = ["Dataset", "dataset_from_iterator_fn"]


class Dataset(Transforms, ABC, Generic[T]):
    """A lazy collection of elements (see the module docstring)."""

    #: Number of elements: an int when known, ``math.inf`` when endless, None when unknown.
    size: int | float | None = None

    @abstractmethod
    def iterator(self) -> LazyIterator[T]:
        """A fresh iterator over the elements (awaitable too: ``await ds.iterator()``)."""

    def __iter__(self) -> LazyIterator[T]:
        return self.iterator()

    def __aiter__(self) -> LazyIterator[T]:
        return self.iterator()

    def __len__(self) -> int:
        if self.size is None or self.size == math.inf:
            kind = "endless" if self.size == math.inf else "of unknown size"
            raise TypeError(f"len(): the dataset is {kind}; use .size")
        return int(self.size)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} size={self.size}>"


class _FunctionDataset(Dataset[T]):
    def __init__(self, make: Callable[[], LazyIterator[T]], size: int | float | None) -> None:
        self._make = make
        self.size = size

    def iterator(self) -> LazyIterator[T]:
        return self._make()


def dataset_from_iterator_fn(make: Callable[[], LazyIterator[T]], size: int | float | None = None) -> Dataset[T]:
    """A dataset whose ``iterator()`` calls ``make()`` (tfjs-data's ``datasetFromIteratorFn``)."""
    return _FunctionDataset(make, size)


def _check_size(size: Any) -> None:  # used by subclasses that take a size argument
    if size is not None and not (size == math.inf or (isinstance(size, int) and not isinstance(size, bool))):
        raise TypeError(f"Dataset size must be an int, math.inf or None, got {size!r}")
