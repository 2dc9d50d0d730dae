"""Element-wise binary arithmetic with broadcasting: Add, Sub, Multiply, RealDiv, FloorDiv, Mod,
Pow, Maximum, Minimum, SquaredDifference."""

from __future__ import annotations

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _args(backend: CPUBackend, inputs: tuple) -> tuple[np.ndarray, np.ndarray, str]:
    a, b = inputs
    return values_of(backend, a), values_of(backend, b), a.dtype


@cpu_kernel("Add")
def add(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":
        return out(backend, np.logical_or(a, b), dtype)
    return out(backend, np.add(a, b), dtype)


@cpu_kernel("Sub")
def sub(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":
        return out(backend, np.subtract(a, b, dtype=np.int32), "int32")
    return out(backend, np.subtract(a, b), dtype)


@cpu_kernel("Multiply")
def multiply(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":
        return out(backend, np.logical_and(a, b), dtype)
    return out(backend, np.multiply(a, b), dtype)


@cpu_kernel("RealDiv")
def real_div(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype in ("float32", "complex64"):
        return out(backend, np.divide(a, b), dtype)
    return out(backend, np.divide(a, b, dtype=np.float32), "float32")


def to_int32(values: np.ndarray) -> np.ndarray:
    """Numbers stored into an Int32Array, as TF.js does: truncation, and 0 for NaN/Infinity."""
    return np.where(np.isfinite(values), np.trunc(values), 0).astype(np.int32)


@cpu_kernel("FloorDiv")
def floor_div(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """floor(a / b); TF.js's kernel always returns int32, whatever the input dtype."""
    a, b, dtype = _args(backend, inputs)
    q = np.floor(np.divide(a, b, dtype=np.float64 if dtype == "int32" else np.float32))
    return out(backend, to_int32(q), "int32")


@cpu_kernel("Mod")
def mod(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    # The remainder takes the sign of the divisor; NaN (0 for int32) where b == 0.
    r = np.fmod(a if dtype == "float32" else a.astype(np.float64), b)
    r = np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return out(backend, r, dtype) if dtype == "float32" else out(backend, to_int32(r), "int32")


@cpu_kernel("Pow")
def pow_(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "int32":
        return out(backend, to_int32(np.power(a.astype(np.float64), b.astype(np.float64))), dtype)
    r = np.power(a, b)
    if dtype == "float32":
        r = np.where((a == 1) & np.isnan(b), np.float32(np.nan), r)  # JS: 1 ** NaN is NaN
    return out(backend, r, dtype)


@cpu_kernel("Maximum")
def maximum(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    return out(backend, np.maximum(a, b), "int32" if dtype == "bool" else dtype)


@cpu_kernel("Minimum")
def minimum(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    return out(backend, np.minimum(a, b), "int32" if dtype == "bool" else dtype)


@cpu_kernel("SquaredDifference")
def squared_difference(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    d = np.subtract(a, b)
    return out(backend, np.multiply(d, d), dtype)
