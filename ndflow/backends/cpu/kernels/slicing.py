"""Selecting and joining: Slice, StridedSlice, GatherV2, Concat, Pack."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.replay_attrs import memoized
from ....core.slice_util import strided_slice_index
from ..backend import CPUBackend
from .common import Output, copied, cpu_kernel, out, values_of


@cpu_kernel(kn.Slice)
def slice_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index = tuple(slice(b, b + s) for b, s in zip(attrs["begin"], attrs["size"], strict=True))
    return out(backend, copied(values_of(backend, x)[index]), x.dtype)


@cpu_kernel(kn.StridedSlice)
def strided_slice(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index = memoized(attrs, lambda: strided_slice_index(x.shape, attrs))
    return out(backend, copied(values_of(backend, x)[index]), x.dtype)


@cpu_kernel(kn.GatherV2)
def gather_v2(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, indices = inputs
    axis, batch_dims = attrs["axis"], attrs["batch_dims"]
    values = values_of(backend, x)
    idx = values_of(backend, indices)
    dim = x.shape[axis]
    if idx.size and (idx.min() < 0 or idx.max() >= dim):
        bad = int(idx[(idx < 0) | (idx >= dim)].flat[0])
        raise IndexError(f"gather: index {bad} is not in [0, {dim - 1}] along axis {axis}")
    if batch_dims == 0:
        return out(backend, np.take(values, idx, axis=axis), x.dtype)
    # With batch dims, each batch gathers from its own slice: index with broadcast batch aranges.
    batch_shape = x.shape[:batch_dims]
    grids = np.indices(batch_shape, sparse=True)
    extra = idx.ndim - batch_dims
    lead = tuple(g.reshape(g.shape + (1,) * extra) for g in grids)
    middle = (slice(None),) * (axis - batch_dims)
    if middle:
        # Move the gathered axis next to the batch dims, gather, then restore the order.
        moved = np.moveaxis(values, axis, batch_dims)
        gathered = moved[lead + (idx,)]
        result = np.moveaxis(gathered, list(range(batch_dims, batch_dims + extra)), list(range(axis, axis + extra)))
    else:
        result = values[lead + (idx,)]
    return out(backend, result.copy(), x.dtype)


@cpu_kernel(kn.Concat)
def concat(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    arrays = [values_of(backend, t) for t in inputs]
    return out(backend, np.concatenate(arrays, axis=attrs["axis"]), inputs[0].dtype)


@cpu_kernel(kn.Pack)
def pack(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    arrays = [values_of(backend, t) for t in inputs]
    return out(backend, np.stack(arrays, axis=attrs["axis"]), inputs[0].dtype)
