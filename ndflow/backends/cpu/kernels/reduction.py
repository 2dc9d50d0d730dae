"""Reductions over axes: Sum, Prod, Mean, Max, Min, All, Any, ArgMax, ArgMin."""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ....core.kernel_registry import register_direct_reduction
from ...shared.reduction import check_arg_axis
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _axes(attrs: dict) -> tuple[tuple[int, ...], bool]:
    return tuple(attrs["axis"]), attrs["keep_dims"]


@cpu_kernel(kn.Sum)
def sum_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    values = values_of(backend, x)
    dtype = "int32" if x.dtype == "bool" else x.dtype
    lead = _leading_sum(values, axes, keep)
    if lead is not None:
        return out(backend, lead, dtype)
    return out(backend, np.sum(values, axis=axes, keepdims=keep, dtype=NUMPY_DTYPE[dtype]), dtype)


def _sum_all(values: np.ndarray) -> np.ndarray:
    """Sum's direct form over every axis (compiled dispatch): the kernel's own call."""
    return np.sum(values, axis=tuple(range(values.ndim)), dtype=values.dtype)  # the storage type (float32)


register_direct_reduction(kn.Sum, "cpu", _sum_all)


def _leading_sum(values: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray | None:
    """A float32 sum over leading axes (a bias gradient) in two stages, or None where it does not apply.

    numpy reduces a tall, narrow (rows, C) array row by row with C-wide adds, slow for small C; rows
    folded into blocks of 64 make the adds 64*C wide, then the 64 partial sums are added: about 15x
    faster, and closer to the exact sum (two shorter chains of float32 additions)."""
    if len(axes) >= values.ndim or values.size < 256 or values.dtype != np.float32:
        return None  # (cheap checks first: this runs before every Sum)
    axes = tuple(sorted(a % values.ndim for a in axes))
    if axes != tuple(range(len(axes))) or not values.flags.c_contiguous:
        return None
    rows = math.prod(values.shape[: len(axes)])
    if rows < 256:
        return None
    flat = values.reshape(rows, -1)
    k = 64
    body = rows - rows % k
    total = flat[:body].reshape(body // k, k * flat.shape[1]).sum(0).reshape(k, -1).sum(0)
    if body < rows:
        total += flat[body:].sum(0)
    return total.reshape(((1,) * len(axes) if keep else ()) + values.shape[len(axes) :])


@cpu_kernel(kn.Mean)
def mean(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    values = values_of(backend, x)
    dtype = "complex64" if x.dtype == "complex64" else "float32"
    count = math.prod(values.shape[a] for a in axes)
    total = np.sum(values, axis=axes, keepdims=keep, dtype=NUMPY_DTYPE[dtype])
    # sum / count, as np.mean does, without its warning: an empty mean is 0 / 0 = NaN (TF.js gives 0)
    return out(backend, total / NUMPY_DTYPE[dtype].type(count), dtype)


def _extreme(backend: CPUBackend, inputs: tuple, attrs: dict, fn: np.ufunc) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    values = values_of(backend, x)
    if values.size == 0:  # TF.js reads past the end: NaN for floats, 0 once stored as int32
        shape = np.sum(values, axis=axes, keepdims=keep).shape
        return out(backend, np.full(shape, np.nan if x.dtype == "float32" else 0), x.dtype)
    return out(backend, _extreme_values(fn, values, axes, keep), x.dtype)


# Inner sizes (values after the reduced axis) below which numpy's reduction of a middle axis runs short inner
# loops: the axis goes first in a contiguous copy instead (4x faster on movenet-multipose's (56, 56, 6, 17) max).
_SHORT_INNER = 64


def _extreme_values(fn: np.ufunc, values: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    """``fn.reduce`` (maximum or minimum: exact, NaN-propagating) over ``axes``. One middle axis with a short
    inner size reduces as the first axis of a contiguous copy: the same values, compared in the same order."""
    if len(axes) == 1 and values.ndim > 2 and values.size >= 4096:
        axis = axes[0] % values.ndim
        if 0 < axis < values.ndim - 1 and math.prod(values.shape[axis + 1 :]) < _SHORT_INNER:
            moved = np.ascontiguousarray(np.moveaxis(values, axis, 0))
            result = fn.reduce(moved, axis=0)
            return np.expand_dims(result, axis) if keep else result
    return fn.reduce(values, axis=axes, keepdims=keep)


@cpu_kernel(kn.Max)
def max_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _extreme(backend, inputs, attrs, np.maximum)


@cpu_kernel(kn.Min)
def min_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _extreme(backend, inputs, attrs, np.minimum)


@cpu_kernel(kn.Prod)
def prod(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    values = values_of(backend, x)
    if x.dtype == "float32":  # TF.js multiplies in doubles and rounds once
        return out(backend, np.prod(values, axis=axes, keepdims=keep, dtype=np.float64), "float32")
    return out(backend, np.prod(values, axis=axes, keepdims=keep, dtype=np.int32), "int32")


@cpu_kernel(kn.All)
def all_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    return out(backend, np.all(values_of(backend, x), axis=axes, keepdims=keep), "bool")


@cpu_kernel(kn.Any)
def any_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    return out(backend, np.any(values_of(backend, x), axis=axes, keepdims=keep), "bool")


def _arg(backend: CPUBackend, inputs: tuple, attrs: dict, op: str, find: object, never: float) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    axis = attrs["axis"]
    check_arg_axis(op, x.shape, axis)
    if values.dtype.kind != "f":
        return out(backend, find(values, axis=axis), "int32")
    # TF.js keeps the first value unless a later one strictly beats it: NaN never wins,
    # except a leading NaN, which nothing beats.
    nan = np.isnan(values)
    if not nan.any():  # (the common case: no NaN to keep from winning)
        return out(backend, find(values, axis=axis), "int32")
    index = find(np.where(nan, never, values), axis=axis)
    first_nan = np.take(nan, 0, axis=axis)
    return out(backend, np.where(first_nan, 0, index), "int32")


@cpu_kernel(kn.ArgMax)
def arg_max(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _arg(backend, inputs, attrs, "arg_max", np.argmax, -np.inf)


@cpu_kernel(kn.ArgMin)
def arg_min(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _arg(backend, inputs, attrs, "arg_min", np.argmin, np.inf)
