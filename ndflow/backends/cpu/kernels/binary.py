"""Element-wise binary arithmetic with broadcasting: Add, Sub, Multiply, RealDiv, FloorDiv, Mod,
Pow, Maximum, Minimum, SquaredDifference, Atan2; and AddN.

TF.js's cpu kernels compute in float64 (JS numbers) and store into a typed array of the output
dtype; :func:`store` reproduces that store for int32 (truncation, wrapping modulo 2**32) and bool
(a Uint8Array: truncation modulo 256, then non-zero)."""

from __future__ import annotations

import numpy as np

from ....core.kernel_registry import register_direct
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

_TWO32 = 4294967296.0


def to_int32(values: np.ndarray) -> np.ndarray:
    """Numbers stored into an Int32Array, as TF.js does: truncation, 0 for NaN/Infinity, and
    wrapping modulo 2**32."""
    r = np.where(np.isfinite(values), np.trunc(values), 0)
    if r.size and (r.max() >= 2147483648.0 or r.min() < -2147483648.0):
        r = np.fmod(r.astype(np.float64, copy=False), _TWO32).astype(np.int64)
    return r.astype(np.int32)


def to_bool(values: np.ndarray) -> np.ndarray:
    """Numbers stored into the Uint8Array of a bool tensor: truncation modulo 256, then non-zero."""
    if values.dtype.kind in "biu":
        return (values % 256 != 0) if values.dtype.kind != "b" else values
    return np.isfinite(values) & (np.fmod(np.trunc(values), 256) != 0)


def store(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` (float results) as TF.js's typed array of ``dtype`` would hold them."""
    if dtype == "int32":
        return to_int32(values)
    if dtype == "bool":
        return to_bool(values)
    return values


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
    if dtype == "bool":  # 1 - 0 = 1 and 0 - 1 = -1 (255 in a Uint8Array): true exactly where a != b
        return out(backend, np.not_equal(a, b), dtype)
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


# The float32 forms (same-shaped float32 operands, or a float32 array and a float32 scalar).
for _name, _fn in (("Add", np.add), ("Sub", np.subtract), ("Multiply", np.multiply), ("RealDiv", np.divide)):
    register_direct(_name, "cpu", _fn)


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
    return out(backend, store(r, dtype), dtype)


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
    if dtype == "bool":  # (a - b) ** 2 is 1 exactly where a != b
        return out(backend, np.not_equal(a, b), dtype)
    d = np.subtract(a, b)
    return out(backend, np.multiply(d, d), dtype)


@cpu_kernel("Atan2")
def atan2(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "float32":
        return out(backend, np.arctan2(a, b), dtype)
    return out(backend, store(np.arctan2(a.astype(np.float64), b.astype(np.float64)), dtype), dtype)


@cpu_kernel("AddN")
def add_n(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The sum of same-shaped tensors, added in order; bools count modulo 256 (a Uint8Array)."""
    dtype = inputs[0].dtype
    acc_dtype = np.int32 if dtype == "bool" else values_of(backend, inputs[0]).dtype
    total = np.array(values_of(backend, inputs[0]), dtype=acc_dtype, copy=True)
    for t in inputs[1:]:  # a loop over the (few) inputs, not over elements
        np.add(total, values_of(backend, t), out=total, casting="unsafe")
    return out(backend, to_bool(total) if dtype == "bool" else total, dtype)
