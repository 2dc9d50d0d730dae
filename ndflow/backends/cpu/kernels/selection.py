"""Gathering and scattering by index tuples: GatherNd, ScatterNd, TensorScatterUpdate."""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ...shared.indexing import flat_indices, scatter_layout
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.GatherNd)
def gather_nd(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    params, indices = inputs
    values = values_of(backend, params)
    idx = values_of(backend, indices)
    slice_rank = idx.shape[-1]
    batch_shape = idx.shape[:-1]
    tail = params.shape[slice_rank:]
    rows = flat_indices(idx.reshape(math.prod(batch_shape), slice_rank), params.shape, slice_rank, "gather_nd")
    slices = values.reshape(math.prod(params.shape[:slice_rank]), math.prod(tail)).take(rows, axis=0)
    return out(backend, slices.reshape(batch_shape + tail), params.dtype)


@cpu_kernel(kn.ScatterNd)
def scatter_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    indices, updates = inputs
    shape = tuple(attrs["shape"])
    idx, slice_size = scatter_layout(values_of(backend, indices), shape)
    values = values_of(backend, updates)
    result = np.zeros(shape, dtype=values.dtype)
    if result.size == 0:
        return out(backend, result, updates.dtype)
    rows = flat_indices(idx, shape, idx.shape[1], "scatter_nd")
    # Duplicates add up, applied in order (np.add.at is unbuffered); bool adds as logical or.
    np.add.at(result.reshape(-1, slice_size), rows, values.reshape(-1, slice_size))
    return out(backend, result, updates.dtype)


@cpu_kernel(kn.TensorScatterUpdate)
def tensor_scatter_update(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    tensor, indices, updates = inputs
    idx, slice_size = scatter_layout(values_of(backend, indices), tensor.shape)
    result = values_of(backend, tensor).copy()
    if result.size == 0:
        return out(backend, result, tensor.dtype)
    rows = flat_indices(idx, tensor.shape, idx.shape[1], "tensor_scatter_update")
    # On duplicates the last update wins: keep each row's last occurrence.
    _, last_from_end = np.unique(rows[::-1], return_index=True)
    last = len(rows) - 1 - last_from_end
    values = values_of(backend, updates).reshape(-1, slice_size)
    result.reshape(-1, slice_size)[rows[last]] = values[last]
    return out(backend, result, tensor.dtype)
