"""Nested-structure helpers of ``nf.data`` (tfjs-data's ``deep_map``/``deep_clone`` and batch concatenation).

An element is a *leaf* (a tensor, a number, a string, a numpy array, None, ...) or a *structure*: a dict, a
tuple, or a list. Lists follow TF.js's arrays: a list of numbers/strings/lists is a leaf that batching turns
into a tensor with one more dimension. A list holding a tensor or a dict (what ``zip([...])`` yields) is a
structure, as are dicts and tuples (Python's ``(xs, ys)`` pairs).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.awaitable import is_pending
from ..core.containers import walk_tensors
from ..core.globals import dispose
from ..core.tensor import Tensor
from ..ops import stack, tensor

__all__ = [
    "check_element",
    "deep_batch",
    "deep_clone",
    "deep_map",
    "dispose_unless_in",
    "is_structure",
    "refuse_awaitable",
    "tensor_ids",
]

_SCALARS = (bool, int, float, complex, str, bytes, np.generic)


def is_structure(obj: Any) -> bool:
    """Whether ``obj`` is recursed into (dict, tuple, or a list that holds a tensor or a dict)."""
    if isinstance(obj, dict | tuple):
        return True
    if isinstance(obj, list):
        return any(isinstance(x, Tensor | dict | tuple) for x in obj)
    return False


def deep_map(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to every leaf of ``obj``, the structure rebuilt (new dicts, lists and tuples)."""
    if isinstance(obj, dict):
        return {k: deep_map(v, fn) for k, v in obj.items()}
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(deep_map(v, fn) for v in obj)
    if isinstance(obj, tuple):  # a namedtuple keeps its type
        return type(obj)(*(deep_map(v, fn) for v in obj))
    if isinstance(obj, list):
        return [deep_map(v, fn) for v in obj]
    return fn(obj)


def _clone_leaf(x: Any) -> Any:
    return x.clone() if isinstance(x, Tensor) else x


def deep_clone(obj: Any) -> Any:
    """A copy of the structure with every tensor cloned (tfjs-data's ``deepClone``: what ``array`` yields)."""
    return deep_map(obj, _clone_leaf)


def tensor_ids(obj: Any) -> set[int]:
    """The ids of the tensors in ``obj``."""
    return {t.id for t in walk_tensors(obj)}


def dispose_unless_in(old: Any, new: Any) -> None:
    """Dispose the tensors of ``old`` that are not in ``new`` (tfjs-data's MapIterator rule)."""
    old_tensors = list(walk_tensors(old))
    if not old_tensors:
        return
    keep = tensor_ids(new)
    for t in old_tensors:
        if t.id not in keep:
            t.dispose()


_PLAIN_LEAVES = frozenset((int, float, str, bool, bytes, type(None)))


def check_element(value: Any, what: str) -> None:
    """Raise when ``value`` (what ``what`` produced) holds something a dataset cannot carry: an awaitable, a
    generator or iterator, or a function."""
    stack_: list[tuple[Any, str]] = [(value, "")]
    while stack_:
        item, where = stack_.pop()
        if type(item) in _PLAIN_LEAVES:
            continue
        if isinstance(item, dict):
            stack_.extend((v, f"{where}[{k!r}]") for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack_.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
        elif item is None or isinstance(item, (Tensor, np.ndarray, *_SCALARS)):
            continue
        elif inspect.isawaitable(item):
            if inspect.iscoroutine(item):
                item.close()
            raise TypeError(f"{what} returned an awaitable{_at(where)}; use map_async for asynchronous transforms")
        elif inspect.isgenerator(item) or inspect.isasyncgen(item) or hasattr(item, "__next__"):
            raise TypeError(f"{what} returned an iterator{_at(where)} ({type(item).__name__}); return a value")
        elif callable(item) and not hasattr(item, "__array__"):
            raise TypeError(f"{what} returned a function{_at(where)} ({type(item).__name__}); return a value")


def refuse_awaitable(value: Any, what: str) -> Any:
    """``value``, unless it is an awaitable (a transform that should have been given to ``map_async``)."""
    if is_pending(value):  # tensors await to themselves (core/awaitable.py): they are values here
        if inspect.iscoroutine(value):
            value.close()
        raise TypeError(f"{what} returned an awaitable; use map_async for asynchronous transforms")
    return value


def _at(where: str) -> str:
    return f" at element{where}" if where else ""


def _batch_leaf(rows: list[Any]) -> Tensor:
    if isinstance(rows[0], Tensor):
        if not all(isinstance(r, Tensor) for r in rows):
            raise TypeError("Dataset.batch: elements mix tensors and other values at the same place")
        return stack(rows)
    if any(isinstance(r, Tensor) for r in rows):
        raise TypeError("Dataset.batch: elements mix tensors and other values at the same place")
    if isinstance(rows[0], np.ndarray | np.generic):
        try:
            return tensor(np.stack([np.asarray(r) for r in rows]))
        except ValueError as e:
            raise ValueError(f"Dataset.batch: numpy arrays of different shapes in one batch ({e})") from None
    if all(isinstance(r, str) for r in rows):
        return tensor(rows, dtype="string")
    try:
        return tensor(rows)
    except Exception as e:  # noqa: BLE001 - re-raised with the method named
        raise ValueError(f"Dataset.batch: cannot make a tensor of the batched values {rows[:3]!r}...: {e}") from None


def deep_batch(rows: list[Any]) -> Any:
    """Stack a list of same-structure elements into one element of batched tensors (tfjs-data's
    ``deepBatchConcat``): tensors are stacked, numbers/strings/lists/numpy arrays become a tensor."""
    if not rows:
        raise ValueError("Dataset.batch: cannot make a batch of zero elements")
    first = rows[0]
    if isinstance(first, dict):
        for r in rows:
            if not isinstance(r, dict) or r.keys() != first.keys():
                raise ValueError(
                    f"Dataset.batch: elements differ in structure: keys {sorted(map(str, first))} and "
                    f"{sorted(map(str, r)) if isinstance(r, dict) else type(r).__name__}"
                )
        done: dict[Any, Any] = {}
        try:
            for k in first:
                done[k] = deep_batch([r[k] for r in rows])
        except BaseException:
            dispose(done)
            raise
        return done
    if is_structure(first):
        n = len(first)
        for r in rows:
            if not isinstance(r, list | tuple) or len(r) != n:
                raise ValueError(
                    f"Dataset.batch: elements differ in structure: {type(first).__name__} of {n} and {r!r}"
                )
        parts: list[Any] = []
        try:
            for i in range(n):
                parts.append(deep_batch([r[i] for r in rows]))
        except BaseException:
            dispose(parts)
            raise
        if isinstance(first, tuple) and hasattr(first, "_fields"):
            return type(first)(*parts)
        return type(first)(parts)
    return _batch_leaf(rows)
