"""Reductions over axes: Sum, Prod, Mean, Max, Min, All, Any, ArgMax, ArgMin.

An empty axis list reduces nothing (torch would reduce everything).
"""

from __future__ import annotations

import functools
import math

import torch

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct_reduction
from ...shared.reduction import check_arg_axis
from ..backend import TorchBackend
from .common import Output, out, torch_dtype, torch_kernel, values_of
from .common import keep as keep_


def _axes(attrs: dict) -> tuple[tuple[int, ...], bool]:
    return tuple(attrs["axis"]), attrs["keep_dims"]


@functools.lru_cache(maxsize=4096)
def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep: bool) -> tuple[int, ...]:
    """The shape after reducing ``axes`` (kept as 1s with ``keep``)."""
    rank = len(shape)
    axes_set = {a % rank for a in axes} if rank else set()
    if keep:
        return tuple(1 if i in axes_set else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes_set)


@torch_kernel(kn.Sum)
def sum_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    v = values_of(backend, x)
    shape = reduced_shape(x.shape, axes, keep)
    if x.dtype == "bool":
        return out(backend, torch.sum(v, dim=axes, keepdim=keep, dtype=torch.int32) if axes else v, "int32", shape)
    if not axes:
        return keep_(backend, v.clone(), shape, x.dtype)
    if x.dtype == "int32":  # torch would widen to int64
        return keep_(backend, torch.sum(v, dim=axes, keepdim=keep, dtype=torch.int32), shape, "int32")
    if not keep and len(axes) == v.dim():  # a full reduction: torch's scalar sum is the faster call
        return keep_(backend, torch.sum(v), shape, x.dtype)
    return keep_(backend, torch.sum(v, dim=axes, keepdim=keep), shape, x.dtype)


# torch sums up to this many values on one thread whatever its thread count (its reduction grain): there the
# full sum's direct form gives the kernel's order, whatever thread policy the kernel runs under.
register_direct_reduction(kn.Sum, "torch", torch.sum, max_size=32768)


@torch_kernel(kn.Mean)
def mean(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    v = values_of(backend, x)
    dtype = "complex64" if x.dtype == "complex64" else "float32"
    shape = reduced_shape(x.shape, axes, keep)
    if x.dtype in ("float32", "complex64"):
        work = torch_dtype(dtype)
    else:  # TF.js casts to float32, then sums in JS numbers (float64)
        v, work = v.to(torch.float32), torch.float64
    if not axes:
        return out(backend, v.to(work, copy=True), dtype, shape)
    count = math.prod(x.shape[a] for a in axes)
    total = torch.sum(v, dim=axes, keepdim=keep, dtype=work)
    # sum / count: an empty mean is 0 / 0 = NaN
    return out(backend, total / count if count else total * math.nan, dtype, shape)


def _extreme(backend: TorchBackend, inputs: tuple, attrs: dict, fn, logical) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    v = values_of(backend, x)
    shape = reduced_shape(x.shape, axes, keep)
    if v.numel() == 0:  # TF.js reads past the end: NaN for floats, 0 once stored as int32
        fill = math.nan if x.dtype == "float32" else 0
        return out(backend, torch.full(shape, fill, dtype=torch_dtype(x.dtype), device=v.device), x.dtype, shape)
    if not axes:
        return out(backend, v.clone(), x.dtype, shape)
    if x.dtype == "bool":
        return out(backend, logical(v, dim=axes, keepdim=keep), "bool", shape)
    return out(backend, fn(v, dim=axes, keepdim=keep), x.dtype, shape)  # NaN propagates


@torch_kernel(kn.Max)
def max_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _extreme(backend, inputs, attrs, torch.amax, torch.any)


@torch_kernel(kn.Min)
def min_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _extreme(backend, inputs, attrs, torch.amin, torch.all)


def reduce_over(v: torch.Tensor, axes: tuple[int, ...], keep: bool, fn) -> torch.Tensor:
    """``fn(v, dim=-1)`` over several axes at once: the axes moved to the end and flattened."""
    rank = v.dim()
    axes = tuple(sorted(a % rank for a in axes))
    rest = [i for i in range(rank) if i not in axes]
    moved = v.permute(*rest, *axes).reshape(*[v.shape[i] for i in rest], math.prod(v.shape[i] for i in axes))
    result = fn(moved, dim=-1)
    if keep:
        result = result.reshape([1 if i in axes else v.shape[i] for i in range(rank)])
    return result


@torch_kernel(kn.Prod)
def prod(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    v = values_of(backend, x)
    shape = reduced_shape(x.shape, axes, keep)
    if x.dtype == "float32":  # TF.js multiplies in doubles and rounds once
        work, dtype = v.double(), "float32"
    else:  # int32 products wrap modulo 2**32 (exact in int64 modulo 2**64)
        work, dtype = v.long(), "int32"
    if not axes:
        return out(backend, work.clone(), dtype, shape)
    result = reduce_over(work, axes, keep, torch.prod)
    return out(backend, result if dtype == "float32" else result.to(torch.int32), dtype, shape)


def _logical(backend: TorchBackend, inputs: tuple, attrs: dict, fn) -> Output:
    (x,) = inputs
    axes, keep = _axes(attrs)
    v = values_of(backend, x)
    shape = reduced_shape(x.shape, axes, keep)
    if not axes:
        return out(backend, v != 0 if v.dtype is not torch.bool else v.clone(), "bool", shape)
    return out(backend, fn(v, dim=axes, keepdim=keep), "bool", shape)


@torch_kernel(kn.All)
def all_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _logical(backend, inputs, attrs, torch.all)


@torch_kernel(kn.Any)
def any_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _logical(backend, inputs, attrs, torch.any)


def _arg(backend: TorchBackend, inputs: tuple, attrs: dict, op: str, find, never: float) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    axis = attrs["axis"]
    check_arg_axis(op, x.shape, axis)
    if not v.is_floating_point():  # torch.argmax/argmin return the first extreme, as TF.js
        return out(backend, find(v.to(torch.int32) if v.dtype is torch.bool else v, dim=axis), "int32")
    # TF.js keeps the first value unless a later one strictly beats it: NaN never wins,
    # except a leading NaN, which nothing beats.
    nan = torch.isnan(v)
    index = find(torch.where(nan, never, v), dim=axis)
    first_nan = nan.select(axis, 0)
    return out(backend, torch.where(first_nan, 0, index), "int32")


@torch_kernel(kn.ArgMax)
def arg_max(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _arg(backend, inputs, attrs, "arg_max", torch.argmax, -math.inf)


@torch_kernel(kn.ArgMin)
def arg_min(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _arg(backend, inputs, attrs, "arg_min", torch.argmin, math.inf)
