"""Element-wise binary arithmetic with broadcasting: Add, Sub, Multiply, RealDiv, FloorDiv, Mod,
Pow, Maximum, Minimum, SquaredDifference, Atan2; and AddN.

TF.js's cpu kernels compute in float64 (JS numbers) and store into a typed array of the output
dtype; :func:`store` reproduces that store for int32 (truncation, wrapping modulo 2**32) and bool
(a Uint8Array: truncation modulo 256, then non-zero)."""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ...shared.numbers import store, to_bool, to_int32
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

# A channel vector broadcast against a channels-last array runs numpy's inner loop once per position (3 values
# for an image's channels: 10x slower than one pass). :func:`apply` repeats the vector along a row of up to
# PERIOD_MAX values and runs the array as rows of that length instead: the same element operations.
PERIOD_MAX = 4096
_PERIOD_MIN_SIZE = 4096  # below, the reshaping costs more than it saves
_PERIOD_MAX_CHANNELS = 64  # from here numpy's inner loop is long enough
# From 8 channels, numpy's loop over positions beats building the row below this many positions (measured: 8,192
# values of 32 channels 2.5 us as numpy, 4.2 us as rows; 73,728 values 15 us vs 11.7 us).
_PERIOD_MIN_POSITIONS = 1024


def _period(big: np.ndarray, small: np.ndarray) -> int:
    """How many times to repeat ``small`` (one value per channel of ``big``'s last axis) along a row of
    ``big``'s values, or 0 where the row form does not apply."""
    if big.ndim == 0 or small.ndim > big.ndim or big.size < _PERIOD_MIN_SIZE or not big.flags.c_contiguous:
        return 0
    channels = big.shape[-1]
    if small.ndim == 0 or channels < 2 or channels >= _PERIOD_MAX_CHANNELS:
        return 0
    if small.size != channels or small.shape[-1] != channels:
        return 0
    if channels >= 8 and big.size // channels < _PERIOD_MIN_POSITIONS:
        return 0
    limit = PERIOD_MAX // channels
    reps = math.gcd(big.size // channels, 1 << (limit.bit_length() - 1))  # a power of two dividing the positions
    return reps if reps >= 16 else 0


def apply(fn: np.ufunc, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``fn(a, b)`` with numpy's broadcasting and values; a channel vector against a channels-last array
    runs as rows of repeated channels (see PERIOD_MAX)."""
    if a.shape == b.shape or a.dtype != b.dtype:
        return fn(a, b)
    if a.size >= b.size:
        reps = _period(a, b)
        if reps:
            row = _repeated(b, reps)
            return fn(a.reshape(-1, row.size), row).reshape(a.shape)
    else:
        reps = _period(b, a)
        if reps:
            row = _repeated(a, reps)
            return fn(row, b.reshape(-1, row.size)).reshape(b.shape)
    return fn(a, b)


def _repeated(v: np.ndarray, reps: int) -> np.ndarray:
    """``v``'s values repeated ``reps`` times in one row (``np.tile``'s result, without its Python layers)."""
    row = np.empty((reps, v.size), dtype=v.dtype)
    row[...] = v.reshape(-1)
    return row.reshape(-1)


def _args(backend: CPUBackend, inputs: tuple) -> tuple[np.ndarray, np.ndarray, str]:
    a, b = inputs
    return values_of(backend, a), values_of(backend, b), a.dtype


@cpu_kernel(kn.Add)
def add(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":
        return out(backend, np.logical_or(a, b), dtype)
    return out(backend, apply(np.add, a, b), dtype)


@cpu_kernel(kn.Sub)
def sub(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":  # 1 - 0 = 1 and 0 - 1 = -1 (255 in a Uint8Array): true exactly where a != b
        return out(backend, np.not_equal(a, b), dtype)
    return out(backend, apply(np.subtract, a, b), dtype)


@cpu_kernel(kn.Multiply)
def multiply(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":
        return out(backend, np.logical_and(a, b), dtype)
    return out(backend, apply(np.multiply, a, b), dtype)


@cpu_kernel(kn.RealDiv)
def real_div(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype in ("float32", "complex64"):
        return out(backend, apply(np.divide, a, b), dtype)
    return out(backend, np.divide(a, b, dtype=np.float32), "float32")


# The float32 forms (same-shaped float32 operands, or a float32 array and a float32 scalar).
for _name, _fn in (("Add", np.add), ("Sub", np.subtract), ("Multiply", np.multiply), ("RealDiv", np.divide)):
    register_direct(_name, "cpu", _fn)


@cpu_kernel(kn.FloorDiv)
def floor_div(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """floor(a / b); TF.js's kernel always returns int32, whatever the input dtype."""
    a, b, dtype = _args(backend, inputs)
    q = np.floor(np.divide(a, b, dtype=np.float64 if dtype == "int32" else np.float32))
    return out(backend, to_int32(q), "int32")


@cpu_kernel(kn.Mod)
def mod(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    # The remainder takes the sign of the divisor; NaN (0 for int32) where b == 0.
    r = np.fmod(a if dtype == "float32" else a.astype(np.float64), b)
    r = np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return out(backend, store(r, dtype), dtype)


@cpu_kernel(kn.Pow)
def pow_(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "int32":
        return out(backend, to_int32(np.power(a.astype(np.float64), b.astype(np.float64))), dtype)
    r = np.power(a, b)
    if dtype == "float32":
        r = np.where((a == 1) & np.isnan(b), np.float32(np.nan), r)  # JS: 1 ** NaN is NaN
    return out(backend, r, dtype)


@cpu_kernel(kn.Maximum)
def maximum(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    return out(backend, apply(np.maximum, a, b), "int32" if dtype == "bool" else dtype)


@cpu_kernel(kn.Minimum)
def minimum(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    return out(backend, apply(np.minimum, a, b), "int32" if dtype == "bool" else dtype)


@cpu_kernel(kn.SquaredDifference)
def squared_difference(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "bool":  # (a - b) ** 2 is 1 exactly where a != b
        return out(backend, np.not_equal(a, b), dtype)
    d = apply(np.subtract, a, b)
    return out(backend, np.multiply(d, d), dtype)


@cpu_kernel(kn.Atan2)
def atan2(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b, dtype = _args(backend, inputs)
    if dtype == "float32":
        return out(backend, np.arctan2(a, b), dtype)
    return out(backend, store(np.arctan2(a.astype(np.float64), b.astype(np.float64)), dtype), dtype)


@cpu_kernel(kn.AddN)
def add_n(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The sum of same-shaped tensors, added in order; bools count modulo 256 (a Uint8Array)."""
    dtype = inputs[0].dtype
    acc_dtype = np.int32 if dtype == "bool" else values_of(backend, inputs[0]).dtype
    total = np.array(values_of(backend, inputs[0]), dtype=acc_dtype, copy=True)
    for t in inputs[1:]:  # a loop over the (few) inputs, not over elements
        np.add(total, values_of(backend, t), out=total, casting="unsafe")
    return out(backend, to_bool(total) if dtype == "bool" else total, dtype)
