"""Comparisons (bool results), logical and bitwise operators, and ``where``."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .arithmetic import run_binary
from .convert import binary_inputs, broadcast_shape, converted, dispose_temps, to_tensor
from .unary import dtype_error, run_typed_unary


def equal(a: TensorLike, b: TensorLike) -> Tensor:
    """a == b element-wise (bool)."""
    return run_binary(kn.Equal, "equal", a, b, numeric=False)


def not_equal(a: TensorLike, b: TensorLike) -> Tensor:
    """a != b element-wise (bool)."""
    return run_binary(kn.NotEqual, "not_equal", a, b, numeric=False)


def greater(a: TensorLike, b: TensorLike) -> Tensor:
    """a > b element-wise (bool); strings compare lexicographically."""
    return run_binary(kn.Greater, "greater", a, b, numeric=False)


def greater_equal(a: TensorLike, b: TensorLike) -> Tensor:
    """a >= b element-wise (bool)."""
    return run_binary(kn.GreaterEqual, "greater_equal", a, b, numeric=False)


def less(a: TensorLike, b: TensorLike) -> Tensor:
    """a < b element-wise (bool)."""
    return run_binary(kn.Less, "less", a, b, numeric=False)


def less_equal(a: TensorLike, b: TensorLike) -> Tensor:
    """a <= b element-wise (bool)."""
    return run_binary(kn.LessEqual, "less_equal", a, b, numeric=False)


def _run_logical(kernel: str, op: str, a: Any, b: Any) -> Tensor:
    """Two bool tensors (values are read as bool, as TF.js does), broadcast together."""
    if a.__class__ is Tensor and b.__class__ is Tensor and a.dtype == "bool" and b.dtype == "bool":
        if a.shape != b.shape and not ENGINE.prod:
            broadcast_shape(a.shape, b.shape, op)
        return ENGINE.run_kernel(kernel, (a, b), None)
    with converted(a, "a", op, "bool") as ta, converted(b, "b", op, "bool") as tb:
        if not ENGINE.prod:
            for arg, t in (("a", ta), ("b", tb)):
                if t.dtype != "bool":
                    raise dtype_error(op, arg, ("bool",), f"a {t.dtype} tensor")
            broadcast_shape(ta.shape, tb.shape, op)
        return ENGINE.run_kernel(kernel, (ta, tb), None)


def logical_and(a: TensorLike, b: TensorLike) -> Tensor:
    """a AND b for bool tensors, with broadcasting."""
    return _run_logical(kn.LogicalAnd, "logical_and", a, b)


def logical_or(a: TensorLike, b: TensorLike) -> Tensor:
    """a OR b for bool tensors, with broadcasting."""
    return _run_logical(kn.LogicalOr, "logical_or", a, b)


def logical_xor(a: TensorLike, b: TensorLike) -> Tensor:
    """a XOR b for bool tensors, with broadcasting (TF.js composes it of and/or/not; same values)."""
    return _run_logical(kn.LogicalXor, "logical_xor", a, b)


def logical_not(x: TensorLike) -> Tensor:
    """NOT x for a bool tensor."""
    return run_typed_unary(kn.LogicalNot, "logical_not", x, ("bool",))


def bitwise_and(x: TensorLike, y: TensorLike) -> Tensor:
    """x & y bit by bit, for two int32 tensors of one shape (no broadcasting, as TF.js)."""
    tx = to_tensor(x, "x", "bitwise_and")
    try:
        ty = to_tensor(y, "y", "bitwise_and")
    except BaseException:
        if tx is not x:
            tx.dispose()
        raise
    try:
        if not ENGINE.prod:
            if tx.shape != ty.shape:
                raise ValueError(
                    f"bitwise_and: tensors must have the same shape, got x.shape={list(tx.shape)} "
                    f"and y.shape={list(ty.shape)}"
                )
            if tx.dtype != "int32" or ty.dtype != "int32":
                raise TypeError(
                    f"bitwise_and: arguments 'x' and 'y' must be int32 tensors, got {tx.dtype} and {ty.dtype}"
                )
        return ENGINE.run_kernel(kn.BitwiseAnd, (tx, ty), None)
    finally:
        dispose_temps([t for t, src in ((tx, x), (ty, y)) if t is not src])


def where(condition: TensorLike, a: TensorLike, b: TensorLike) -> Tensor:
    """``a`` where ``condition`` is true, else ``b``; all three broadcast together."""
    with converted(condition, "condition", "where", "bool") as cond:
        if cond.dtype != "bool":
            raise TypeError(f"where: argument 'condition' must be bool, got {cond.dtype}")
        a, b, temps = binary_inputs(a, b, "where")
        try:
            broadcast_shape(broadcast_shape(cond.shape, a.shape, "where"), b.shape, "where")
            return ENGINE.run_kernel(kn.Select, (cond, a, b), None)
        finally:
            dispose_temps(temps)


__all__ = [
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "where",
]  # fmt: skip

CHAINED = [
    equal, not_equal, greater, greater_equal, less, less_equal,
    logical_and, logical_or, logical_xor, logical_not,
]  # fmt: skip  # also Tensor methods: x.equal(...)
