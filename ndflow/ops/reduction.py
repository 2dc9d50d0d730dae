"""Reductions: sum, mean, max, min, arg_max."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import converted, normalize_axes, normalize_axis

Axis = int | Sequence[int] | None


def _reduce(kernel: str, op: str, x: Any, axis: Axis, keep_dims: bool) -> Tensor:
    with converted(x, "x", op) as t:
        if t.dtype == "string":
            raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
        axes = normalize_axes(axis, t.rank, op)
        return ENGINE.run_kernel(kernel, (t,), {"axis": axes, "keep_dims": bool(keep_dims)})


def sum(x: Any, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (all axes by default); bool sums as int32."""
    return _reduce("Sum", "sum", x, axis, keep_dims)


def mean(x: Any, axis: Axis = None, keep_dims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes by default), as float32."""
    return _reduce("Mean", "mean", x, axis, keep_dims)


def max(x: Any, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over ``axis`` (all axes by default)."""
    return _reduce("Max", "max", x, axis, keep_dims)


def min(x: Any, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over ``axis`` (all axes by default)."""
    return _reduce("Min", "min", x, axis, keep_dims)


def arg_max(x: Any, axis: int = 0) -> Tensor:
    """Index (int32) of the largest value along ``axis``; the first one on ties."""
    with converted(x, "x", "arg_max") as t:
        if t.dtype == "string":
            raise TypeError("arg_max: argument 'x' must be numeric, got a string tensor")
        return ENGINE.run_kernel("ArgMax", (t,), {"axis": normalize_axis(axis, t.rank, "arg_max")})


__all__ = ["sum", "mean", "max", "min", "arg_max"]

CHAINED = [sum, mean, max, min, arg_max]  # also Tensor methods: x.sum(...)
