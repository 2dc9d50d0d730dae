"""The in-memory sources of ``nf.data``: ``array``, ``generator``, ``zip`` (tfjs-data's) and ``from_numpy``
(ndflow's addition).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..ops import tensor
from .dataset import Dataset, dataset_from_iterator_fn
from .deep_map import deep_clone, deep_map
from .iterators import DONE, ZipIterator
from .lazy_iterator import IteratorResult, LazyIterator

__all__ = ["ArrayIterator", "GeneratorIterator", "array", "from_numpy", "generator", "zip"]


class ArrayIterator(LazyIterator[Any]):
    """The items of a list in order; each one a deep copy with its tensors cloned (as tfjs-data's)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self._index = 0

    def next(self) -> IteratorResult[Any]:
        if self._closed or self._index >= len(self._items):
            return DONE
        item = self._items[self._index]
        self._index += 1
        return IteratorResult(deep_clone(item), False)

    def summary(self) -> str:
        return f"Array of {len(self._items)} items"


def array(items: Any) -> Dataset[Any]:
    """A dataset of the items of a list (numbers, strings, dicts, tensors, numpy arrays, nested), as
    ``tf.data.array``. Tensors in the items stay the caller's: each element holds clones of them."""
    if isinstance(items, np.ndarray | Tensor):
        raise TypeError(
            f"nf.data.array: items must be a list, got a {type(items).__name__}; use nf.data.from_numpy(x) to "
            "slice an array along its first axis"
        )
    if isinstance(items, tuple):
        items = list(items)
    if not isinstance(items, list):
        raise TypeError(f"nf.data.array: items must be a list, got {type(items).__name__}")
    return dataset_from_iterator_fn(lambda: ArrayIterator(items), len(items))


def _with_note(e: BaseException) -> BaseException:
    if isinstance(e, Exception) and not getattr(e, "_ndflow_noted", False):
        e.add_note("(raised while iterating through a dataset: nf.data.generator's source)")
        e._ndflow_noted = True  # type: ignore[attr-defined]
    return e


class GeneratorIterator(LazyIterator[Any]):
    """The items of a Python iterator or async iterator (or of an awaitable resolving to one)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._it: Any = None
        self._async = False
        self._done = False
        if inspect.isawaitable(source):
            self.is_async = True
        else:
            self._resolve(source)

    def _resolve(self, source: Any) -> None:
        if hasattr(source, "__anext__"):
            self._it, self._async = source, True
        elif hasattr(source, "__aiter__"):
            self._it, self._async = source.__aiter__(), True
        elif hasattr(source, "__next__"):
            self._it = source
        elif hasattr(source, "__iter__") and not isinstance(source, str | bytes | Mapping):
            self._it = iter(source)
        else:
            raise TypeError(
                "nf.data.generator: the function must return an iterator, a generator, an async generator or an "
                f"iterable, got {type(source).__name__}"
            )
        self.is_async = self._async

    def next(self) -> IteratorResult[Any]:
        if self._closed or self._done:
            return DONE
        if self.is_async:
            return self.run_blocking(self.next_async, "nf.data.generator")
        try:
            value = next(self._it)
        except StopIteration:
            self._done = True
            return DONE
        except Exception as e:
            raise _with_note(e) from None
        return IteratorResult(value, False)

    async def next_async(self) -> IteratorResult[Any]:
        if self._closed or self._done:
            return DONE
        if self._it is None:
            self._resolve(await self._source)
        if not self._async:
            return self.next()
        try:
            value = await self._it.__anext__()
        except StopAsyncIteration:
            self._done = True
            return DONE
        except Exception as e:
            raise _with_note(e) from None
        return IteratorResult(value, False)

    def close(self) -> None:
        if self._closed:
            return
        it, self._it = self._it, None
        if it is None and inspect.iscoroutine(self._source):
            self._source.close()
        elif self._async and hasattr(it, "aclose"):
            try:
                self.run_blocking(it.aclose, "nf.data.generator close")
            except RuntimeError:
                pass  # inside a running loop: the loop finalizes the async generator
        elif hasattr(it, "close"):
            it.close()
        super().close()

    def summary(self) -> str:
        return "Generator"


def generator(source: Callable[[], Any] | Any) -> Dataset[Any]:
    """A dataset whose elements come from Python iteration, as ``tf.data.generator``.

    The rule: pass a *function* returning an iterator (a generator function, sync or async, or any function
    returning an iterator, an iterable, an async iterable, or an awaitable of one) and each ``iterator()`` call
    gets a fresh one: the dataset can be iterated again. A re-iterable object (a list, a ``range``, an object whose
    ``__iter__``/``__aiter__`` returns a new iterator) is also iterated afresh each time. A one-shot iterator (a
    generator *object*, a file) gives a dataset that can be iterated once; iterating it again raises.
    """
    if (
        inspect.isgenerator(source)
        or inspect.isasyncgen(source)
        or hasattr(source, "__next__")
        or (hasattr(source, "__anext__"))
    ):
        used = [False]

        def once() -> LazyIterator[Any]:
            if used[0]:
                raise ValueError(
                    "nf.data.generator: the source is a one-shot iterator and was iterated already; pass a function "
                    "that returns a fresh iterator (e.g. the generator function itself) to iterate again"
                )
            used[0] = True
            return GeneratorIterator(source)

        return dataset_from_iterator_fn(once)
    if hasattr(source, "__iter__") or hasattr(source, "__aiter__"):
        if isinstance(source, str | bytes | Mapping):
            raise TypeError(
                f"nf.data.generator: expected a function or an iterable of elements, got {type(source).__name__}"
            )
        return dataset_from_iterator_fn(lambda: GeneratorIterator(source))
    if not callable(source):
        raise TypeError(f"nf.data.generator: expected a function returning an iterator, got {type(source).__name__}")
    return dataset_from_iterator_fn(lambda: GeneratorIterator(source()))


def _zip_size(datasets: Any) -> int | float | None:
    sizes: list[Any] = []
    deep_map(datasets, lambda d: sizes.append(d.size))
    if not sizes:
        return 0
    if any(s is None for s in sizes):
        return None
    return min(sizes)


def zip(datasets: dict[str, Any] | list[Any] | tuple[Any, ...]) -> Dataset[Any]:  # noqa: A001 - TF.js's name
    """A dataset of a nested structure (dict/list/tuple) of datasets, as ``tf.data.zip``: each element has the
    structure with each dataset's element in its place; it ends with the shortest dataset. ``size`` is the
    smallest size, None when any is unknown (TF.js computes 0 or NaN there)."""
    if not isinstance(datasets, dict | list | tuple):
        raise TypeError(
            f"nf.data.zip: datasets must be a dict, list or tuple of datasets, got {type(datasets).__name__}"
        )

    def check(d: Any) -> Any:
        if not isinstance(d, Dataset):
            raise TypeError(f"nf.data.zip: leaves of datasets must be Datasets, got {type(d).__name__}: {d!r:.60}")
        return d

    deep_map(datasets, check)
    return dataset_from_iterator_fn(
        lambda: ZipIterator(deep_map(datasets, lambda d: d.iterator())), _zip_size(datasets)
    )


def _columns(name: str, x: Any) -> tuple[Any, int]:
    if isinstance(x, Mapping):
        if not x:
            raise ValueError(f"nf.data.from_numpy: {name} is an empty dict")
        cols = {k: _columns(f"{name}[{k!r}]", v)[0] for k, v in x.items()}
        lengths = {k: len(v) for k, v in cols.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"nf.data.from_numpy: the arrays of {name} differ in length along axis 0: {lengths}")
        return cols, next(iter(lengths.values()))
    if isinstance(x, Tensor):
        x = x.array_sync()
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"nf.data.from_numpy: {name} must have at least one axis to slice, got a scalar")
    if arr.dtype == object:
        raise TypeError(f"nf.data.from_numpy: {name} must be a numeric or string array, got dtype object")
    return arr, arr.shape[0]


def _row(cols: Any, i: int) -> Any:
    if isinstance(cols, dict):
        return {k: _row(v, i) for k, v in cols.items()}
    return tensor(cols[i])


def from_numpy(x: Any, y: Any = None) -> Dataset[Any]:
    """A dataset of the rows of ``x`` (sliced along axis 0) as tensors, or of ``{'xs': row of x, 'ys': row of
    y}`` when ``y`` is given (the element ``fit_dataset`` reads). ``x`` and ``y`` are arrays (numpy, nested
    lists, tensors) or dicts of them. An ndflow addition: TF.js builds this with ``tf.data.array`` or
    ``tf.data.zip``. The tensors are made per element as the dataset is iterated."""
    xs, n = _columns("x", x)
    ys = None
    if y is not None:
        ys, ny = _columns("y", y)
        if ny != n:
            raise ValueError(f"nf.data.from_numpy: x and y differ in length along axis 0: {n} and {ny}")

    def rows() -> Any:
        for i in range(n):
            yield _row(xs, i) if ys is None else {"xs": _row(xs, i), "ys": _row(ys, i)}

    return dataset_from_iterator_fn(lambda: GeneratorIterator(rows()), n)
