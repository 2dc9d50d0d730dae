"""Logical ops (TF.js converter category ``logical``): comparisons, boolean logic and selection."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import mapper

_BINARY = {
    "Equal": nf.equal,
    "NotEqual": nf.not_equal,
    "Greater": nf.greater,
    "GreaterEqual": nf.greater_equal,
    "Less": nf.less,
    "LessEqual": nf.less_equal,
    "LogicalAnd": nf.logical_and,
    "LogicalOr": nf.logical_or,
    "BitwiseAnd": nf.bitwise_and,
}


@mapper(*_BINARY)
def binary(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """An element-wise comparison or boolean operation with broadcasting."""
    return _BINARY[node.op](inputs[0], inputs[1])


@mapper("LogicalNot")
def logical_not(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Boolean negation."""
    return nf.logical_not(inputs[0])


@mapper("Select", "SelectV2")
def select(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``a`` where ``condition`` else ``b``. ``Select``'s 1-D condition picks whole rows (TF's rule;
    TF.js broadcasts it against the last axis instead); ``SelectV2`` broadcasts."""
    cond, a, b = inputs
    if node.op == "Select" and cond.rank == 1 and a.rank > 1:
        cond = nf.reshape(cond, [cond.shape[0]] + [1] * (a.rank - 1))
    return nf.where(cond, a, b)
