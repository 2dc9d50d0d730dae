"""Scans: cumulative sum and product along an axis."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, normalize_axis


def _scan(kernel: str, op: str, x: Any, axis: int, exclusive: bool, reverse: bool) -> Tensor:
    with converted(x, "x", op) as t:
        if t.dtype == "string":
            raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
        if t.dtype == "complex64":
            raise TypeError(f"{op}: argument 'x' must be real, complex64 tensors are not supported")
        if t.rank == 0:
            raise ValueError(f"{op}: argument 'x' must have rank >= 1, got a scalar")
        attrs = {"axis": normalize_axis(axis, t.rank, op), "exclusive": bool(exclusive), "reverse": bool(reverse)}
        return ENGINE.run_kernel(kernel, (t,), attrs)


def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Running sum along ``axis``; ``exclusive`` leaves out each own value, ``reverse`` runs from the end."""
    return _scan(kn.Cumsum, "cumsum", x, axis, exclusive, reverse)


def cumprod(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Running product along ``axis``; ``exclusive`` leaves out each own value, ``reverse`` runs from the end."""
    return _scan(kn.Cumprod, "cumprod", x, axis, exclusive, reverse)


__all__ = ["cumsum", "cumprod"]

CHAINED = [cumsum, cumprod]  # also Tensor methods: x.cumsum(...)
