"""Gathering and scattering by index tuples: GatherNd, ScatterNd, TensorScatterUpdate."""

from __future__ import annotations

import math

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


def flat_indices(idx: torch.Tensor, shape: tuple[int, ...], slice_rank: int, op: str) -> torch.Tensor:
    """Row-major positions of the index tuples ``idx`` (``[n, slice_rank]``) among the slices of
    ``shape[:slice_rank]``; every coordinate must be within its dimension."""
    idx = idx.long()
    if slice_rank == 0:
        return torch.zeros(idx.shape[0], dtype=torch.int64, device=idx.device)
    dims = torch.tensor(shape[:slice_rank], dtype=torch.int64, device=idx.device)
    bad = ((idx < 0) | (idx >= dims)).any(dim=1)
    if idx.numel() and bool(bad.any()):
        row = int(torch.nonzero(bad)[0, 0])
        raise IndexError(f"{op}: index {idx[row].tolist()} does not index into shape {list(shape)}")
    strides = [1] * slice_rank
    for d in range(slice_rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return idx @ torch.tensor(strides, dtype=torch.int64, device=idx.device)


def _scatter_layout(indices: torch.Tensor, shape: tuple[int, ...]) -> tuple[torch.Tensor, int]:
    """Index tuples as ``[num_updates, slice_rank]`` and the size of one slice (TF.js's calculateShapes)."""
    slice_rank = indices.shape[-1] if indices.dim() > 1 else 1
    num_updates = indices.numel() // slice_rank if slice_rank else math.prod(indices.shape[:-1])
    return indices.reshape(num_updates, slice_rank), math.prod(shape[slice_rank:])


@torch_kernel(kn.GatherNd, strings=True)
def gather_nd(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    params, indices = inputs
    v = values_of(backend, params)
    idx = values_of(backend, indices)
    slice_rank = idx.shape[-1]
    batch_shape = tuple(idx.shape[:-1])
    tail = params.shape[slice_rank:]
    rows = flat_indices(idx.reshape(math.prod(batch_shape), slice_rank), params.shape, slice_rank, "gather_nd")
    slices = v.reshape(math.prod(params.shape[:slice_rank]), math.prod(tail))[rows]
    return out(backend, slices.reshape(batch_shape + tail), params.dtype, batch_shape + tail)


def last_of_duplicates(rows: torch.Tensor, length: int) -> torch.Tensor:
    """Positions in ``rows`` of the last occurrence of each distinct row (in no particular order)."""
    positions = torch.arange(rows.numel(), device=rows.device)
    last = torch.full((length,), -1, dtype=torch.int64, device=rows.device)
    last.scatter_reduce_(0, rows, positions, reduce="amax")
    return last[last >= 0]


@torch_kernel(kn.ScatterNd, strings=True)
def scatter_nd(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Updates added into zeros at the index tuples; duplicates add up (bools: logical or)."""
    indices, updates = inputs
    shape = tuple(attrs["shape"])
    idx, slice_size = _scatter_layout(values_of(backend, indices), shape)
    v = values_of(backend, updates)
    work = torch.int32 if v.dtype is torch.bool else v.dtype
    result = torch.zeros(shape, dtype=work, device=v.device)
    if result.numel() == 0:
        return out(backend, result, updates.dtype, shape)
    rows = flat_indices(idx, shape, idx.shape[1], "scatter_nd")
    flat = result.view(-1, slice_size)
    flat.index_add_(0, rows, v.reshape(-1, slice_size).to(work))
    return out(backend, result != 0 if v.dtype is torch.bool else result, updates.dtype, shape)


@torch_kernel(kn.TensorScatterUpdate, strings=True)
def tensor_scatter_update(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """A copy of ``tensor`` with slices replaced at the index tuples; the last duplicate wins."""
    tensor, indices, updates = inputs
    idx, slice_size = _scatter_layout(values_of(backend, indices), tensor.shape)
    result = values_of(backend, tensor).clone(memory_format=torch.contiguous_format)
    if result.numel() == 0:
        return out(backend, result, tensor.dtype, tensor.shape)
    rows = flat_indices(idx, tensor.shape, idx.shape[1], "tensor_scatter_update")
    flat = result.view(-1, slice_size)
    last = last_of_duplicates(rows, flat.shape[0])
    flat[rows[last]] = values_of(backend, updates).reshape(-1, slice_size)[last]
    return out(backend, result, tensor.dtype, tensor.shape)
