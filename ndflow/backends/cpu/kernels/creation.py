"""Tensors made from attributes: Fill, Range, LinSpace, ZerosLike, OnesLike."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out


@cpu_kernel(kn.Fill)
def fill(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    dtype = attrs["dtype"]
    return out(backend, np.full(tuple(attrs["shape"]), attrs["value"], dtype=NUMPY_DTYPE[dtype]), dtype)


@cpu_kernel(kn.Range)
def range_(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    start, stop, step, dtype = attrs["start"], attrs["stop"], attrs["step"], attrs["dtype"]
    n = max(int(np.ceil((stop - start) / step)), 0)
    values = start + step * np.arange(n, dtype=np.float64)
    return out(backend, values, dtype)


@cpu_kernel(kn.LinSpace)
def lin_space(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    start, stop, num = attrs["start"], attrs["stop"], attrs["num"]
    step = (stop - start) / (num - 1) if num > 1 else 0.0
    values = np.float32(start) + np.float32(step) * np.arange(num, dtype=np.float32)
    return out(backend, values, "float32")


@cpu_kernel(kn.ZerosLike)
def zeros_like(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, np.zeros(x.shape, dtype=NUMPY_DTYPE[x.dtype]), x.dtype)


@cpu_kernel(kn.OnesLike)
def ones_like(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, np.ones(x.shape, dtype=NUMPY_DTYPE[x.dtype]), x.dtype)
