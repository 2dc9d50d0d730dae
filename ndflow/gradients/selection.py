"""Gradients of selecting by condition and index tuples: Select, GatherNd, ScatterNd, TensorScatterUpdate.

Beyond TF.js: GatherNd, ScatterNd and TensorScatterUpdate have gradients here (TF.js has none).
All three are linear in their float inputs: a gather's gradient is a scatter (duplicates sum)
and a scatter's is a gather. For TensorScatterUpdate only the update that won a position (the
last of duplicates) gets its gradient; the tensor gets dy with the updated positions zeroed.
"""

from __future__ import annotations

import math
from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import (
    cast,
    clone,
    equal,
    fill,
    gather_nd,
    logical_not,
    mul,
    reshape,
    scatter_nd,
    tensor_scatter_update,
    zeros,
)
from ..ops import range as arange
from ._util import unbroadcast


def _select(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    condition, a, b = saved
    return [
        None,  # a bool condition has no gradient
        lambda: unbroadcast(mul(dy, cast(condition, "float32")), a.shape),
        lambda: unbroadcast(mul(dy, cast(logical_not(condition), "float32")), b.shape),
    ]


def _layout(indices: Tensor, shape: tuple[int, ...]) -> tuple[int, int, list[int]]:
    """As the scatter kernels read ``indices``: (number of index tuples, their length, the
    shape of one update ``shape[slice_rank:]``); rank-1 indices are single coordinates."""
    slice_rank = indices.shape[-1] if indices.rank > 1 else 1
    count = math.prod(indices.shape[:-1]) if indices.rank > 1 else indices.size
    return count, slice_rank, list(shape[slice_rank:])


def _gather_nd(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, indices = saved

    def dx() -> Tensor:
        # gather_nd reads its last index axis as one tuple even for rank-1 indices.
        slice_rank = indices.shape[-1]
        count = math.prod(indices.shape[:-1])
        if count == 0 or x.size == 0:
            return zeros(x.shape)
        tuples = reshape(indices, [count, slice_rank])
        return scatter_nd(tuples, reshape(dy, [count, *x.shape[slice_rank:]]), list(x.shape))

    return [dx, None]


def _gathered(dy: Tensor, indices: Tensor, count: int, slice_rank: int, tail: list[int]) -> Tensor:
    """The slices of ``dy`` at each index tuple, as ``[count, *tail]``."""
    if count == 0 or dy.size == 0:
        return zeros([count, *tail])
    return gather_nd(dy, reshape(indices, [count, slice_rank]))


def _scatter_nd(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (indices,) = saved

    def dupdates() -> Tensor:
        count, slice_rank, tail = _layout(indices, dy.shape)
        batch = list(indices.shape[:-1] if indices.rank > 1 else indices.shape)
        return reshape(_gathered(dy, indices, count, slice_rank, tail), batch + tail)

    return [None, dupdates]


def _tensor_scatter_update(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (indices,) = saved
    count, slice_rank, tail = _layout(indices, dy.shape)
    batch = list(indices.shape[:-1] if indices.rank > 1 else indices.shape)

    def dtensor() -> Tensor:
        if count == 0 or dy.size == 0:
            return clone(dy)
        return tensor_scatter_update(dy, reshape(indices, [count, slice_rank]), zeros([count, *tail]))

    def dupdates() -> Tensor:
        g = _gathered(dy, indices, count, slice_rank, tail)
        if count > 1:
            # Which update won each position: scatter the update numbers, read them back.
            tuples = reshape(indices, [count, slice_rank])
            numbers = arange(0, count, 1, "int32")
            winners = tensor_scatter_update(fill(list(dy.shape[:slice_rank]), -1, "int32"), tuples, numbers)
            won = cast(equal(gather_nd(winners, tuples), numbers), "float32")
            g = mul(g, reshape(won, [count] + [1] * len(tail)))
        return reshape(g, batch + tail)

    return [dtensor, None, dupdates]


register_gradient(kn.Select, _select, save_all_inputs=True)
register_gradient(kn.GatherNd, _gather_nd, inputs_to_save=[0, 1])
register_gradient(kn.ScatterNd, _scatter_nd, inputs_to_save=[0])
register_gradient(kn.TensorScatterUpdate, _tensor_scatter_update, inputs_to_save=[1])
