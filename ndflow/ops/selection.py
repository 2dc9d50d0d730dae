"""Selecting by index, mask and condition: gather_nd, scatter_nd, tensor_scatter_update,
boolean_mask_async, where_async, setdiff1d_async, in_top_k_async, confusion_matrix.

The ``*_async`` ops are coroutines, as in TF.js: they read their inputs' values
(``await t.data()``) and build the result from them; await them (``await nf.where_async(c)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.globals import tidy
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import check_shape, converted
from .creation import range as arange
from .logical import equal
from .matrix import mat_mul
from .shape import cast, reshape
from .slicing import stack

# ----------------------------------------------------------------------------- shared checks


def _check_dtype(t: Tensor, arg: str, op: str, want: str) -> None:
    """TF.js's ``convertToTensor(..., parseAsDtype)``: a tensor of another dtype is rejected."""
    if want == "numeric":
        if t.dtype == "string":
            raise TypeError(f"{op}: argument '{arg}' must be a numeric tensor, got a string tensor")
    elif t.dtype != want:
        article = "an" if want == "int32" else "a"
        raise TypeError(f"{op}: argument '{arg}' must be {article} {want} tensor, got a {t.dtype} tensor")


def _int(value: Any, arg: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {value!r}")
    return int(value)


def _validate_scatter(op: str, updates: Tensor, indices: Tensor, shape: tuple[int, ...]) -> None:
    """TF.js's ``scatter_nd_util.validateInput``: updates.shape = indices.shape[:-1] + shape[slice_rank:]."""
    if indices.rank < 1:
        raise ValueError(f"{op}: 'indices' must have rank 1 or higher, got rank {indices.rank}")
    if updates.rank < 1:
        raise ValueError(f"{op}: 'updates' must have rank 1 or higher, got rank {updates.rank}")
    if len(shape) < 1:
        raise ValueError(f"{op}: the output rank must be at least 1, got shape {list(shape)}")
    slice_rank = indices.shape[-1] if indices.rank > 1 else 1
    batch_rank = indices.rank - 1 if indices.rank > 1 else 1
    if slice_rank > len(shape):
        raise ValueError(
            f"{op}: the innermost dimension of 'indices' ({slice_rank}) must be <= the output rank ({len(shape)})"
        )
    want = indices.shape[:batch_rank] + shape[slice_rank:]
    if updates.shape != want:
        raise ValueError(
            f"{op}: 'updates' must have shape indices.shape[:{batch_rank}] + shape[{slice_rank}:] = {list(want)}, "
            f"got updates.shape={list(updates.shape)} (indices.shape={list(indices.shape)}, shape={list(shape)})"
        )


# ----------------------------------------------------------------------------- gather / scatter


def gather_nd(x: TensorLike, indices: TensorLike) -> Tensor:
    """Slices of ``x`` at the index tuples in the last axis of ``indices`` (int32).

    The result has shape ``indices.shape[:-1] + x.shape[indices.shape[-1]:]``.
    """
    with converted(indices, "indices", "gather_nd", "int32") as idx, converted(x, "x", "gather_nd") as t:
        _check_dtype(idx, "indices", "gather_nd", "int32")
        if t.rank < 1:
            raise ValueError(f"gather_nd: argument 'x' must have rank 1 or higher, got rank {t.rank}")
        if idx.rank < 1:
            raise ValueError(f"gather_nd: argument 'indices' must have rank 1 or higher, got rank {idx.rank}")
        if idx.shape[-1] > t.rank:
            raise ValueError(
                f"gather_nd: the innermost dimension of 'indices' ({idx.shape[-1]}) must be <= the rank of x ({t.rank})"
            )
        if t.size == 0:
            raise ValueError(f"gather_nd: cannot gather from an empty tensor of shape {list(t.shape)}")
        return ENGINE.run_kernel(kn.GatherNd, (t, idx), None)


def scatter_nd(indices: TensorLike, updates: TensorLike, shape: Sequence[int]) -> Tensor:
    """A zero tensor of ``shape`` with ``updates`` added at ``indices`` (duplicates are summed)."""
    shape = check_shape(shape, "scatter_nd")
    with converted(indices, "indices", "scatter_nd", "int32") as idx, converted(updates, "updates", "scatter_nd") as u:
        _check_dtype(idx, "indices", "scatter_nd", "int32")
        _check_dtype(u, "updates", "scatter_nd", "numeric")
        _validate_scatter("scatter_nd", u, idx, shape)
        return ENGINE.run_kernel(kn.ScatterNd, (idx, u), {"shape": shape})


def tensor_scatter_update(tensor: TensorLike, indices: TensorLike, updates: TensorLike) -> Tensor:
    """A copy of ``tensor`` with ``updates`` written at ``indices`` (on duplicates the last one wins)."""
    op = "tensor_scatter_update"
    with (
        converted(tensor, "tensor", op) as t,
        converted(indices, "indices", op, "int32") as idx,
        converted(updates, "updates", op) as u,
    ):
        _check_dtype(t, "tensor", op, "numeric")
        _check_dtype(idx, "indices", op, "int32")
        _check_dtype(u, "updates", op, "numeric")
        _validate_scatter(op, u, idx, t.shape)
        if t.dtype != u.dtype:
            raise TypeError(f"{op}: 'tensor' and 'updates' must have one dtype, got {t.dtype} and {u.dtype}")
        return ENGINE.run_kernel(kn.TensorScatterUpdate, (t, idx, u), None)


# ----------------------------------------------------------------------------- async: masks and sets


async def where_async(condition: TensorLike) -> Tensor:
    """Coordinates (int32, shape ``[n, rank]``) of the true values of a bool tensor, in row-major order."""
    with converted(condition, "condition", "where_async", "bool") as c:
        _check_dtype(c, "condition", "where_async", "bool")
        values = (await c.data()).reshape(c.shape)
        coords = np.argwhere(values).astype(np.int32)
        return ENGINE.make_tensor(coords, coords.shape, "int32")


async def boolean_mask_async(tensor: TensorLike, mask: TensorLike, axis: int | None = None) -> Tensor:
    """The slices of ``tensor`` where the bool ``mask`` is true; ``mask`` covers dims ``axis..axis+mask.rank``."""
    op = "boolean_mask_async"
    with converted(tensor, "tensor", op) as t, converted(mask, "mask", op, "bool") as m:
        _check_dtype(t, "tensor", op, "numeric")
        _check_dtype(m, "mask", op, "bool")
        start = 0 if axis is None else _int(axis, "axis", op)
        if start < 0:  # ndflow counts a negative axis from the end, as Python does (TF.js fails)
            start += t.rank
        if m.rank == 0:
            raise ValueError(f"{op}: 'mask' cannot be a scalar")
        if start < 0 or t.shape[start : start + m.rank] != m.shape:
            raise ValueError(
                f"{op}: the shape of 'mask' {list(m.shape)} must match dims {start}..{start + m.rank - 1} of "
                f"'tensor' {list(t.shape)} (axis={axis})"
            )
        # As TF.js: the positions of the true values of the flattened mask, then those slices of the
        # tensor seen as [before, mask size, after]; gathered with (before, position) index pairs.
        positions = np.flatnonzero(await m.data())
        before = math.prod(t.shape[:start])
        pairs = np.stack(np.broadcast_arrays(np.arange(before)[:, None], positions[None, :]), axis=-1)
        pairs = pairs.astype(np.int32).reshape(before, positions.size, 2)
        temps = [reshape(t, [before, m.size, math.prod(t.shape[start + m.rank :])])]
        try:
            temps.append(ENGINE.make_tensor(pairs, pairs.shape, "int32"))
            temps.append(ENGINE.run_kernel(kn.GatherNd, tuple(temps), None))
            return reshape(temps[2], [*t.shape[:start], positions.size, *t.shape[start + m.rank :]])
        finally:
            ENGINE.dispose(temps)


async def setdiff1d_async(x: TensorLike, y: TensorLike) -> tuple[Tensor, Tensor]:
    """The values of 1-D ``x`` not in 1-D ``y``, in ``x``'s order, and their indices in ``x`` (int32)."""
    op = "setdiff1d_async"
    with converted(x, "x", op) as tx, converted(y, "y", op) as ty:
        _check_dtype(tx, "x", op, "numeric")
        _check_dtype(ty, "y", op, "numeric")
        if tx.dtype != ty.dtype:
            raise TypeError(f"{op}: 'x' and 'y' must have one dtype, got x {tx.dtype} and y {ty.dtype}")
        if tx.rank != 1:
            raise ValueError(f"{op}: 'x' must be 1-D, got shape {list(tx.shape)}")
        if ty.rank != 1:
            raise ValueError(f"{op}: 'y' must be 1-D, got shape {list(ty.shape)}")
        xs, ys = await tx.data(), await ty.data()
        found = np.isin(xs, ys)
        if xs.dtype.kind in "fc" and ys.size:  # a JS Set finds NaN in a set holding NaN
            found |= np.isnan(xs) & bool(np.isnan(ys).any())
        keep = np.flatnonzero(~found).astype(np.int32)
        values = xs[keep]
        return (
            ENGINE.make_tensor(values, values.shape, tx.dtype),
            ENGINE.make_tensor(keep, keep.shape, "int32"),
        )


async def in_top_k_async(predictions: TensorLike, targets: TensorLike, k: int = 1) -> Tensor:
    """Whether each target index is among the ``k`` largest predictions of its row (bool, targets' shape).

    Ties are ranked by index, the lower first, as TF.js's stable sort does.
    """
    op = "in_top_k_async"
    with converted(predictions, "predictions", op) as p, converted(targets, "targets", op) as tg:
        _check_dtype(p, "predictions", op, "numeric")
        _check_dtype(tg, "targets", op, "numeric")
        if p.dtype == "complex64" or tg.dtype == "complex64":
            raise TypeError(f"{op}: complex64 inputs are not supported")
        if p.rank < 2:
            raise ValueError(f"{op}: 'predictions' must have rank 2 or higher, got rank {p.rank}")
        if p.rank - 1 != tg.rank:
            raise ValueError(
                f"{op}: the rank of 'predictions' ({p.rank}) must be one more than the rank of 'targets' ({tg.rank})"
            )
        if p.shape[:-1] != tg.shape:
            raise ValueError(
                f"{op}: the shape of 'predictions' {list(p.shape)} must match the shape of 'targets' "
                f"{list(tg.shape)} except in the last dimension"
            )
        n = p.shape[-1]
        k = _int(k, "k", op)
        if not 0 < k <= n:
            raise ValueError(f"{op}: 'k' must be in [1, {n}] (the last dimension of predictions), got {k}")
        preds = (await p.data()).reshape(-1, n)
        tv = (await tg.data()).reshape(-1).astype(np.float64)
        valid = (tv >= 0) & (tv < n) & (tv == np.floor(tv))
        target = np.where(valid, tv, 0).astype(np.int64)
        value = np.take_along_axis(preds, target[:, None], axis=1)
        # The target's place in the order by value (descending) then index: those above it.
        ahead = (preds > value) | ((preds == value) & (np.arange(n) < target[:, None]))
        hit = valid & (ahead.sum(axis=1) < k)
        return ENGINE.make_tensor(hit.reshape(tg.shape), tg.shape, "bool")


# ----------------------------------------------------------------------------- composite


def confusion_matrix(labels: TensorLike, predictions: TensorLike, num_classes: int) -> Tensor:
    """Counts (int32, ``[num_classes, num_classes]``) of each (label, prediction) pair; labels in rows.

    Values are truncated to int32; pairs with a value outside ``[0, num_classes)`` are not counted.
    """
    op = "confusion_matrix"
    if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer) or num_classes <= 0:
        raise ValueError(f"{op}: 'num_classes' must be a positive integer, got {num_classes!r}")
    with converted(labels, "labels", op) as lt, converted(predictions, "predictions", op) as pt:
        _check_dtype(lt, "labels", op, "numeric")
        _check_dtype(pt, "predictions", op, "numeric")
        if lt.rank != 1:
            raise ValueError(f"{op}: 'labels' must be 1-D, got shape {list(lt.shape)}")
        if pt.rank != 1:
            raise ValueError(f"{op}: 'predictions' must be 1-D, got shape {list(pt.shape)}")
        if lt.shape[0] != pt.shape[0]:
            raise ValueError(
                f"{op}: 'labels' and 'predictions' must have as many examples, got {lt.shape[0]} and {pt.shape[0]}"
            )

        def compute() -> Tensor:
            classes = arange(0, int(num_classes), 1, "int32")

            def one_hot(t: Tensor) -> Tensor:  # TF.js: oneHot(cast(t, 'int32'), numClasses)
                column = stack([cast(t, "int32")], 1)  # [n, 1]
                return cast(equal(column, classes), "float32")

            return cast(mat_mul(one_hot(lt), one_hot(pt), True, False), "int32")

        return tidy(compute)


__all__ = [
    "gather_nd",
    "scatter_nd",
    "tensor_scatter_update",
    "where_async",
    "boolean_mask_async",
    "setdiff1d_async",
    "in_top_k_async",
    "confusion_matrix",
]
