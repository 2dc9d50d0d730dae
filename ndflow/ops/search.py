"""Ordering and searching: topk, unique, search_sorted, lower_bound, upper_bound."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, normalize_axis
from .shape import reshape


class TopKResult(NamedTuple):
    """``topk``'s result: the ``k`` largest values and their indices (int32) along the last axis."""

    values: Tensor
    indices: Tensor


class UniqueResult(NamedTuple):
    """``unique``'s result: the distinct slices in order of first occurrence, and each input slice's
    position among them (int32)."""

    values: Tensor
    indices: Tensor


def _numeric(t: Tensor, arg: str, op: str, complex_ok: bool = False) -> None:
    if t.dtype == "string":
        raise TypeError(f"{op}: argument '{arg}' must be a numeric tensor, got a string tensor")
    if t.dtype == "complex64" and not complex_ok:
        raise TypeError(f"{op}: argument '{arg}' cannot be complex64")


def topk(x: TensorLike, k: int = 1, sorted: bool = True) -> TopKResult:
    """The ``k`` largest entries along the last axis, and their indices; ties go to the lower index.

    With ``sorted=False`` the entries keep the order they have in ``x`` (TF.js leaves it unspecified).
    NaN ranks above every number.
    """
    with converted(x, "x", "topk") as t:
        _numeric(t, "x", "topk")
        if t.rank == 0:
            raise ValueError("topk: argument 'x' must have rank 1 or higher, got a scalar")
        if isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise TypeError(f"topk: argument 'k' must be an int, got {k!r}")
        last = t.shape[-1]
        if not 0 <= k <= last:
            raise ValueError(f"topk: argument 'k' must be in [0, {last}] (the last dimension), got {k}")
        values, indices = ENGINE.run_kernel(kn.TopK, (t,), {"k": int(k), "sorted": bool(sorted)})
        return TopKResult(values, indices)


def unique(x: TensorLike, axis: int = 0) -> UniqueResult:
    """The distinct slices of ``x`` along ``axis`` in order of first occurrence, and for each slice of
    ``x`` the index of its value among them. NaN equals NaN and -0 equals 0, as in TF.js."""
    with converted(x, "x", "unique") as t:
        if t.dtype == "complex64":
            raise TypeError("unique: argument 'x' cannot be complex64")
        if t.rank == 0:
            raise ValueError("unique: argument 'x' must have rank 1 or higher, got a scalar")
        axis = normalize_axis(axis, t.rank, "unique")
        values, indices = ENGINE.run_kernel(kn.Unique, (t,), {"axis": axis})
        return UniqueResult(values, indices)


def _search_sorted(sorted_sequence: Any, values: Any, side: str, op: str) -> Tensor:
    if side not in ("left", "right"):
        raise ValueError(f"{op}: argument 'side' must be 'left' or 'right', got {side!r}")
    with converted(sorted_sequence, "sorted_sequence", op) as seq, converted(values, "values", op) as v:
        _numeric(seq, "sorted_sequence", op)
        _numeric(v, "values", op)
        if seq.rank == 0 or v.rank == 0:
            raise ValueError(
                f"{op}: 'sorted_sequence' and 'values' must have rank 1 or higher, "
                f"got shapes {list(seq.shape)} and {list(v.shape)}"
            )
        n, m = seq.shape[-1], v.shape[-1]
        if n == 0 or m == 0:
            raise ValueError(
                f"{op}: the last dimension of 'sorted_sequence' {list(seq.shape)} and 'values' {list(v.shape)} "
                "must not be empty"
            )
        rows = math.prod(seq.shape[:-1])
        if rows != math.prod(v.shape[:-1]):
            raise ValueError(
                f"{op}: the leading dimensions of 'sorted_sequence' {list(seq.shape)} and 'values' "
                f"{list(v.shape)} must hold as many rows"
            )
        seq2, v2 = reshape(seq, [rows, n]), reshape(v, [rows, m])
        try:
            found = ENGINE.run_kernel(kn.SearchSorted, (seq2, v2), {"side": side})
        finally:
            ENGINE.dispose([seq2, v2])
        if found.shape == v.shape:
            return found
        try:
            return reshape(found, list(v.shape))
        finally:
            found.dispose()


def search_sorted(sorted_sequence: TensorLike, values: TensorLike, side: str = "left") -> Tensor:
    """For each value, the index (int32) where it would be inserted into its row of the innermost axis
    of ``sorted_sequence`` to keep it sorted: before equal entries (``'left'``) or after them (``'right'``).

    The result has the shape of ``values``.
    """
    return _search_sorted(sorted_sequence, values, side, "search_sorted")


def lower_bound(sorted_sequence: TensorLike, values: TensorLike) -> Tensor:
    """``search_sorted(sorted_sequence, values, 'left')``: the first index whose entry is >= the value."""
    return _search_sorted(sorted_sequence, values, "left", "lower_bound")


def upper_bound(sorted_sequence: TensorLike, values: TensorLike) -> Tensor:
    """``search_sorted(sorted_sequence, values, 'right')``: the first index whose entry is > the value."""
    return _search_sorted(sorted_sequence, values, "right", "upper_bound")


__all__ = ["topk", "unique", "search_sorted", "lower_bound", "upper_bound"]

CHAINED = [topk, unique]  # also Tensor methods, as in TF.js's chain API: x.topk(2)
