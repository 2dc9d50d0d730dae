"""Arithmetic ops (TF.js converter category ``arithmetic``): element-wise binary ops with broadcasting."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import channels_first, mapper

_BINARY = {
    "Add": nf.add,
    "AddV2": nf.add,
    "Sub": nf.sub,
    "Mul": nf.mul,
    "RealDiv": nf.div,
    "Div": nf.div,
    "DivNoNan": nf.div_no_nan,
    "FloorDiv": nf.floor_div,
    "FloorMod": nf.mod,
    "Maximum": nf.maximum,
    "Minimum": nf.minimum,
    "Pow": nf.pow,
    "SquaredDifference": nf.squared_difference,
}


@mapper(*_BINARY)
def binary(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``a <op> b`` with broadcasting (``FloorMod`` is ``nf.mod``: the result takes the divisor's sign)."""
    return _BINARY[node.op](inputs[0], inputs[1])


@mapper("Mod")
def truncate_mod(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """TF's ``Mod`` is C's remainder (the result takes the dividend's sign); TF.js runs ``mod`` (floor)."""
    a, b = inputs
    return nf.mul(nf.sign(a), nf.mod(nf.abs(a), nf.abs(b)))


@mapper("BiasAdd")
def bias_add(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``value + bias`` along the channel axis (the last one, or axis 1 for NCHW; TF.js ignores NCHW)."""
    x, bias = inputs
    if channels_first(node) and x.rank > 2 and bias.rank == 1:
        bias = nf.reshape(bias, [bias.shape[0]] + [1] * (x.rank - 2))
    return nf.add(x, bias)


@mapper("AddN")
def add_n(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The sum of all inputs."""
    return nf.add_n(list(inputs))
