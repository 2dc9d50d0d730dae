"""Counting and segment reductions: bincount, dense_bincount, unsorted_segment_sum."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted


def _count(name: str, value: Any, op: str) -> int:
    """A non-negative int attribute (``size``, ``num_segments``)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer | float):
        raise TypeError(f"{op}: argument '{name}' must be an int, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"{op}: argument '{name}' must be an int, got {value}")
    if value < 0:
        raise ValueError(f"{op}: argument '{name}' must be non-negative, got {value}")
    return int(value)


def _bincount_inputs(op: str, t: Tensor, w: Tensor) -> None:
    if t.dtype != "int32":
        raise TypeError(f"{op}: argument 'x' must be an int32 tensor, got {t.dtype}")
    if w.dtype in ("string", "complex64"):
        raise TypeError(f"{op}: argument 'weights' must be float32, int32 or bool, got {w.dtype}")
    if w.size not in (0, t.size):
        raise ValueError(
            f"{op}: argument 'weights' must have the size of 'x' ({t.size}) or be empty, "
            f"got shape {list(w.shape)} for x.shape={list(t.shape)}"
        )


def bincount(x: TensorLike, weights: TensorLike, size: int) -> Tensor:
    """Counts (or sums of ``weights``) of each value of int32 ``x`` in ``[0, size)``, in ``weights``' dtype."""
    size = _count("size", size, "bincount")
    with converted(x, "x", "bincount") as t, converted(weights, "weights", "bincount") as w:
        _bincount_inputs("bincount", t, w)
        return ENGINE.run_kernel(kn.Bincount, (t, w), {"size": size})


def dense_bincount(x: TensorLike, weights: TensorLike, size: int, binary_output: bool = False) -> Tensor:
    """``bincount`` of a rank-1 ``x``, or of each row of a rank-2 ``x``; ``binary_output`` marks presence (1)."""
    op = "dense_bincount"
    size = _count("size", size, op)
    with converted(x, "x", op) as t, converted(weights, "weights", op) as w:
        if t.rank not in (1, 2):
            raise ValueError(f"{op}: argument 'x' must have rank 1 or 2, got rank {t.rank}")
        _bincount_inputs(op, t, w)
        if t.rank == 2 and w.size and w.shape != t.shape:
            raise ValueError(
                f"{op}: argument 'weights' must have the shape of 'x' {list(t.shape)} or be empty, got {list(w.shape)}"
            )
        return ENGINE.run_kernel(kn.DenseBincount, (t, w), {"size": size, "binary_output": bool(binary_output)})


def unsorted_segment_sum(x: TensorLike, segment_ids: TensorLike, num_segments: int) -> Tensor:
    """Sums of the slices of ``x`` in each of ``num_segments`` segments; ids outside ``[0, num_segments)`` drop out.

    ``segment_ids`` (int32) labels the leading dimensions of ``x``; the result has shape
    ``[num_segments, *x.shape[segment_ids.rank:]]`` and dtype float32 (as TF.js's cpu backend).
    """
    op = "unsorted_segment_sum"
    num_segments = _count("num_segments", num_segments, op)
    with converted(x, "x", op) as t, converted(segment_ids, "segment_ids", op, "int32") as ids:
        if t.dtype == "string":
            raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
        if t.dtype == "complex64":
            raise TypeError(f"{op}: argument 'x' must be real, complex64 tensors are not supported")
        if ids.dtype != "int32":
            raise TypeError(f"{op}: argument 'segment_ids' must be an int32 tensor, got {ids.dtype}")
        if ids.rank == 0 or t.shape[: ids.rank] != ids.shape:
            raise ValueError(
                f"{op}: the shape of 'segment_ids' {list(ids.shape)} must be a non-empty prefix of "
                f"x.shape={list(t.shape)}"
            )
        return ENGINE.run_kernel(kn.UnsortedSegmentSum, (t, ids), {"num_segments": num_segments})


__all__ = ["bincount", "dense_bincount", "unsorted_segment_sum"]

CHAINED = [unsorted_segment_sum]  # also a Tensor method: x.unsorted_segment_sum(...)
