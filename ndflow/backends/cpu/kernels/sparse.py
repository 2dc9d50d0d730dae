"""Sparse tensors: SparseToDense, SparseFillEmptyRows, SparseReshape, SparseSegmentSum, SparseSegmentMean.

A sparse tensor is given, as in TF.js, by ``indices`` (one row of coordinates per value), its
``values`` and its dense shape. The ops check ranks and dtypes; these kernels check the values
(indices in range, segment ids sorted) and compute with whole-array numpy operations.
"""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ...shared.indexing import check_coordinates, first_bad, last_updates, sparse_update_coordinates
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.SparseToDense)
def sparse_to_dense(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Scatter ``values`` into a tensor of ``output_shape`` filled with ``default_value``; the last
    of duplicate indices wins."""
    indices_t, values_t, default_t = inputs
    shape = tuple(attrs["output_shape"])
    dtype = values_t.dtype
    idx = sparse_update_coordinates(values_of(backend, indices_t), shape, "sparse_to_dense")
    num_updates = len(idx)
    default = values_of(backend, default_t).reshape(-1)[0]
    result = np.full(shape, default, dtype=NUMPY_DTYPE[dtype])
    if num_updates == 0 or result.size == 0:
        return out(backend, result, dtype)
    values = values_of(backend, values_t)
    values = np.broadcast_to(values.reshape(-1), (num_updates,)) if values.ndim == 0 else values.reshape(-1)
    flat, keep = last_updates(idx, shape)
    result.reshape(-1)[flat[keep]] = values[keep]
    return out(backend, result, dtype)


# ----------------------------------------------------------------------------- SparseFillEmptyRows


@cpu_kernel(kn.SparseFillEmptyRows)
def sparse_fill_empty_rows(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> list[Output]:
    """Give every empty row of a 2-D+ sparse tensor one entry ``default_value`` at column 0.

    Outputs: indices, values (grouped by row, stable), empty_row_indicator, reverse_index_map
    (where each input entry went).
    """
    indices_t, values_t, dense_shape_t, default_t = inputs
    op = "sparse_fill_empty_rows"
    indices = values_of(backend, indices_t).astype(np.int64)
    values = values_of(backend, values_t)
    dense_shape = values_of(backend, dense_shape_t)
    default = values_of(backend, default_t).reshape(())[()]
    n, rank = indices.shape
    if dense_shape.size == 0:
        raise ValueError(f"{op}: argument 'dense_shape' must have at least one dimension, got []")
    dense_rows = int(dense_shape[0])
    if dense_rows < 0:
        raise ValueError(f"{op}: dense_shape[0] must be non-negative, got {dense_rows}")
    np_dtype = NUMPY_DTYPE[values_t.dtype]
    if dense_rows == 0:
        if n != 0:
            raise ValueError(f"{op}: dense_shape[0] = {dense_rows} but indices has {n} rows")
        return [
            out(backend, np.zeros((0, rank), np.int32), "int32"),
            out(backend, np.zeros((0,), np_dtype), values_t.dtype),
            out(backend, np.zeros((0,), np.bool_), "bool"),
            out(backend, np.zeros((0,), np.int32), "int32"),
        ]
    rows = indices[:, 0]
    if n and (rows.min() < 0 or rows.max() >= dense_rows):
        i = first_bad((rows < 0) | (rows >= dense_rows))
        raise IndexError(f"{op}: indices[{i}, 0] = {int(rows[i])} is not in [0, {dense_rows})")
    counts = np.bincount(rows, minlength=dense_rows)
    empty = counts == 0
    filled = np.maximum(counts, 1)
    starts = np.cumsum(filled) - filled  # where each dense row begins in the output
    total = int(filled.sum())
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    first_of_row = np.cumsum(counts) - counts
    position = starts[sorted_rows] + (np.arange(n) - first_of_row[sorted_rows])
    reverse = np.empty(n, np.int64)
    reverse[order] = position

    out_indices = np.zeros((total, rank), np.int32)
    out_indices[position] = indices[order]
    out_indices[starts[empty], 0] = np.flatnonzero(empty)
    out_values = np.full(total, default, dtype=np_dtype)
    out_values[position] = values[order]
    return [
        out(backend, out_indices, "int32"),
        out(backend, out_values, values_t.dtype),
        out(backend, empty, "bool"),
        out(backend, reverse.astype(np.int32), "int32"),
    ]


# ----------------------------------------------------------------------------- SparseReshape


def _target_shape(op: str, dense_size: int, input_shape: list[int], target: list[int]) -> list[int]:
    """``target`` with its one -1 resolved, checked against the dense size of ``input_shape``."""
    unknown = [d for d, size in enumerate(target) if size == -1]
    if len(unknown) > 1:
        raise ValueError(f"{op}: only one dimension of 'new_shape' may be -1, got {target}")
    negative = [d for d, size in enumerate(target) if size < -1]
    if negative:
        raise ValueError(f"{op}: new_shape[{negative[0]}] = {target[negative[0]]} must be non-negative or -1")
    shape = [1 if size == -1 else size for size in target]
    product = math.prod(shape)
    if unknown:
        if product <= 0:
            raise ValueError(
                f"{op}: cannot infer the -1 in new_shape {target} for an empty tensor unless all other sizes "
                "are non-zero"
            )
        if dense_size % product:
            raise ValueError(
                f"{op}: a sparse tensor of shape {input_shape} ({dense_size} dense values) cannot be reshaped to "
                f"{target}: {dense_size} is not a multiple of {product}"
            )
        shape[unknown[0]] = dense_size // product
    if math.prod(shape) != dense_size:
        raise ValueError(
            f"{op}: a sparse tensor of shape {input_shape} has {dense_size} dense values, but new_shape {target} "
            f"has {math.prod(shape)}"
        )
    return shape


@cpu_kernel(kn.SparseReshape)
def sparse_reshape(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> list[Output]:
    """Re-address the entries of a sparse tensor for a new dense shape (one -1 inferred)."""
    indices_t, input_shape_t, new_shape_t = inputs
    op = "sparse_reshape"
    indices = values_of(backend, indices_t).astype(np.int64)
    input_shape = [int(d) for d in values_of(backend, input_shape_t)]
    target = [int(d) for d in values_of(backend, new_shape_t)]
    nnz, in_rank = indices.shape
    if in_rank != len(input_shape):
        raise ValueError(
            f"{op}: input_indices has {in_rank} columns but input_shape {input_shape} has {len(input_shape)} dimensions"
        )
    if any(d < 0 for d in input_shape):
        raise ValueError(f"{op}: argument 'input_shape' must hold non-negative sizes, got {input_shape}")
    shape = _target_shape(op, math.prod(input_shape), input_shape, target)
    check_coordinates(op, "input_indices", indices, tuple(input_shape))
    new_indices = np.zeros((nnz, len(shape)), np.int64)
    if nnz:
        linear = indices @ np.asarray(_strides(input_shape), np.int64) if in_rank else np.zeros(nnz, np.int64)
        for j, stride in enumerate(_strides(shape)):  # a loop over the output rank
            new_indices[:, j], linear = np.divmod(linear, stride)
    return [
        out(backend, new_indices.astype(np.int32), "int32"),
        out(backend, np.asarray(shape, np.int32), "int32"),
    ]


def _strides(shape: list[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


# ----------------------------------------------------------------------------- SparseSegmentSum/Mean


def _segment_reduce(backend: CPUBackend, inputs: tuple, op: str, mean: bool) -> Output:
    data_t, indices_t, segment_ids_t = inputs
    data = values_of(backend, data_t)
    indices = values_of(backend, indices_t).astype(np.int64)
    segments = values_of(backend, segment_ids_t).astype(np.int64)
    n = indices.shape[0]
    dtype = data_t.dtype
    if n == 0:
        return out(backend, np.zeros((0, *data.shape[1:]), NUMPY_DTYPE[dtype]), dtype)
    num_rows = int(segments[-1]) + 1
    if num_rows <= 0 or segments[0] < 0:
        raise ValueError(f"{op}: segment ids must be >= 0, got {segments.tolist()}")
    if (np.diff(segments) < 0).any():
        raise ValueError(f"{op}: segment ids must be sorted (non-decreasing), got {segments.tolist()}")
    rows = data.shape[0]
    if indices.min() < 0 or indices.max() >= rows:
        i = first_bad((indices < 0) | (indices >= rows))
        raise IndexError(f"{op}: indices[{i}] = {int(indices[i])} is not in [0, {rows})")
    gathered = data[indices]
    if dtype == "bool":
        gathered = gathered.astype(np.int32)
    starts = np.flatnonzero(np.r_[True, segments[1:] != segments[:-1]])
    sums = np.add.reduceat(gathered, starts, axis=0)
    if mean:
        counts = np.diff(np.r_[starts, n]).reshape((-1,) + (1,) * (data.ndim - 1))
        sums = sums / counts if dtype == "float32" else np.trunc(sums / counts)  # int32 stores truncate
        if dtype == "float32":
            sums = sums.astype(np.float32)
    result = np.zeros((num_rows, *data.shape[1:]), sums.dtype)
    result[segments[starts]] = sums
    return out(backend, result != 0 if dtype == "bool" else result, dtype)


@cpu_kernel(kn.SparseSegmentSum)
def sparse_segment_sum(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Sum of ``data[indices]`` rows per (sorted) segment id; segments without rows are 0."""
    return _segment_reduce(backend, inputs, "sparse_segment_sum", mean=False)


@cpu_kernel(kn.SparseSegmentMean)
def sparse_segment_mean(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Mean of ``data[indices]`` rows per (sorted) segment id; segments without rows are 0."""
    return _segment_reduce(backend, inputs, "sparse_segment_mean", mean=True)
