"""Activation functions: relu, sigmoid, softmax."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import converted, normalize_axis
from .unary import run_unary


def relu(x: Any) -> Tensor:
    """max(x, 0); NaN stays NaN."""
    if isinstance(x, Tensor) and x.dtype == "bool":
        return ENGINE.run_kernel("Cast", (x,), {"dtype": "int32"})  # as TF.js: relu of bool is int32
    return run_unary("Relu", "relu", x)


def sigmoid(x: Any) -> Tensor:
    """1 / (1 + e ** -x), float32."""
    return run_unary("Sigmoid", "sigmoid", x, float_only=True)


def softmax(logits: Any, dim: int = -1) -> Tensor:
    """exp(logits) normalised to sum to one along ``dim`` (any axis, not only the last)."""
    with converted(logits, "logits", "softmax") as t:
        if not ENGINE.prod:
            if t.dtype != "float32":
                raise TypeError(f"softmax: argument 'logits' must be float32, got {t.dtype}")
            if t.rank == 0:
                raise ValueError("softmax: argument 'logits' must have rank >= 1, got a scalar")
        return ENGINE.run_kernel("Softmax", (t,), {"dim": normalize_axis(dim, t.rank, "softmax", "dim")})


__all__ = ["relu", "sigmoid", "softmax"]

CHAINED = [relu, sigmoid, softmax]  # also Tensor methods: x.relu(...)
