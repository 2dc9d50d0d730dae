"""TF.js's number semantics shared by the backends: values stored into typed arrays (int32 wraps, bool is
non-zero), the erf approximation and the activation constants TF.js uses."""

from __future__ import annotations

import math

import numpy as np

_TWO32 = 4294967296.0

# The SELU constants TF.js uses (Klambauer et al. 2017): scale * alpha, and scale.
SELU_SCALEALPHA = 1.7580993408473768599402175208123
SELU_SCALE = 1.0507009873554804934193349852946
# softplus: exp(x) below this, x above its negation (TF.js's threshold: log(float32 epsilon) + 2).
SOFTPLUS_THRESHOLD = math.log(1.1920928955078125e-7) + 2.0

# Abramowitz & Stegun 7.1.26, the approximation TF.js uses (|error| < 1.5e-7).
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


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


def js_number_as(value: float, dtype: str) -> float | int | bool:
    """A JS number stored into TF.js's typed array for ``dtype`` (Int32Array wraps, Uint8Array for bool)."""
    if dtype == "float32":
        return np.float32(value)
    if dtype in ("int32", "bool"):
        if not math.isfinite(value):
            return 0 if dtype == "int32" else False
        bits = 32 if dtype == "int32" else 8
        n = math.trunc(value) & ((1 << bits) - 1)
        if dtype == "bool":
            return n != 0
        return n - (1 << 32) if n >= 1 << 31 else n
    return value


def erf(v: np.ndarray, attrs: dict | None = None) -> np.ndarray:
    """TF.js's erf (Abramowitz & Stegun 7.1.26), computed in float64 and returned in ``v``'s dtype."""
    x = v.astype(np.float64)
    a = np.abs(x)
    t = 1.0 / (1.0 + ERF_P * a)
    a1, a2, a3, a4, a5 = ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(v.dtype)
