"""Matrices: products (mat_mul, dot, outer_product), diag, and vector and matrix norms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.dtypes import upcast_type
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import binary_inputs, broadcast_shape, converted, dispose_temps, normalize_axis, to_tensor


@compiled.product_op(kn.BatchMatMul)
def mat_mul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """The matrix product of the last two axes; leading (batch) axes broadcast."""
    if (
        a.__class__ is Tensor
        and b.__class__ is Tensor
        and not (transpose_a or transpose_b)
        and a.dtype == "float32" == b.dtype
        and len(a.shape) == 2 == len(b.shape)
        and a.shape[1] == b.shape[0]
    ):  # two float32 matrices: what the checks below would pass, then the product form where it may run
        return ENGINE.run_product_float(kn.BatchMatMul, a, b)
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
        return ENGINE.run_kernel(kn.BatchMatMul, (a, b), attrs)
    finally:
        dispose_temps(temps)


# ----------------------------------------------------------------------------- products of vectors


def _operands(a: Any, b: Any, names: tuple[str, str], op: str) -> tuple[Tensor, Tensor, list[Tensor]]:
    """Two numeric tensors of one dtype (upcast, as TF.js's matMul does), and the temporaries made."""
    temps: list[Tensor] = []
    try:
        ts = []
        for x, name in zip((a, b), names, strict=True):
            t = to_tensor(x, name, op)
            if t is not x:
                temps.append(t)
            if t.dtype == "string":
                raise TypeError(f"{op}: argument '{name}' must be numeric, got a string tensor")
            ts.append(t)
        dtype = upcast_type(ts[0].dtype, ts[1].dtype)
        for i, t in enumerate(ts):
            if t.dtype != dtype:
                ts[i] = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": dtype})
                temps.append(ts[i])
        return ts[0], ts[1], temps
    except BaseException:
        dispose_temps(temps)
        raise


def _product(a: Tensor, b: Tensor, shape_a: tuple, shape_b: tuple, shape_out: tuple) -> Tensor:
    """``a @ b`` with both viewed as matrices, the result viewed as ``shape_out``."""
    a2 = ENGINE.run_kernel(kn.Reshape, (a,), {"shape": shape_a})
    b2 = ENGINE.run_kernel(kn.Reshape, (b,), {"shape": shape_b})
    try:
        product = ENGINE.run_kernel(kn.BatchMatMul, (a2, b2), {"transpose_a": False, "transpose_b": False})
    finally:
        dispose_temps([a2, b2])
    if product.shape == shape_out:
        return product
    result = ENGINE.run_kernel(kn.Reshape, (product,), {"shape": shape_out})
    product.dispose()
    return result


def dot(t1: TensorLike, t2: TensorLike) -> Tensor:
    """Dot product of two vectors or matrices (rank 1 or 2): vector.vector is a scalar."""
    a, b, temps = _operands(t1, t2, ("t1", "t2"), "dot")
    try:
        if a.rank not in (1, 2) or b.rank not in (1, 2):
            raise ValueError(f"dot: inputs must all be rank 1 or 2, got ranks {a.rank} and {b.rank}")
        inner_a = a.shape[-1]
        inner_b = b.shape[0]
        if inner_a != inner_b:
            raise ValueError(
                f"dot: inner dimensions of inputs must match, got {inner_a} and {inner_b} "
                f"(t1.shape={list(a.shape)}, t2.shape={list(b.shape)})"
            )
        shape_a = a.shape if a.rank == 2 else (1, inner_a)
        shape_b = b.shape if b.rank == 2 else (inner_b, 1)
        shape_out = a.shape[:-1] + b.shape[1:]  # drops the axes the vectors had no room for
        return _product(a, b, shape_a, shape_b, shape_out)
    finally:
        dispose_temps(temps)


def outer_product(v1: TensorLike, v2: TensorLike) -> Tensor:
    """The outer product of two vectors: ``v1[i] * v2[j]`` in a ``[len(v1), len(v2)]`` matrix."""
    a, b, temps = _operands(v1, v2, ("v1", "v2"), "outer_product")
    try:
        if a.rank != 1 or b.rank != 1:
            raise ValueError(f"outer_product: inputs must be rank 1, got ranks {a.rank} and {b.rank}")
        n, m = a.shape[0], b.shape[0]
        return _product(a, b, (n, 1), (1, m), (n, m))
    finally:
        dispose_temps(temps)


def diag(x: TensorLike) -> Tensor:
    """A tensor of shape ``x.shape + x.shape`` with the values of ``x`` on its diagonal."""
    with converted(x, "x", "diag") as t:
        if t.dtype == "string":
            raise TypeError("diag: argument 'x' must be numeric, got a string tensor")
        return ENGINE.run_kernel(kn.Diag, (t,), None)


# ----------------------------------------------------------------------------- norms

Ord = float | str


def _abs(t: Tensor) -> Tensor:
    return ENGINE.run_kernel(kn.ComplexAbs if t.dtype == "complex64" else kn.Abs, (t,), None)


def _reduce(kernel: str, t: Tensor, axes: tuple[int, ...]) -> Tensor:
    return ENGINE.run_kernel(kernel, (t,), {"axis": axes, "keep_dims": False})


def _sqrt(t: Tensor, ord: Ord, op: str) -> Tensor:  # noqa: A002
    if t.dtype != "float32":  # TF.js's sqrt takes float32 only
        raise TypeError(f"{op}: ord {ord!r} takes a square root, which needs float32 input, got {t.dtype}")
    return ENGINE.run_kernel(kn.Sqrt, (t,), None)


def _bad_ord(ord: Ord, kind: str, op: str) -> ValueError:  # noqa: A002
    allowed = "1, 2, 'euclidean', inf, -inf" if kind == "vector" else "1, 'euclidean', 'fro', inf, -inf"
    return ValueError(f"{op}: invalid ord {ord!r} for a {kind} norm (expected one of {allowed})")


def _norm(t: Tensor, ord: Ord, axis: Any, op: str) -> Tensor:  # noqa: A002
    """The norm; runs inside a tidy scope, so temporaries need no care here."""
    if t.rank == 0:
        return _abs(t)
    is_list = isinstance(axis, list | tuple)
    if t.rank == 1 or axis is None or not is_list or len(axis) == 1:  # no axis: all values as one vector
        axes = _axes(axis, t.rank, op)
        if ord == 1:
            return _reduce(kn.Sum, _abs(t), axes)
        if ord == math.inf:
            return _reduce(kn.Max, _abs(t), axes)
        if ord == -math.inf:
            return _reduce(kn.Min, _abs(t), axes)
        if ord in ("euclidean", 2):
            squared = ENGINE.run_kernel(kn.Square, (_abs(t),), None)
            return _sqrt(_reduce(kn.Sum, squared, axes), ord, op)
        raise _bad_ord(ord, "vector", op)
    if len(axis) == 2:
        rows, cols = _axes(axis, t.rank, op, keep_order=True)
        if ord == 1:  # the largest column sum: sum the rows away, then the largest over the columns
            return _reduce(kn.Max, _reduce(kn.Sum, _abs(t), (rows,)), (cols - (cols > rows),))
        if ord in (math.inf, -math.inf):  # the largest (smallest) row sum
            kernel = kn.Max if ord == math.inf else kn.Min
            return _reduce(kernel, _reduce(kn.Sum, _abs(t), (cols,)), (rows - (rows > cols),))
        if ord in ("fro", "euclidean"):
            magnitude = _abs(t) if t.dtype == "complex64" else t
            squared = ENGINE.run_kernel(kn.Square, (magnitude,), None)
            return _sqrt(_reduce(kn.Sum, squared, tuple(sorted((rows, cols)))), ord, op)
        raise _bad_ord(ord, "matrix", op)
    raise ValueError(f"{op}: invalid axis {list(axis)}: give None, one axis or two axes (a matrix norm)")


def _axes(axis: Any, rank: int, op: str, keep_order: bool = False) -> tuple[int, ...]:
    """``axis`` as non-negative axes (all of them for None); duplicates are refused."""
    if axis is None:
        return tuple(range(rank))
    items = list(axis) if isinstance(axis, list | tuple) else [axis]
    axes = tuple(normalize_axis(a, rank, op) for a in items)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: argument 'axis' {items} has duplicate axes")
    return axes if keep_order else tuple(sorted(axes))


def _norm_op(x: Any, ord: Ord, axis: Any, keep_dims: bool, op: str) -> Tensor:  # noqa: A002
    with converted(x, "x", op) as t:
        if t.dtype == "string":
            raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")

        def run() -> Tensor:
            result = _norm(t, ord, axis, op)
            if not keep_dims:
                return result
            axes = _axes(axis, t.rank, op)
            shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
            return ENGINE.run_kernel(kn.Reshape, (result,), {"shape": shape})

        return ENGINE.tidy(None, run, (), {})


def norm(
    x: TensorLike,
    ord: Ord = "euclidean",  # noqa: A002 - TF.js's name
    axis: int | Sequence[int] | None = None,
    keep_dims: bool = False,
) -> Tensor:
    """Vector norm (ord 1, 2, 'euclidean', inf, -inf) over one axis or all values, or matrix norm
    (ord 1, 'fro', 'euclidean', inf, -inf) over two axes."""
    return _norm_op(x, ord, axis, keep_dims, "norm")


def euclidean_norm(x: TensorLike, axis: int | Sequence[int] | None = None, keep_dims: bool = False) -> Tensor:
    """``norm(x, 'euclidean', axis, keep_dims)``."""
    return _norm_op(x, "euclidean", axis, keep_dims, "euclidean_norm")


__all__ = ["mat_mul", "dot", "outer_product", "diag", "norm", "euclidean_norm"]

CHAINED = [mat_mul, dot, norm, euclidean_norm]  # also Tensor methods: x.mat_mul(...)
