"""Tensors made from attributes: Fill, Range, LinSpace, ZerosLike, OnesLike."""

from __future__ import annotations

import math

import numpy as np
import torch

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ..backend import TorchBackend
from .common import Output, out, run_on_host, torch_dtype, torch_kernel


def _scalar_as(value: object, dtype: str) -> object:
    """``value`` converted as numpy's ``full(..., dtype)`` converts it (truncation for int32)."""
    return np.asarray(value).astype(NUMPY_DTYPE[dtype])[()].item()


@torch_kernel(kn.Fill)
def fill(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    dtype = attrs["dtype"]
    if dtype == "string":
        return run_on_host("Fill", backend, inputs, attrs)
    shape = tuple(attrs["shape"])
    value = _scalar_as(attrs["value"], dtype)
    return out(backend, torch.full(shape, value, dtype=torch_dtype(dtype), device=backend.device), dtype, shape)


@torch_kernel(kn.Range)
def range_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    start, stop, step, dtype = attrs["start"], attrs["stop"], attrs["step"], attrs["dtype"]
    n = max(math.ceil((stop - start) / step), 0)
    values = torch.arange(n, dtype=torch.float64, device=backend.device) * step + start
    if dtype == "int32":
        values = torch.trunc(values)
    return out(backend, values, dtype, (n,))


@torch_kernel(kn.LinSpace)
def lin_space(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    start, stop, num = attrs["start"], attrs["stop"], attrs["num"]
    step = (stop - start) / (num - 1) if num > 1 else 0.0
    f32 = torch.float32
    values = torch.arange(num, dtype=f32, device=backend.device) * float(np.float32(step)) + float(np.float32(start))
    return out(backend, values, "float32", (num,))


def _like(backend: TorchBackend, inputs: tuple, attrs: dict | None, name: str, value: int) -> Output:
    (x,) = inputs
    if x.dtype == "string":
        return run_on_host(name, backend, inputs, attrs)
    return out(backend, torch.full(x.shape, value, dtype=torch_dtype(x.dtype), device=backend.device), x.dtype, x.shape)


@torch_kernel(kn.ZerosLike)
def zeros_like(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _like(backend, inputs, attrs, "ZerosLike", 0)


@torch_kernel(kn.OnesLike)
def ones_like(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _like(backend, inputs, attrs, "OnesLike", 1)
