"""Gathering and scattering by index tuples: GatherNd, ScatterNd, TensorScatterUpdate."""

from __future__ import annotations

import math

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _flat_indices(idx: np.ndarray, shape: tuple[int, ...], slice_rank: int, op: str) -> np.ndarray:
    """Row-major positions of the index tuples ``idx`` (``[n, slice_rank]``) among the slices of
    ``shape[:slice_rank]``; every coordinate must be within its dimension."""
    if slice_rank and idx.dtype.kind in "iu":
        try:  # numpy's checked row-major positions: 3-4x faster than the checks and product below
            return np.ravel_multi_index(idx.T, shape[:slice_rank])
        except ValueError:
            pass  # an index out of range (or a shape numpy refuses): the checks below name it
    dims = np.asarray(shape[:slice_rank], dtype=np.int64)
    bad = (idx < 0) | (idx >= dims)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise IndexError(f"{op}: index {idx[row].tolist()} does not index into shape {list(shape)}")
    strides = np.ones(slice_rank, dtype=np.int64)
    if slice_rank > 1:
        strides[:-1] = np.cumprod(dims[:0:-1])[::-1]
    return idx.astype(np.int64) @ strides if slice_rank else np.zeros(len(idx), dtype=np.int64)


def _scatter_layout(indices: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Index tuples as ``[num_updates, slice_rank]`` and the size of one slice (TF.js's calculateShapes)."""
    slice_rank = indices.shape[-1] if indices.ndim > 1 else 1
    num_updates = indices.size // slice_rank if slice_rank else math.prod(indices.shape[:-1])
    return indices.reshape(num_updates, slice_rank), math.prod(shape[slice_rank:])


@cpu_kernel("GatherNd")
def gather_nd(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    params, indices = inputs
    values = values_of(backend, params)
    idx = values_of(backend, indices)
    slice_rank = idx.shape[-1]
    batch_shape = idx.shape[:-1]
    tail = params.shape[slice_rank:]
    rows = _flat_indices(idx.reshape(math.prod(batch_shape), slice_rank), params.shape, slice_rank, "gather_nd")
    slices = values.reshape(math.prod(params.shape[:slice_rank]), math.prod(tail)).take(rows, axis=0)
    return out(backend, slices.reshape(batch_shape + tail), params.dtype)


@cpu_kernel("ScatterNd")
def scatter_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    indices, updates = inputs
    shape = tuple(attrs["shape"])
    idx, slice_size = _scatter_layout(values_of(backend, indices), shape)
    values = values_of(backend, updates)
    result = np.zeros(shape, dtype=values.dtype)
    if result.size == 0:
        return out(backend, result, updates.dtype)
    rows = _flat_indices(idx, shape, idx.shape[1], "scatter_nd")
    # Duplicates add up, applied in order (np.add.at is unbuffered); bool adds as logical or.
    np.add.at(result.reshape(-1, slice_size), rows, values.reshape(-1, slice_size))
    return out(backend, result, updates.dtype)


@cpu_kernel("TensorScatterUpdate")
def tensor_scatter_update(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    tensor, indices, updates = inputs
    idx, slice_size = _scatter_layout(values_of(backend, indices), tensor.shape)
    result = values_of(backend, tensor).copy()
    if result.size == 0:
        return out(backend, result, tensor.dtype)
    rows = _flat_indices(idx, tensor.shape, idx.shape[1], "tensor_scatter_update")
    # On duplicates the last update wins: keep each row's last occurrence.
    _, last_from_end = np.unique(rows[::-1], return_index=True)
    last = len(rows) - 1 - last_from_end
    values = values_of(backend, updates).reshape(-1, slice_size)
    result.reshape(-1, slice_size)[rows[last]] = values[last]
    return out(backend, result, tensor.dtype)
