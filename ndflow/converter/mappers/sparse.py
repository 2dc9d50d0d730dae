"""Sparse ops (TF.js converter category ``sparse``): fill empty rows, reshape, segment reductions."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import mapper


@mapper("SparseFillEmptyRows")
def sparse_fill_empty_rows(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[output_indices, output_values, empty_row_indicator, reverse_index_map]``."""
    indices, values, dense_shape, default = inputs
    res = nf.sparse.sparse_fill_empty_rows(indices, values, dense_shape, default)
    return [res.output_indices, res.output_values, res.empty_row_indicator, res.reverse_index_map]


@mapper("SparseReshape")
def sparse_reshape(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[output_indices, output_shape]`` of a sparse tensor reshaped to ``new_shape``."""
    res = nf.sparse.sparse_reshape(inputs[0], inputs[1], inputs[2])
    return [res.output_indices, res.output_shape]


@mapper("SparseSegmentSum", "SparseSegmentMean")
def sparse_segment(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Sum (mean) of ``data[indices]`` per segment id."""
    fn = nf.sparse.sparse_segment_sum if node.op == "SparseSegmentSum" else nf.sparse.sparse_segment_mean
    return fn(inputs[0], inputs[1], inputs[2])
