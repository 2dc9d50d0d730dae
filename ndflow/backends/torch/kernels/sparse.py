"""Sparse tensors: SparseToDense, SparseSegmentSum, SparseSegmentMean on the device;
SparseFillEmptyRows and SparseReshape on the host (cpu kernels).

A sparse tensor is given, as in TF.js, by ``indices`` (one row of coordinates per value), its
``values`` and its dense shape. The index inputs are checked on the host (they decide errors and
output shapes); the values are gathered and scattered on the device. SparseFillEmptyRows and
SparseReshape work on index arithmetic only, with value-dependent output shapes: as in TF.js's
GPU backends, the CPU implementation runs them.
"""

from __future__ import annotations

import numpy as np
import torch

from ....core import kernel_names as kn
from ...shared.indexing import first_bad, last_updates, sparse_update_coordinates
from ..backend import TorchBackend
from .common import Output, from_numpy, host, host_kernel, out, scalar, torch_dtype, torch_kernel, values_of


@torch_kernel(kn.SparseToDense, strings=True)
def sparse_to_dense(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Scatter ``values`` into a tensor of ``output_shape`` filled with ``default_value``; the last
    of duplicate indices wins."""
    indices_t, values_t, default_t = inputs
    shape = tuple(attrs["output_shape"])
    dtype = values_t.dtype
    idx = sparse_update_coordinates(host(backend, indices_t), shape, "sparse_to_dense")
    num_updates = len(idx)
    result = torch.full(shape, scalar(backend, default_t), dtype=torch_dtype(dtype), device=backend.device)
    if num_updates == 0 or result.numel() == 0:
        return out(backend, result, dtype, shape)
    values = values_of(backend, values_t).reshape(-1).expand(num_updates)
    flat, keep = last_updates(idx, shape)
    keep = from_numpy(backend, keep)
    result.view(-1)[from_numpy(backend, flat)[keep]] = values[keep]
    return out(backend, result, dtype, shape)


def _segment_reduce(backend: TorchBackend, inputs: tuple, op: str, mean: bool) -> Output:
    data_t, indices_t, segment_ids_t = inputs
    indices = host(backend, indices_t).astype(np.int64).reshape(-1)
    segments = host(backend, segment_ids_t).astype(np.int64).reshape(-1)
    n = indices.shape[0]
    dtype = data_t.dtype
    rest = tuple(data_t.shape[1:])
    if n == 0:
        shape = (0, *rest)
        return out(backend, torch.zeros(shape, dtype=torch_dtype(dtype), device=backend.device), dtype, shape)
    num_rows = int(segments[-1]) + 1
    if num_rows <= 0 or segments[0] < 0:
        raise ValueError(f"{op}: segment ids must be >= 0, got {segments.tolist()}")
    if (np.diff(segments) < 0).any():
        raise ValueError(f"{op}: segment ids must be sorted (non-decreasing), got {segments.tolist()}")
    rows = data_t.shape[0]
    if indices.min() < 0 or indices.max() >= rows:
        i = first_bad((indices < 0) | (indices >= rows))
        raise IndexError(f"{op}: indices[{i}] = {int(indices[i])} is not in [0, {rows})")
    data = values_of(backend, data_t)
    gathered = data.index_select(0, from_numpy(backend, indices))
    if dtype == "bool":
        gathered = gathered.to(torch.int32)
    seg = from_numpy(backend, segments)
    shape = (num_rows, *rest)
    sums = torch.zeros(shape, dtype=gathered.dtype, device=backend.device).index_add_(0, seg, gathered)
    if mean:
        counts = torch.bincount(seg, minlength=num_rows).clamp(min=1).reshape((-1,) + (1,) * len(rest))
        sums = sums.double() / counts
        if dtype != "float32":
            sums = torch.trunc(sums)  # int32 stores truncate
    return out(backend, sums != 0 if dtype == "bool" else sums, dtype, shape)


@torch_kernel(kn.SparseSegmentSum)
def sparse_segment_sum(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Sum of ``data[indices]`` rows per (sorted) segment id; segments without rows are 0."""
    return _segment_reduce(backend, inputs, "sparse_segment_sum", mean=False)


@torch_kernel(kn.SparseSegmentMean)
def sparse_segment_mean(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Mean of ``data[indices]`` rows per (sorted) segment id; segments without rows are 0."""
    return _segment_reduce(backend, inputs, "sparse_segment_mean", mean=True)


for _name in ("SparseFillEmptyRows", "SparseReshape"):
    host_kernel(_name, "index arithmetic with value-dependent output shapes (as TF.js's GPU backends)")
