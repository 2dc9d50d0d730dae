"""Element-wise unary math."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import to_tensor


def run_unary(kernel: str, op: str, x: Any, float_only: bool = False) -> Tensor:
    """Convert ``x``, check its dtype, run ``kernel``; a temporary input is disposed.

    ``float_only``: TF.js accepts only float32 here (``log``, ``sqrt``, ``tanh``...).
    """
    if x.__class__ is Tensor and (x.dtype == "float32" or (not float_only and x.dtype != "string")):
        return ENGINE.run_kernel(kernel, (x,), None)
    t = to_tensor(x, "x", op)
    try:
        if not ENGINE.prod:
            if t.dtype == "string":
                raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
            if float_only and t.dtype not in ("float32", "complex64"):
                raise TypeError(f"{op}: argument 'x' must be a float32 tensor, got {t.dtype}")
        return ENGINE.run_kernel(kernel, (t,), None)
    finally:
        if t is not x:
            t.dispose()


def neg(x: Any) -> Tensor:
    """-x."""
    return run_unary("Neg", "neg", x)


def abs(x: Any) -> Tensor:  # noqa: A001 - TF.js's name
    """|x|; the magnitude (float32) for complex64."""
    return run_unary("Abs", "abs", x)


def exp(x: Any) -> Tensor:
    """e ** x."""
    return run_unary("Exp", "exp", x)


def log(x: Any) -> Tensor:
    """Natural logarithm; -Infinity at 0, NaN below."""
    return run_unary("Log", "log", x, float_only=True)


def sqrt(x: Any) -> Tensor:
    """Square root; NaN below 0."""
    return run_unary("Sqrt", "sqrt", x, float_only=True)


def rsqrt(x: Any) -> Tensor:
    """1 / sqrt(x)."""
    return run_unary("Rsqrt", "rsqrt", x, float_only=True)


def square(x: Any) -> Tensor:
    """x * x."""
    return run_unary("Square", "square", x)


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent."""
    return run_unary("Tanh", "tanh", x, float_only=True)


__all__ = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "square", "tanh"]

CHAINED = [neg, abs, exp, log, sqrt, rsqrt, square, tanh]  # also Tensor methods: x.neg(...)
