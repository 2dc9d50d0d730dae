"""Counting and segment sums: Bincount, DenseBincount, UnsortedSegmentSum."""

from __future__ import annotations

import math

import torch

from ....core import kernel_names as kn
from ...shared.segment import in_bins
from ..backend import TorchBackend
from .common import F, Output, out, torch_kernel, values_of


def _counts(index: torch.Tensor, weights: torch.Tensor | None, length: int, dtype: str) -> torch.Tensor:
    """Sum ``weights`` (or 1s) into ``length`` bins at ``index``, in ``dtype``."""
    if weights is None:
        counts = torch.bincount(index, minlength=length)
        return counts != 0 if dtype == "bool" else counts
    if dtype == "bool":  # a bin is true when any true weight falls in it
        return torch.bincount(index[weights], minlength=length) != 0
    if weights.is_floating_point():
        return torch.bincount(index, weights=weights.double(), minlength=length)
    total = torch.zeros(length, dtype=torch.int64, device=index.device)  # exact, wrapped to int32 on output
    return total.index_add_(0, index, weights.long())


def _flat(backend: TorchBackend, w) -> torch.Tensor | None:
    return values_of(backend, w).reshape(-1) if w.size else None


@torch_kernel(kn.Bincount)
def bincount(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    size = attrs["size"]
    xs = values_of(backend, x).reshape(-1).long()
    keep = in_bins("bincount", xs, size)
    weights = _flat(backend, w)
    counts = _counts(xs[keep], None if weights is None else weights[keep], size, w.dtype)
    return out(backend, counts, w.dtype, (size,))


@torch_kernel(kn.DenseBincount)
def dense_bincount(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    size, binary = attrs["size"], attrs["binary_output"]
    xv = values_of(backend, x).long()
    xs = xv.reshape(1, -1) if x.rank == 1 else xv
    rows = xs.shape[0]
    keep = in_bins("dense_bincount", xs, size)
    offsets = torch.arange(rows, device=xs.device)[:, None] * size
    index = (offsets + xs)[keep]  # one run of `size` bins per row
    weights = _flat(backend, w)
    if binary:
        counts = torch.bincount(index, minlength=rows * size) != 0
    else:
        counts = _counts(index, None if weights is None else weights.reshape(xs.shape)[keep], rows * size, w.dtype)
    shape = (size,) if x.rank == 1 else (rows, size)
    return out(backend, counts.reshape(shape), w.dtype, shape)


@torch_kernel(kn.UnsortedSegmentSum)
def unsorted_segment_sum(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Float32 sums of the slices of ``x`` per segment id (ids outside ``[0, n)`` are dropped)."""
    x, segment_ids = inputs
    n = attrs["num_segments"]
    ids = values_of(backend, segment_ids).reshape(-1).long()
    rest = x.shape[segment_ids.rank :]
    v = values_of(backend, x).reshape(ids.numel(), math.prod(rest))
    keep = (ids >= 0) & (ids < n)
    total = torch.zeros((n, v.shape[1]), dtype=torch.float64, device=v.device)
    total.index_add_(0, ids[keep], v[keep].to(F()).double())  # through float32, as TF.js
    return out(backend, total.reshape((n, *rest)), "float32", (n, *rest))
