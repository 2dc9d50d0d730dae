"""Counting and segment sums: Bincount, DenseBincount, UnsortedSegmentSum."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.segment import in_bins
from ..backend import CPUBackend
from ..numba import grads as jit_grads
from .common import Output, cpu_kernel, out, values_of

#: Values from which UnsortedSegmentSum (an embedding's or a gather's gradient) runs the compiled loop: np.add.at
#: costs about 3 us per row.
SEGMENT_JIT_MIN = 4096


def _counts(index: np.ndarray, weights: np.ndarray | None, length: int, dtype: str) -> np.ndarray:
    """Sum ``weights`` (or 1s) into ``length`` bins at ``index``, in ``dtype``."""
    if weights is None:
        counts = np.bincount(index, minlength=length)
        return counts != 0 if dtype == "bool" else counts
    if dtype == "bool":  # a bin is true when any true weight falls in it
        return np.bincount(index[weights], minlength=length) != 0
    if dtype == "float32":
        return np.bincount(index, weights=weights, minlength=length)
    total = np.zeros(length, np.int64)  # int32 weights: exact integer sums, wrapped to int32 on output
    np.add.at(total, index, weights)
    return total.astype(np.int32)


def _flat(backend: CPUBackend, w: object) -> np.ndarray | None:
    return values_of(backend, w).reshape(-1) if w.size else None


@cpu_kernel(kn.Bincount)
def bincount(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    size = attrs["size"]
    xs = values_of(backend, x).reshape(-1)
    keep = in_bins("bincount", xs, size)
    weights = _flat(backend, w)
    counts = _counts(xs[keep], None if weights is None else weights[keep], size, w.dtype)
    return out(backend, counts, w.dtype)


@cpu_kernel(kn.DenseBincount)
def dense_bincount(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    size, binary = attrs["size"], attrs["binary_output"]
    xv = values_of(backend, x)
    xs = xv.reshape(1, -1) if x.rank == 1 else xv
    rows = xs.shape[0]
    keep = in_bins("dense_bincount", xs, size)
    index = (np.arange(rows)[:, None] * size + xs)[keep]  # one run of `size` bins per row
    weights = _flat(backend, w)
    if binary:
        counts = np.bincount(index, minlength=rows * size) != 0
    else:
        counts = _counts(index, None if weights is None else weights.reshape(xs.shape)[keep], rows * size, w.dtype)
    shape = (size,) if x.rank == 1 else (rows, size)
    return out(backend, counts.reshape(shape), w.dtype)


@cpu_kernel(kn.UnsortedSegmentSum)
def unsorted_segment_sum(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, segment_ids = inputs
    n = attrs["num_segments"]
    ids = values_of(backend, segment_ids).reshape(-1)
    rest = x.shape[segment_ids.rank :]
    # TF.js's cpu kernel masks with float32 and sums: float32 values, float32 result
    values = values_of(backend, x).astype(np.float32, copy=False).reshape(ids.size, int(np.prod(rest, dtype=np.int64)))
    total = jit_grads.segment_sum(ids, values, n) if values.size >= SEGMENT_JIT_MIN else None
    if total is None:
        keep = (ids >= 0) & (ids < n)
        total = np.zeros((n, values.shape[1]), np.float64)
        np.add.at(total, ids[keep], values[keep])
    return out(backend, total.reshape((n, *rest)), "float32")
