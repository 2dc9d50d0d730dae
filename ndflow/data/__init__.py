"""``nf.data``: TF.js's tf.data in Python idiom: lazy datasets (sync and async) and their sources."""

from __future__ import annotations

from .dataset import Dataset, dataset_from_iterator_fn
from .lazy_iterator import IteratorResult, LazyIterator

__all__ = ["Dataset", "IteratorResult", "LazyIterator", "dataset_from_iterator_fn"]
