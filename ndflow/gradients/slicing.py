"""Gradients of selecting and joining: Slice, StridedSlice, GatherV2, Concat, Pack.

Beyond TF.js: ``StridedSlice`` (what ``x[1:, ::2]`` runs) has a gradient here (TF.js has none):
``dy`` is scattered back into zeros at the positions the slice selected. ``GatherV2`` handles any
``batch_dims`` (TF.js only 0 and 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.slice_util import strided_slice_index
from ..core.tensor import Tensor
from ..ops import add, pad, reshape, scatter_nd, slice, tensor, transpose, unsorted_segment_sum, zeros
from ..ops import range as arange


def _slice(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    paddings = [[b, d - b - s] for b, s, d in zip(attrs["begin"], attrs["size"], x.shape, strict=True)]
    return [lambda: pad(dy, paddings)]


def _strided_slice(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    shape = x.shape

    def dx() -> Tensor:
        size = math.prod(shape)
        # Which flat positions of x the slice selected, from the shape and attrs only.
        positions = np.asarray(np.arange(size, dtype=np.int32).reshape(shape)[strided_slice_index(shape, attrs)])
        positions = positions.reshape(-1, 1)
        if positions.shape[0] == 0:
            return zeros(shape)
        flat = scatter_nd(tensor(positions, list(positions.shape), "int32"), reshape(dy, [positions.shape[0]]), [size])
        return reshape(flat, list(shape))

    return [dx]


def _gather(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy's slices are summed back into the rows of x they came from (per batch with batch_dims)."""
    x, indices = saved
    axis, batch_dims = attrs["axis"], attrs["batch_dims"]

    def dx() -> Tensor:
        shape = x.shape
        if dy.size == 0 or x.size == 0:
            return zeros(shape)
        batch = math.prod(shape[:batch_dims])
        outer = math.prod(shape[batch_dims:axis])
        n, inner = shape[axis], math.prod(shape[axis + 1 :])
        per_batch = math.prod(indices.shape[batch_dims:])
        # dy is [batch, outer, gathered, inner]: bring the gathered rows to the front, then sum by row.
        g = transpose(reshape(dy, [batch, outer, per_batch, inner]), [0, 2, 1, 3])
        g = reshape(g, [batch * per_batch, outer, inner])
        ids = reshape(indices, [batch, per_batch])
        if batch > 1:  # each batch sums into its own block of rows
            ids = add(ids, reshape(arange(0, batch * n, n, "int32"), [batch, 1]))
        summed = unsorted_segment_sum(g, reshape(ids, [batch * per_batch]), batch * n)
        summed = transpose(reshape(summed, [batch, n, outer, inner]), [0, 2, 1, 3])
        return reshape(summed, list(shape))

    return [dx, None]


def _concat(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    axis = attrs["axis"]
    thunks = []
    start = 0
    for t in saved:
        begin = [0] * dy.rank
        begin[axis] = start
        size = list(dy.shape)
        size[axis] = t.shape[axis]
        thunks.append(lambda begin=begin, size=size: slice(dy, begin, size))
        start += t.shape[axis]
    return thunks


def _pack(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    axis = attrs["axis"]
    shape = list(dy.shape[:axis] + dy.shape[axis + 1 :])
    thunks = []
    for i in range(dy.shape[axis]):
        begin = [0] * dy.rank
        begin[axis] = i
        size = list(dy.shape)
        size[axis] = 1
        thunks.append(lambda begin=begin, size=size: reshape(slice(dy, begin, size), shape))
    return thunks


register_gradient(kn.Slice, _slice, inputs_to_save=[0])
register_gradient(kn.StridedSlice, _strided_slice, inputs_to_save=[0])
register_gradient(kn.GatherV2, _gather, inputs_to_save=[0, 1])
register_gradient(kn.Concat, _concat, save_all_inputs=True)
register_gradient(kn.Pack, _pack)
