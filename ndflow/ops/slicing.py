"""Selecting and joining: slice, strided_slice, gather, concat, stack, and ``Tensor.__getitem__``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from . import _indexing
from .convert import converted, converted_list, int_list, normalize_axis


def slice(x: TensorLike, begin: int | Sequence[int], size: int | Sequence[int] | None = None) -> Tensor:  # noqa: A001
    """The block starting at ``begin`` of extent ``size`` (-1: to the end of that axis)."""
    begin = int_list(begin, "slice", "begin", scalar_ok=True)
    size = None if size is None else int_list(size, "slice", "size", scalar_ok=True)
    with converted(x, "x", "slice") as t:
        rank = t.rank
        if size is None:
            size = [-1] * rank
        if len(begin) < rank:
            begin += [0] * (rank - len(begin))
        if len(size) < rank:
            size += [-1] * (rank - len(size))
        if len(begin) != rank or len(size) != rank:
            raise ValueError(f"slice: 'begin' {begin} and 'size' {size} must have length {rank} (the rank)")
        sizes = []
        for axis, (b, s, dim) in enumerate(zip(begin, size, t.shape, strict=True)):
            if s == -1:
                s = dim - b
            if b < 0 or s < 0 or b + s > dim:
                raise ValueError(
                    f"slice: begin {begin} and size {size} exceed the shape {list(t.shape)} on axis {axis}"
                )
            sizes.append(s)
        return ENGINE.run_kernel(kn.Slice, (t,), {"begin": tuple(begin), "size": tuple(sizes)})


def strided_slice(
    x: TensorLike,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> Tensor:
    """Strided slicing with TF's bit masks (what ``x[1:, ::2, None, ...]`` compiles to)."""
    attrs = {
        "begin": int_list(begin, "strided_slice", "begin"), "end": int_list(end, "strided_slice", "end"),
        "strides": int_list(strides, "strided_slice", "strides") if strides is not None else None,
        "begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
        "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask,
    }  # fmt: skip
    with converted(x, "x", "strided_slice") as t:
        return ENGINE.run_kernel(kn.StridedSlice, (t,), attrs)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` as numpy indexes: ints, slices (with steps), ``None`` and ``...`` (a strided slice), and one
    array index among them: a boolean mask (``x[x > 2]``) or integers (``x[[0, 2]]``, ``x[nf.tensor([0, 2])]``),
    done as a gather (ops/_indexing.py). Differentiable."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, Tensor) and k.rank == 0 and k.dtype == "int32" for k in key):
        key = tuple(int(k) if isinstance(k, Tensor) and k.rank == 0 and k.dtype == "int32" else k for k in key)
    if any(_indexing.is_array_index(k) for k in key):
        return _indexing.array_getitem(x, key, getitem)
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}
    for i, k in enumerate(key):
        bit = 1 << i
        if k is Ellipsis:
            if masks["ellipsis_mask"]:
                raise IndexError("getitem: an index can only have a single ellipsis ('...')")
            masks["ellipsis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif k is None:
            masks["new_axis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(k, int | np.integer) and not isinstance(k, bool):
            masks["shrink_axis_mask"] |= bit
            begin.append(int(k)), end.append(int(k) + 1), strides.append(1)
        elif isinstance(k, builtins.slice):
            step = 1 if k.step is None else _index_int(k.step)
            if step == 0:
                raise ValueError("getitem: slice step cannot be zero")
            begin.append(0 if k.start is None else _index_int(k.start))
            end.append(0 if k.stop is None else _index_int(k.stop))
            strides.append(step)
            if k.start is None:
                masks["begin_mask"] |= bit
            if k.stop is None:
                masks["end_mask"] |= bit
        else:
            raise TypeError(
                f"getitem: unsupported index {k!r:.60} ({type(k).__name__}); use ints, slices, None, ..., "
                "a boolean mask or an array of ints"
            )
    n_axes = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_axes > x.rank:
        raise IndexError(f"getitem: too many indices ({n_axes}) for a tensor of rank {x.rank}")
    return ENGINE.run_kernel(kn.StridedSlice, (x,), {"begin": begin, "end": end, "strides": strides, **masks})


def _index_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise TypeError(f"getitem: slice bounds must be ints or None, got {type(v).__name__}")
    return int(v)


def gather(x: TensorLike, indices: TensorLike, axis: int = 0, batch_dims: int = 0) -> Tensor:
    """Slices of ``x`` along ``axis`` at ``indices`` (int32); ``batch_dims`` leading dims are batches."""
    with converted(x, "x", "gather") as t, converted(indices, "indices", "gather", "int32") as idx:
        if idx.dtype != "int32":
            raise TypeError(f"gather: argument 'indices' must be int32, got {idx.dtype}")
        axis = normalize_axis(axis, t.rank, "gather")
        if batch_dims < 0:
            batch_dims += idx.rank
        if not 0 <= batch_dims <= min(idx.rank, axis):
            raise ValueError(
                f"gather: 'batch_dims' {batch_dims} must be in [0, min(indices rank {idx.rank}, axis {axis})]"
            )
        if t.shape[:batch_dims] != idx.shape[:batch_dims]:
            raise ValueError(
                f"gather: the first {batch_dims} dims of x {list(t.shape)} and indices {list(idx.shape)} must match"
            )
        return ENGINE.run_kernel(kn.GatherV2, (t, idx), {"axis": axis, "batch_dims": batch_dims})


def concat(tensors: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """Join tensors along an existing axis (all other dims must match; dtypes upcast)."""
    with converted_list(tensors, "tensors", "concat") as ts:
        rank = ts[0].rank
        if rank == 0:
            raise ValueError("concat: cannot concatenate scalars; use nf.stack")
        axis = normalize_axis(axis, rank, "concat")
        for i, t in enumerate(ts):
            if t.rank != rank:
                raise ValueError(f"concat: tensors[{i}] has rank {t.rank}, but tensors[0] has rank {rank}")
            for d in range(rank):
                if d != axis and t.shape[d] != ts[0].shape[d]:
                    raise ValueError(
                        f"concat: tensors[{i}] has shape {list(t.shape)}, which does not match "
                        f"tensors[0] {list(ts[0].shape)} outside axis {axis}"
                    )
        if len(ts) == 1:
            return ENGINE.run_kernel(kn.Identity, (ts[0],), None)
        return ENGINE.run_kernel(kn.Concat, tuple(ts), {"axis": axis})


def stack(tensors: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """Join tensors of one shape along a new axis."""
    with converted_list(tensors, "tensors", "stack", same_dtype=True) as ts:
        for i, t in enumerate(ts):
            if t.shape != ts[0].shape:
                raise ValueError(
                    f"stack: tensors[{i}] has shape {list(t.shape)}, but tensors[0] has {list(ts[0].shape)}"
                )
        axis = normalize_axis(axis, ts[0].rank + 1, "stack")
        return ENGINE.run_kernel(kn.Pack, tuple(ts), {"axis": axis})


__all__ = ["slice", "strided_slice", "gather", "concat", "stack"]

CHAINED = [slice, strided_slice, gather]  # also Tensor methods: x.slice(...)
