"""Evaluation ops (TF.js converter category ``evaluation``): top-k, unique, sorted-search bounds."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import mapper, num


@mapper("TopKV2")
def topk(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[values, indices]`` of the ``k`` largest entries along the last axis."""
    x, k = inputs
    res = nf.topk(x, int(num(k)), bool(node.bool("sorted", True)))
    return [res.values, res.indices]


@mapper("Unique")
def unique(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[values, indices]``: distinct elements of a 1-D tensor in order of first occurrence."""
    res = nf.unique(inputs[0])
    return [res.values, res.indices]


@mapper("UniqueV2")
def unique_v2(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``[values, indices]``: distinct slices along ``axis`` (the second input)."""
    x, axis = inputs
    res = nf.unique(x, int(num(axis)) if axis.size else 0)
    return [res.values, res.indices]


@mapper("LowerBound", "UpperBound")
def bounds(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Per row, the insertion index of each value into a sorted sequence (left or right)."""
    fn = nf.lower_bound if node.op == "LowerBound" else nf.upper_bound
    return fn(inputs[0], inputs[1])
