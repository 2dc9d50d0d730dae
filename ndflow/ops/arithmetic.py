"""Element-wise binary arithmetic with TF.js broadcasting and dtype matching."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import binary_inputs, broadcast_shape, dispose_temps

TensorLike = Any


def run_binary(kernel: str, op: str, a: TensorLike, b: TensorLike, numeric: bool = True) -> Tensor:
    """Convert, match dtypes, check broadcasting, run ``kernel``; temporaries are disposed."""
    if a.__class__ is Tensor and b.__class__ is Tensor and a.dtype == b.dtype and a.dtype != "string":
        if a.shape != b.shape and not ENGINE.prod:
            broadcast_shape(a.shape, b.shape, op)
        return ENGINE.run_kernel(kernel, (a, b), None)
    a, b, temps = binary_inputs(a, b, op)
    try:
        if not ENGINE.prod:
            if numeric and a.dtype == "string":
                raise TypeError(f"{op}: string tensors are not supported")
            broadcast_shape(a.shape, b.shape, op)
        return ENGINE.run_kernel(kernel, (a, b), None)
    finally:
        dispose_temps(temps)


def add(a: TensorLike, b: TensorLike) -> Tensor:
    """a + b, element-wise with broadcasting."""
    return run_binary("Add", "add", a, b)


def sub(a: TensorLike, b: TensorLike) -> Tensor:
    """a - b, element-wise with broadcasting."""
    return run_binary("Sub", "sub", a, b)


def mul(a: TensorLike, b: TensorLike) -> Tensor:
    """a * b, element-wise with broadcasting."""
    return run_binary("Multiply", "mul", a, b)


def div(a: TensorLike, b: TensorLike) -> Tensor:
    """a / b; two int32 tensors divide with flooring, as in TF.js."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype == "int32" and b.dtype == "int32":
        return run_binary("FloorDiv", "div", a, b)
    return run_binary("RealDiv", "div", a, b)


def real_div(a: TensorLike, b: TensorLike) -> Tensor:
    """a / b as real division whatever the dtypes (floats out for int inputs)."""
    return run_binary("RealDiv", "real_div", a, b)


def floor_div(a: TensorLike, b: TensorLike) -> Tensor:
    """floor(a / b), element-wise with broadcasting."""
    return run_binary("FloorDiv", "floor_div", a, b)


def mod(a: TensorLike, b: TensorLike) -> Tensor:
    """Remainder of floor division: the result has the sign of ``b``."""
    return run_binary("Mod", "mod", a, b)


def pow(base: TensorLike, exp: TensorLike) -> Tensor:  # noqa: A001 - TF.js's name
    """base ** exp, element-wise with broadcasting."""
    return run_binary("Pow", "pow", base, exp)


def maximum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise maximum; NaN wins."""
    return run_binary("Maximum", "maximum", a, b)


def minimum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise minimum; NaN wins."""
    return run_binary("Minimum", "minimum", a, b)


def squared_difference(a: TensorLike, b: TensorLike) -> Tensor:
    """(a - b) ** 2, element-wise with broadcasting."""
    return run_binary("SquaredDifference", "squared_difference", a, b)


__all__ = [
    "add", "sub", "mul", "div", "real_div", "floor_div", "mod", "pow", "maximum", "minimum", "squared_difference",
]  # fmt: skip

CHAINED = [
    add,
    sub,
    mul,
    div,
    real_div,
    floor_div,
    mod,
    pow,
    maximum,
    minimum,
    squared_difference,
]  # also Tensor methods: x.add(...)
