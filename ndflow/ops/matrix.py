"""Matrix products."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import binary_inputs, broadcast_shape, dispose_temps


def mat_mul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """The matrix product of the last two axes; leading (batch) axes broadcast."""
    a, b, temps = binary_inputs(a, b, "mat_mul")
    try:
        if not ENGINE.prod:
            if a.rank < 2 or b.rank < 2:
                raise ValueError(
                    f"mat_mul: both inputs must have rank >= 2, got a.shape={a.shape} and b.shape={b.shape}"
                )
            if a.dtype in ("string", "bool"):
                raise TypeError(f"mat_mul: inputs must be numeric, got {a.dtype}")
            inner_a = a.shape[-2] if transpose_a else a.shape[-1]
            inner_b = b.shape[-1] if transpose_b else b.shape[-2]
            if inner_a != inner_b:
                raise ValueError(
                    f"mat_mul: inner dimensions must match, got a.shape={a.shape} and b.shape={b.shape} "
                    f"(transpose_a={transpose_a}, transpose_b={transpose_b})"
                )
            broadcast_shape(a.shape[:-2], b.shape[:-2], "mat_mul")
        attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
        return ENGINE.run_kernel("BatchMatMul", (a, b), attrs)
    finally:
        dispose_temps(temps)


__all__ = ["mat_mul"]

CHAINED = [mat_mul]  # also Tensor methods: x.mat_mul(...)
