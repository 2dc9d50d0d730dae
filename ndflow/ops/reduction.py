"""Reductions: sum, prod, mean, max, min, all, any, arg_max, arg_min, log_sum_exp; moving_average."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.dtypes import check_dtype, upcast_type
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, normalize_axes, normalize_axis

Axis = int | Sequence[int] | None


def _check_numeric(t: Tensor, op: str, complex_ok: bool = True) -> None:
    """TF.js's 'numeric' argument check (no strings); its cpu kernels also refuse complex64."""
    if t.dtype == "string":
        raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
    if not complex_ok and t.dtype == "complex64":
        raise TypeError(f"{op}: argument 'x' must be real, complex64 tensors are not supported")


def _reduce(kernel: str, op: str, x: Any, axis: Axis, keep_dims: bool) -> Tensor:
    if x.__class__ is Tensor and x.dtype == "float32":  # the common case, without a conversion scope
        axes = tuple(range(len(x.shape))) if axis is None else normalize_axes(axis, len(x.shape), op)
        return ENGINE.run_kernel(kernel, (x,), {"axis": axes, "keep_dims": bool(keep_dims)})
    with converted(x, "x", op) as t:
        _check_numeric(t, op)
        axes = normalize_axes(axis, t.rank, op)
        return ENGINE.run_kernel(kernel, (t,), {"axis": axes, "keep_dims": bool(keep_dims)})


