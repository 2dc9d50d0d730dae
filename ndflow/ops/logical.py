"""Comparisons (bool results) and ``where``."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .arithmetic import run_binary
from .convert import binary_inputs, broadcast_shape, converted, dispose_temps


def equal(a: Any, b: Any) -> Tensor:
    """a == b element-wise (bool)."""
    return run_binary("Equal", "equal", a, b, numeric=False)


def not_equal(a: Any, b: Any) -> Tensor:
    """a != b element-wise (bool)."""
    return run_binary("NotEqual", "not_equal", a, b, numeric=False)


def greater(a: Any, b: Any) -> Tensor:
    """a > b element-wise (bool)."""
    return run_binary("Greater", "greater", a, b)


def greater_equal(a: Any, b: Any) -> Tensor:
    """a >= b element-wise (bool)."""
    return run_binary("GreaterEqual", "greater_equal", a, b)


def less(a: Any, b: Any) -> Tensor:
    """a < b element-wise (bool)."""
    return run_binary("Less", "less", a, b)


def less_equal(a: Any, b: Any) -> Tensor:
    """a <= b element-wise (bool)."""
    return run_binary("LessEqual", "less_equal", a, b)


def where(condition: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``condition`` is true, else ``b``; all three broadcast together."""
    with converted(condition, "condition", "where", "bool") as cond:
        if cond.dtype != "bool":
            raise TypeError(f"where: argument 'condition' must be bool, got {cond.dtype}")
        a, b, temps = binary_inputs(a, b, "where")
        try:
            broadcast_shape(broadcast_shape(cond.shape, a.shape, "where"), b.shape, "where")
            return ENGINE.run_kernel("Select", (cond, a, b), None)
        finally:
            dispose_temps(temps)


__all__ = ["equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "where"]

CHAINED = [equal, not_equal, greater, greater_equal, less, less_equal]  # also Tensor methods: x.equal(...)
