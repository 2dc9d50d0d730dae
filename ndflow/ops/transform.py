"""Joining, splitting, tiling and broadcasting: split, unstack, tile, reverse, broadcast_to, one_hot, ...

Padding and the space/batch/depth rearrangements live in ``spatial``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dtypes import check_dtype
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, dispose_temps, normalize_axis, to_tensor
from .slicing import concat
from .slicing import slice as _slice

# ----------------------------------------------------------------------------- private helpers


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _int_arg(value: Any, op: str, arg: str) -> int:
    if not _is_int(value):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {value!r}")
    return int(value)


def _int_list(value: Any, op: str, arg: str, min_value: int | None = None) -> list[int]:
    """A list of ints (``min_value`` and up, when given), or a clear error naming op and argument."""
    if isinstance(value, Tensor) or not isinstance(value, list | tuple | np.ndarray):
        raise TypeError(f"{op}: argument '{arg}' must be a list of ints, got {type(value).__name__}")
    items = list(value)
    if not all(_is_int(v) for v in items):
        raise TypeError(f"{op}: argument '{arg}' must hold ints, got {items}")
    items = [int(v) for v in items]
    if min_value is not None and any(v < min_value for v in items):
        raise ValueError(f"{op}: argument '{arg}' must hold ints >= {min_value}, got {items}")
    return items


def _pairs(value: Any, n: int, op: str, arg: str) -> list[tuple[int, int]]:
    """``n`` pairs of non-negative ints (paddings, crops)."""
    if isinstance(value, Tensor) or not isinstance(value, list | tuple):
        raise TypeError(f"{op}: argument '{arg}' must be a list of [before, after] pairs, got {type(value).__name__}")
    if len(value) != n:
        raise ValueError(f"{op}: argument '{arg}' must have {n} [before, after] pairs, got {len(value)}: {value}")
    pairs = []
    for p in value:
        if not isinstance(p, list | tuple) or len(p) != 2:
            raise ValueError(f"{op}: argument '{arg}' must hold pairs of length 2, got {p!r}")
        pairs.append(tuple(_int_list(p, op, arg, 0)))
    return pairs


def _numeric(t: Tensor, op: str, arg: str = "x") -> None:
    if t.dtype == "string":
        raise TypeError(f"{op}: argument '{arg}' must be a numeric tensor, got a string tensor")


def _check_rank(t: Tensor, rank: int, op: str) -> None:
    if t.rank != rank:
        raise ValueError(f"{op}: argument 'x' must be a rank-{rank} tensor, got rank {t.rank} (shape {list(t.shape)})")


@contextmanager
def _as_op(outer: str, inner: str) -> Iterator[None]:
    """Errors raised by op ``inner`` inside a thin wrapper carry the wrapper's name ``outer``."""
    try:
        yield
    except (ValueError, TypeError, IndexError) as exc:
        msg = str(exc)
        msg = outer + msg[len(inner) :] if msg.startswith(inner + ":") else f"{outer}: {msg}"
        raise type(exc)(msg) from None


# ----------------------------------------------------------------------------- splitting