@compiled.reduce_all_op(kn.Sum)
def sum(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (all axes by default); bool sums as int32."""
    return _reduce(kn.Sum, "sum", x, axis, keep_dims)


def mean(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes by default), as float32."""
    return _reduce(kn.Mean, "mean", x, axis, keep_dims)


def max(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over ``axis`` (all axes by default)."""
    return _reduce(kn.Max, "max", x, axis, keep_dims)


def min(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over ``axis`` (all axes by default)."""
    return _reduce(kn.Min, "min", x, axis, keep_dims)


def prod(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:
    """Product over ``axis`` (all axes by default); bool and int32 multiply as int32."""
    with converted(x, "x", "prod") as t:
        _check_numeric(t, "prod", complex_ok=False)
        axes = normalize_axes(axis, t.rank, "prod")
        attrs = {"axis": axes, "keep_dims": bool(keep_dims)}
        if t.dtype != "bool":
            return ENGINE.run_kernel(kn.Prod, (t,), attrs)
        as_int = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": "int32"})  # as TF.js: Prod has no bool kernel
        try:
            return ENGINE.run_kernel(kn.Prod, (as_int,), attrs)
        finally:
            as_int.dispose()


def _logical(kernel: str, op: str, x: Any, axis: Axis, keep_dims: bool) -> Tensor:
    with converted(x, "x", op, "bool") as t:
        if t.dtype != "bool":
            raise TypeError(f"{op}: argument 'x' must be a bool tensor, got {t.dtype}")
        axes = normalize_axes(axis, t.rank, op)
        return ENGINE.run_kernel(kernel, (t,), {"axis": axes, "keep_dims": bool(keep_dims)})


def all(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Logical AND over ``axis`` (all axes by default) of a bool tensor; True over no elements."""
    return _logical(kn.All, "all", x, axis, keep_dims)


def any(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Logical OR over ``axis`` (all axes by default) of a bool tensor; False over no elements."""
    return _logical(kn.Any, "any", x, axis, keep_dims)


def _arg(kernel: str, op: str, x: Any, axis: Any) -> Tensor:
    with converted(x, "x", op) as t:
        _check_numeric(t, op, complex_ok=False)
        if isinstance(axis, list | tuple):  # TF.js takes an axis list and reduces its one axis
            if len(axis) != 1:
                raise ValueError(f"{op}: argument 'axis' must be one axis, got {list(axis)}")
            axis = axis[0]
        return ENGINE.run_kernel(kernel, (t,), {"axis": normalize_axis(axis, t.rank, op)})


def arg_max(x: TensorLike, axis: int = 0) -> Tensor:
    """Index (int32) of the largest value along ``axis``; the first one on ties."""
    return _arg(kn.ArgMax, "arg_max", x, axis)


def arg_min(x: TensorLike, axis: int = 0) -> Tensor:
    """Index (int32) of the smallest value along ``axis``; the first one on ties."""
    return _arg(kn.ArgMin, "arg_min", x, axis)


def log_sum_exp(x: TensorLike, axis: Axis = None, keep_dims: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``axis`` (all axes by default), computed stably, as float32.

    As TF (and unlike TF.js), a non-finite maximum is not subtracted, so infinite inputs give
    +-Infinity rather than NaN and an empty reduction gives -Infinity.
    """
    with converted(x, "x", "log_sum_exp") as t:
        _check_numeric(t, "log_sum_exp", complex_ok=False)
        axes = normalize_axes(axis, t.rank, "log_sum_exp")
        return ENGINE.tidy(None, _log_sum_exp, (t, axes, bool(keep_dims)), {})


def _log_sum_exp(t: Tensor, axes: tuple[int, ...], keep_dims: bool) -> Tensor:
    from . import arithmetic, logical, shape, unary  # composite; imported here to keep families independent

    xf = t if t.dtype == "float32" else shape.cast(t, "float32")
    x_max = max(xf, axes, True)
    finite = logical.equal(arithmetic.sub(x_max, x_max), 0)  # x - x is 0 exactly when x is finite
    shift = logical.where(finite, x_max, 0.0)
    total = sum(unary.exp(arithmetic.sub(xf, shift)), axes, keep_dims)
    return arithmetic.add(unary.log(total), shift if keep_dims else shape.reshape(shift, list(total.shape)))


def moving_average(
    v: TensorLike, x: TensorLike, decay: TensorLike, step: TensorLike | None = None, zero_debias: bool = True
) -> Tensor:
    """``v + (1 - decay) * (x - v)``, divided by ``1 - decay ** step`` when ``zero_debias`` (the default)."""
    op = "moving_average"
    with converted(v, "v", op) as tv, converted(x, "x", op) as tx, converted(decay, "decay", op) as td:
        for name, t in (("v", tv), ("x", tx), ("decay", td)):
            if t.dtype == "string":
                raise TypeError(f"{op}: argument '{name}' must be numeric, got a string tensor")
        if tv.dtype != tx.dtype:
            raise TypeError(f"{op}: the dtypes of 'v' ({tv.dtype}) and 'x' ({tx.dtype}) must match")
        if tv.shape != tx.shape:
            raise ValueError(f"{op}: the shapes of 'v' {list(tv.shape)} and 'x' {list(tx.shape)} must match")
        if not zero_debias:
            return ENGINE.tidy(None, _moving_average, (tv, tx, td, None), {})
        if step is None:
            raise ValueError(f"{op}: argument 'step' is required when zero_debias is true")
        with converted(step, "step", op) as ts:
            if ts.dtype == "string":
                raise TypeError(f"{op}: argument 'step' must be numeric, got a string tensor")
            return ENGINE.tidy(None, _moving_average, (tv, tx, td, ts), {})


def _moving_average(v: Tensor, x: Tensor, decay: Tensor, step: Tensor | None) -> Tensor:
    from . import arithmetic as a

    one = ENGINE.make_tensor(np.array(1, np.float32), (), "float32")
    update = a.mul(a.sub(x, v), a.sub(one, decay))
    if step is not None:  # zero debiasing
        update = a.div(update, a.sub(one, a.pow(decay, step)))
    return a.add(v, update)


def sum_out_type(dtype: str) -> str:
    """The dtype a sum of ``dtype`` values has (TF.js's ``sumOutType``): bool -> int32, others unchanged."""
    dtype = check_dtype(dtype, "sum_out_type")
    if dtype == "string":
        raise TypeError("sum_out_type: argument 'dtype' must be numeric, got 'string'")
    return upcast_type(dtype, "int32")


__all__ = [
    "sum", "mean", "max", "min", "prod", "all", "any", "arg_max", "arg_min", "log_sum_exp", "moving_average",
    "sum_out_type",
]  # fmt: skip

CHAINED = [sum, mean, max, min, prod, all, any, arg_max, arg_min, log_sum_exp]  # also Tensor methods: x.sum(...)
