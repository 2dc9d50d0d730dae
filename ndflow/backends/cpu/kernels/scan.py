"""Scans along one axis: Cumsum, Cumprod (exclusive and reverse)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _scan(backend: CPUBackend, inputs: tuple, attrs: dict, ufunc: np.ufunc, identity: int) -> Output:
    (x,) = inputs
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]
    dtype = "float32" if x.dtype == "float32" else "int32"  # TF.js: upcast with int32 (bool -> int32)
    values = values_of(backend, x).astype(np.float32 if dtype == "float32" else np.int32, copy=False)
    if reverse:
        values = np.flip(values, axis)
    if exclusive:  # each position sees the values before it: shift by one, identity first
        lead = [slice(None)] * values.ndim
        lead[axis] = slice(0, values.shape[axis] - 1) if values.shape[axis] else slice(0, 0)
        pad = [(0, 0)] * values.ndim
        pad[axis] = (1, 0) if values.shape[axis] else (0, 0)
        values = np.pad(values[tuple(lead)], pad, constant_values=identity)
    result = ufunc.accumulate(values, axis=axis, dtype=values.dtype)  # float32 running value, as TF.js
    if reverse:
        result = np.flip(result, axis)
    return out(backend, np.ascontiguousarray(result), dtype)


@cpu_kernel(kn.Cumsum)
def cumsum(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _scan(backend, inputs, attrs, np.add, 0)


@cpu_kernel(kn.Cumprod)
def cumprod(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _scan(backend, inputs, attrs, np.multiply, 1)
