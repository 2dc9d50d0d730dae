"""Basic math ops (TF.js converter category ``basic_math``): unary functions and activations."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, mapper, num

_UNARY = {
    "Abs": nf.abs,
    "ComplexAbs": nf.abs,
    "Acos": nf.acos,
    "Acosh": nf.acosh,
    "Asin": nf.asin,
    "Asinh": nf.asinh,
    "Atan": nf.atan,
    "Atanh": nf.atanh,
    "Ceil": nf.ceil,
    "Cos": nf.cos,
    "Cosh": nf.cosh,
    "Elu": nf.elu,
    "Erf": nf.erf,
    "Exp": nf.exp,
    "Expm1": nf.expm1,
    "Floor": nf.floor,
    "Imag": nf.imag,
    "IsFinite": nf.is_finite,
    "IsInf": nf.is_inf,
    "IsNan": nf.is_nan,
    "Log": nf.log,
    "Log1p": nf.log1p,
    "Neg": nf.neg,
    "Real": nf.real,
    "Reciprocal": nf.reciprocal,
    "Relu": nf.relu,
    "Relu6": nf.relu6,
    "Round": nf.round,
    "Rsqrt": nf.rsqrt,
    "Selu": nf.selu,
    "Sigmoid": nf.sigmoid,
    "Sign": nf.sign,
    "Sin": nf.sin,
    "Sinh": nf.sinh,
    "Softplus": nf.softplus,
    "Sqrt": nf.sqrt,
    "Square": nf.square,
    "Tan": nf.tan,
    "Tanh": nf.tanh,
}


@mapper(*_UNARY)
def unary(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """An element-wise function of ``x``."""
    return _UNARY[node.op](inputs[0])


@mapper("Atan2")
def atan2(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``atan2(y, x)`` of the two inputs in order."""
    return nf.atan2(inputs[0], inputs[1])


@mapper("Complex")
def complex_(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A complex64 tensor from real and imaginary parts."""
    return nf.complex(inputs[0], inputs[1])


@mapper("LeakyRelu")
def leaky_relu(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``max(x, alpha * x)``, ``alpha`` from the attribute (default 0.2)."""
    return nf.leaky_relu(inputs[0], attr_num(node, "alpha", 0.2))


@mapper("Prelu")
def prelu(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Leaky ReLU with learned ``alpha`` (the second input)."""
    return nf.prelu(inputs[0], inputs[1])


@mapper("ClipByValue")
def clip_by_value(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x`` clipped to ``[min, max]``; non-scalar bounds broadcast (TF.js reads their first value only)."""
    x, lo, hi = inputs
    if lo.size == 1 and hi.size == 1:
        return nf.clip_by_value(x, num(lo), num(hi))
    return nf.minimum(nf.maximum(x, lo), hi)
