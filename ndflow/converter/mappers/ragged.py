"""Ragged ops (TF.js converter category ``ragged``): gather, range, and conversion to dense."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, mapper


@mapper("RaggedGather")
def ragged_gather(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Rows of a ragged tensor: inputs ``(*params_nested_splits, params_dense_values, indices)``;
    outputs the output's nested splits, then its dense values."""
    *splits, values, indices = inputs
    res = nf.ragged_gather(splits, values, indices, int(attr_num(node, "OUTPUT_RAGGED_RANK", 1)))
    return [*res.output_nested_splits, res.output_dense_values]


@mapper("RaggedRange")
def ragged_range(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[rt_nested_splits, rt_dense_values]`` of ranges ``(starts, limits, deltas)``."""
    res = nf.ragged_range(inputs[0], inputs[1], inputs[2])
    return [res.rt_nested_splits, res.rt_dense_values]


@mapper("RaggedTensorToTensor")
def ragged_tensor_to_tensor(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A dense tensor from ``(shape, values, default_value, *row_partition_tensors)`` and
    ``row_partition_types`` (kept uppercase; TF.js lowercases them and then cannot read them)."""
    shape, values, default, *partitions = inputs
    types = [t.upper() for t in node.strs("row_partition_types", []) or []]
    return nf.ragged_tensor_to_tensor(shape, values, default, partitions, types)