def split(x: TensorLike, num_or_size_splits: int | Sequence[int], axis: int = 0) -> tuple[Tensor, ...]:
    """Split ``x`` along ``axis`` into equal parts (an int) or parts of the given sizes (one may be -1)."""
    with converted(x, "x", "split") as t:
        _numeric(t, "split")
        axis = normalize_axis(axis, t.rank, "split")
        dim = t.shape[axis]
        if _is_int(num_or_size_splits):
            n = int(num_or_size_splits)
            if n <= 0 or dim % n:
                raise ValueError(f"split: {n} splits must evenly divide the axis {axis} of size {dim}")
            sizes = [dim // n] * n
        else:
            sizes = _int_list(num_or_size_splits, "split", "num_or_size_splits", -1)
            if not sizes:
                raise ValueError("split: argument 'num_or_size_splits' must not be an empty list")
            if sizes.count(-1) > 1:
                raise ValueError(f"split: argument 'num_or_size_splits' {sizes} may hold only one -1")
            if -1 in sizes:
                rest = dim - sum(s for s in sizes if s > 0)
                if rest < 0:
                    raise ValueError(f"split: sizes {sizes} exceed the axis {axis} of size {dim}")
                sizes[sizes.index(-1)] = rest
            if sum(sizes) != dim:
                raise ValueError(f"split: sizes {sizes} must sum to the size {dim} of axis {axis}")
        return tuple(ENGINE.run_kernel(kn.SplitV, (t,), {"num_or_size_splits": tuple(sizes), "axis": axis}))


def unstack(x: TensorLike, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, each of rank ``x.rank - 1``."""
    with converted(x, "x", "unstack") as t:
        axis = normalize_axis(axis, t.rank, "unstack")
        return tuple(ENGINE.run_kernel(kn.Unpack, (t,), {"axis": axis}))


# ----------------------------------------------------------------------------- tiling, reversing


def tile(x: TensorLike, reps: Sequence[int]) -> Tensor:
    """``x`` repeated ``reps[i]`` times along each axis ``i``."""
    with converted(x, "x", "tile") as t:
        reps = _int_list(reps, "tile", "reps", 0)
        if len(reps) != t.rank:
            raise ValueError(f"tile: argument 'reps' {reps} must have length {t.rank} (the rank of x)")
        return ENGINE.run_kernel(kn.Tile, (t,), {"reps": tuple(reps)})


def _reverse(x: Any, axis: int | Sequence[int] | None, op: str, rank: int | None = None) -> Tensor:
    with converted(x, "x", op) as t:
        _numeric(t, op)
        if rank is not None:
            _check_rank(t, rank, op)
        if axis is None:
            dims = tuple(range(t.rank))
        else:
            items = [axis] if _is_int(axis) else axis
            if isinstance(items, Tensor) or not isinstance(items, list | tuple):
                raise TypeError(f"{op}: argument 'axis' must be an int or a list of ints, got {type(axis).__name__}")
            dims = tuple(normalize_axis(a, t.rank, op) for a in items)
            if len(set(dims)) != len(dims):
                raise ValueError(f"{op}: argument 'axis' {list(items)} names an axis twice")
        return ENGINE.run_kernel(kn.Reverse, (t,), {"dims": dims})


def reverse(x: TensorLike, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` with the order of elements reversed along ``axis`` (all axes by default)."""
    return _reverse(x, axis, "reverse")


def reverse1d(x: TensorLike) -> Tensor:
    """Reverse a rank-1 tensor."""
    return _reverse(x, 0, "reverse1d", 1)


def reverse2d(x: TensorLike, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse a rank-2 tensor along ``axis`` (both by default)."""
    return _reverse(x, axis, "reverse2d", 2)


def reverse3d(x: TensorLike, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse a rank-3 tensor along ``axis`` (all by default)."""
    return _reverse(x, axis, "reverse3d", 3)


def reverse4d(x: TensorLike, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse a rank-4 tensor along ``axis`` (all by default)."""
    return _reverse(x, axis, "reverse4d", 4)


# ----------------------------------------------------------------------------- broadcasting


def broadcast_to(x: TensorLike, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape`` (numpy rules: size-1 dims stretch, missing leading dims are added)."""
    shape = tuple(_int_list(shape, "broadcast_to", "shape", 0))
    with converted(x, "x", "broadcast_to") as t:
        _numeric(t, "broadcast_to")
        if len(shape) < t.rank:
            raise ValueError(f"broadcast_to: shape {list(shape)} has fewer dims than x (rank {t.rank})")
        padded = (1,) * (len(shape) - t.rank) + t.shape
        if any(a != b and a != 1 for a, b in zip(padded, shape, strict=True)):
            raise ValueError(f"broadcast_to: x of shape {list(t.shape)} cannot be broadcast to {list(shape)}")
        if padded == shape:  # nothing to stretch: a new tensor sharing the data, as TF.js's clone
            return ENGINE.run_kernel(kn.Reshape, (t,), {"shape": shape})
        return ENGINE.run_kernel(kn.BroadcastTo, (t,), {"shape": shape, "input_shape": t.shape})


def broadcast_args(s0: TensorLike, s1: TensorLike) -> Tensor:
    """The broadcast of two shapes given as int32 vectors (an int32 vector)."""
    with converted(s0, "s0", "broadcast_args", "int32") as a, converted(s1, "s1", "broadcast_args", "int32") as b:
        for name, t in (("s0", a), ("s1", b)):
            if t.dtype != "int32":
                raise TypeError(f"broadcast_args: argument '{name}' must be an int32 tensor, got {t.dtype}")
            if t.rank != 1:
                raise ValueError(f"broadcast_args: argument '{name}' must be a vector (rank 1), got rank {t.rank}")
        return ENGINE.run_kernel(kn.BroadcastArgs, (a, b), None)


def meshgrid(x: TensorLike | None = None, y: TensorLike | None = None, *, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from two vectors: ``indexing='xy'`` (Cartesian, [len(y), len(x)]) or 'ij' (matrix)."""
    if indexing not in ("xy", "ij"):
        raise TypeError(f"meshgrid: argument 'indexing' must be 'xy' or 'ij', got {indexing!r}")
    if x is None:
        return ()
    tx = to_tensor(x, "x", "meshgrid", None if isinstance(x, Tensor) else "float32")
    if y is None:
        return (tx,)
    temps = [] if tx is x else [tx]
    try:
        ty = to_tensor(y, "y", "meshgrid", None if isinstance(y, Tensor) else "float32")
        if ty is not y:
            temps.append(ty)
        _numeric(tx, "meshgrid", "x")
        _numeric(ty, "meshgrid", "y")
        w, h = tx.size, ty.size
        # 'xy': x varies along columns, y along rows; 'ij' the transpose.
        x_shape, y_shape, out = ((1, w), (h, 1), (h, w)) if indexing == "xy" else ((w, 1), (1, h), (w, h))
        grids = []
        for t, shape in ((tx, x_shape), (ty, y_shape)):
            r = ENGINE.run_kernel(kn.Reshape, (t,), {"shape": shape})
            temps.append(r)
            grids.append(ENGINE.run_kernel(kn.BroadcastTo, (r,), {"shape": out, "input_shape": shape}))
        return tuple(grids)
    finally:
        dispose_temps(temps)


# ----------------------------------------------------------------------------- one-hot


def one_hot(indices: TensorLike, depth: int, on_value: float = 1, off_value: float = 0, dtype: str = "int32") -> Tensor:
    """A ``depth``-long one-hot vector for each int32 index (``on_value`` at the index, else ``off_value``)."""
    depth = _int_arg(depth, "one_hot", "depth")
    if depth < 2:
        raise ValueError(f"one_hot: argument 'depth' must be >= 2, got {depth}")
    dtype = check_dtype(dtype, "one_hot")
    if dtype not in ("float32", "int32", "bool"):
        raise TypeError(f"one_hot: argument 'dtype' must be float32, int32 or bool, got {dtype!r}")
    values = {}
    for name, v in (("on_value", on_value), ("off_value", off_value)):
        if not isinstance(v, int | float | np.integer | np.floating):
            raise TypeError(f"one_hot: argument '{name}' must be a number, got {type(v).__name__}")
        values[name] = float(v)
    with converted(indices, "indices", "one_hot", "int32") as idx:
        if idx.dtype != "int32":
            raise TypeError(f"one_hot: argument 'indices' must be an int32 tensor, got {idx.dtype}")
        attrs = {"depth": depth, "on_value": values["on_value"], "off_value": values["off_value"], "dtype": dtype}
        return ENGINE.run_kernel(kn.OneHot, (idx,), attrs)


# ----------------------------------------------------------------------------- rank-specific wrappers


def concat1d(tensors: Sequence[TensorLike]) -> Tensor:
    """``concat(tensors, 0)`` (TF.js's rank-1 spelling)."""
    with _as_op("concat1d", "concat"):
        return concat(tensors, 0)


def concat2d(tensors: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """``concat(tensors, axis)`` (TF.js's rank-2 spelling)."""
    with _as_op("concat2d", "concat"):
        return concat(tensors, axis)


def concat3d(tensors: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """``concat(tensors, axis)`` (TF.js's rank-3 spelling)."""
    with _as_op("concat3d", "concat"):
        return concat(tensors, axis)


def concat4d(tensors: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """``concat(tensors, axis)`` (TF.js's rank-4 spelling)."""
    with _as_op("concat4d", "concat"):
        return concat(tensors, axis)


def _slice_nd(x: Any, begin: Any, size: Any, rank: int) -> Tensor:
    op = f"slice{rank}d"
    with converted(x, "x", op) as t:
        _numeric(t, op)  # TF.js's slice1d..4d take numeric tensors only (slice itself takes strings)
        _check_rank(t, rank, op)
        with _as_op(op, "slice"):
            return _slice(t, begin, size)


def slice1d(x: TensorLike, begin: int, size: int) -> Tensor:
    """``slice`` of a rank-1 tensor: ``size`` elements from ``begin`` (-1: to the end)."""
    return _slice_nd(x, [begin], [size], 1)


def slice2d(x: TensorLike, begin: Sequence[int], size: Sequence[int]) -> Tensor:
    """``slice`` of a rank-2 tensor."""
    return _slice_nd(x, begin, size, 2)


def slice3d(x: TensorLike, begin: Sequence[int], size: Sequence[int]) -> Tensor:
    """``slice`` of a rank-3 tensor."""
    return _slice_nd(x, begin, size, 3)


def slice4d(x: TensorLike, begin: Sequence[int], size: Sequence[int]) -> Tensor:
    """``slice`` of a rank-4 tensor."""
    return _slice_nd(x, begin, size, 4)


def ensure_shape(x: TensorLike, shape: Sequence[int | None]) -> Tensor:
    """``x`` itself if its shape matches ``shape`` (``None`` matches any size), else a ValueError."""
    if isinstance(shape, Tensor) or not isinstance(shape, list | tuple):
        raise TypeError(f"ensure_shape: argument 'shape' must be a list of ints or None, got {type(shape).__name__}")
    if not all(d is None or _is_int(d) for d in shape):
        raise TypeError(f"ensure_shape: argument 'shape' must hold ints or None, got {list(shape)}")
    t = to_tensor(x, "x", "ensure_shape")
    if len(shape) != t.rank or any(d is not None and d != s for d, s in zip(shape, t.shape, strict=True)):
        if t is not x:
            t.dispose()
        raise ValueError(
            f"ensure_shape: the shape of the tensor {list(t.shape)} is not compatible with the expected shape "
            f"{list(shape)}"
        )
    return t


__all__ = [
    "split", "unstack", "tile", "reverse", "reverse1d", "reverse2d", "reverse3d", "reverse4d",
    "broadcast_to", "broadcast_args", "meshgrid", "one_hot",
    "concat1d", "concat2d", "concat3d", "concat4d", "slice1d", "slice2d", "slice3d", "slice4d", "ensure_shape",
]  # fmt: skip

CHAINED = [split, unstack, tile, reverse, broadcast_to, one_hot]  # also Tensor methods: x.tile(...)
