"""``nf.sparse``: ops on sparse tensors given as (indices, values, dense shape), as ``tf.sparse``."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .sparse_dense import _Args


class SparseFillEmptyRowsResult(NamedTuple):
    output_indices: Tensor
    output_values: Tensor
    empty_row_indicator: Tensor
    reverse_index_map: Tensor


class SparseReshapeResult(NamedTuple):
    output_indices: Tensor
    output_shape: Tensor


def _check_rank(op: str, arg: str, t: Tensor, rank: int, what: str) -> None:
    if t.rank != rank:
        raise ValueError(f"{op}: argument '{arg}' must be {what} (rank {rank}), got shape {list(t.shape)}")


def sparse_fill_empty_rows(
    indices: TensorLike, values: TensorLike, dense_shape: TensorLike, default_value: TensorLike
) -> SparseFillEmptyRowsResult:
    """Give each empty row of a sparse tensor one entry, ``default_value`` at column 0.

    Returns ``(output_indices, output_values, empty_row_indicator, reverse_index_map)``; entries
    come out grouped by row (stable), ``reverse_index_map[i]`` is where input entry ``i`` went.
    """
    op = "sparse_fill_empty_rows"
    with _Args(op) as arg:
        idx = arg(indices, "indices", "int32")
        vals = arg(values, "values")
        shape = arg(dense_shape, "dense_shape", "int32")
        default = arg(default_value, "default_value", vals.dtype)
        _check_rank(op, "indices", idx, 2, "a matrix")
        _check_rank(op, "values", vals, 1, "a vector")
        _check_rank(op, "dense_shape", shape, 1, "a vector")
        _check_rank(op, "default_value", default, 0, "a scalar")
        if vals.dtype == "complex64":
            raise TypeError(f"{op}: argument 'values' must be float32, int32 or bool, got complex64")
        if idx.shape[1] == 0:
            raise ValueError(f"{op}: argument 'indices' must have at least one column, got shape {list(idx.shape)}")
        if vals.shape[0] != idx.shape[0]:
            raise ValueError(
                f"{op}: argument 'values' must have one value per row of 'indices' ({idx.shape[0]}), "
                f"got {vals.shape[0]}"
            )
        return SparseFillEmptyRowsResult(*ENGINE.run_kernel(kn.SparseFillEmptyRows, (idx, vals, shape, default)))


def sparse_reshape(input_indices: TensorLike, input_shape: TensorLike, new_shape: TensorLike) -> SparseReshapeResult:
    """The indices of a sparse tensor of ``input_shape`` re-addressed for ``new_shape`` (one -1 is
    inferred); returns ``(output_indices, output_shape)``."""
    op = "sparse_reshape"
    with _Args(op) as arg:
        idx = arg(input_indices, "input_indices", "int32")
        in_shape = arg(input_shape, "input_shape", "int32")
        out_shape = arg(new_shape, "new_shape", "int32")
        _check_rank(op, "input_indices", idx, 2, "a matrix")
        _check_rank(op, "input_shape", in_shape, 1, "a vector")
        _check_rank(op, "new_shape", out_shape, 1, "a vector")
        return SparseReshapeResult(*ENGINE.run_kernel(kn.SparseReshape, (idx, in_shape, out_shape)))


def _segment(kernel: str, op: str, data: Any, indices: Any, segment_ids: Any) -> Tensor:
    with _Args(op) as arg:
        x = arg(data, "data")
        idx = arg(indices, "indices", "int32")
        ids = arg(segment_ids, "segment_ids", "int32")
        if x.dtype == "complex64":
            raise TypeError(f"{op}: argument 'data' must be float32, int32 or bool, got complex64")
        if x.rank < 1:
            raise ValueError(f"{op}: argument 'data' must have rank >= 1, got a scalar")
        _check_rank(op, "indices", idx, 1, "a vector")
        _check_rank(op, "segment_ids", ids, 1, "a vector")
        if idx.shape[0] != ids.shape[0]:
            raise ValueError(
                f"{op}: 'indices' ({idx.shape[0]}) and 'segment_ids' ({ids.shape[0]}) must have the same length"
            )
        return ENGINE.run_kernel(kernel, (x, idx, ids))


def sparse_segment_sum(data: TensorLike, indices: TensorLike, segment_ids: TensorLike) -> Tensor:
    """Sum of the rows ``data[indices]`` per segment (``segment_ids`` sorted); empty segments are 0."""
    return _segment(kn.SparseSegmentSum, "sparse_segment_sum", data, indices, segment_ids)


def sparse_segment_mean(data: TensorLike, indices: TensorLike, segment_ids: TensorLike) -> Tensor:
    """Mean of the rows ``data[indices]`` per segment (``segment_ids`` sorted); empty segments are 0."""
    return _segment(kn.SparseSegmentMean, "sparse_segment_mean", data, indices, segment_ids)


__all__ = ["sparse_fill_empty_rows", "sparse_reshape", "sparse_segment_mean", "sparse_segment_sum"]
