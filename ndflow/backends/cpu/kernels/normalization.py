"""Normalization: FusedBatchNorm, LRN, LRNGrad, LogSoftmax."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of
from .pool import store_like_tfjs


def _values(backend: CPUBackend, t) -> np.ndarray:
    return values_of(backend, t)


def _param(backend: CPUBackend, t) -> np.ndarray:
    """A batch-norm parameter as float64, leading 1-dims dropped so that it broadcasts like TF.js."""
    values = _values(backend, t).astype(np.float64)
    lead = 0
    while lead < values.ndim and values.shape[lead] == 1:
        lead += 1
    return values.reshape(values.shape[lead:])


@cpu_kernel(kn.FusedBatchNorm)
def fused_batch_norm(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, mean, variance[, offset][, scale]) as ``has_offset``/``has_scale`` say:
    ``offset + (x - mean) * scale / sqrt(variance + variance_epsilon)``, broadcast over x."""
    x, mean, variance, *rest = inputs
    offset = _param(backend, rest.pop(0)) if attrs.get("has_offset") else 0.0
    scale = _param(backend, rest.pop(0)) if attrs.get("has_scale") else 1.0
    eps = attrs["variance_epsilon"]
    xs = _values(backend, x).astype(np.float64)
    result = (xs - _param(backend, mean)) * scale / np.sqrt(_param(backend, variance) + eps) + offset
    result = np.broadcast_to(result, x.shape)
    return _float32_out(backend, result, x.dtype)


def _running(values: np.ndarray, radius: int) -> np.ndarray:
    """Window sums (channels c - radius .. c + radius) from one cumulative sum, finite values only.

    The cumulative sum is laid out with its first value repeated ``radius`` times before and its
    last after, so both window ends are plain slices (no gather)."""
    channels = values.shape[-1]
    r = min(radius, channels)
    padded = np.zeros(values.shape[:-1] + (channels + 2 * r + 1,), dtype=np.float64)
    np.cumsum(values, axis=-1, out=padded[..., r + 1 : r + 1 + channels])
    padded[..., r + 1 + channels :] = padded[..., r + channels : r + channels + 1]
    return padded[..., 2 * r + 1 : 2 * r + 1 + channels] - padded[..., :channels]


def _window_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Sum over channels c - radius .. c + radius (clipped to the channel range) along the last axis.

    Running sums make it O(channels) whatever the radius; NaN and infinities are counted apart so
    that they reach only the windows that hold them."""
    if radius < 0:
        return np.zeros(values.shape, dtype=np.float64)
    finite = np.isfinite(values)
    if finite.all():
        return _running(values, radius)
    total = _running(np.where(finite, values, 0.0), radius)
    nan = _running(np.isnan(values).astype(np.float64), radius) > 0
    pos = _running((values == np.inf).astype(np.float64), radius) > 0
    neg = _running((values == -np.inf).astype(np.float64), radius) > 0
    total = np.where(pos, np.inf, np.where(neg, -np.inf, total))
    return np.where(nan | (pos & neg), np.nan, total)


def _float32_out(backend: CPUBackend, result: np.ndarray, dtype: str) -> Output:
    """Results stored as TF.js does: through a Float32Array, whatever the tensor's dtype."""
    result = result.astype(np.float32)
    return out(backend, result if dtype == "float32" else store_like_tfjs(result.astype(np.float64), dtype), dtype)


@cpu_kernel(kn.LRN)
def lrn(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """x * (bias + alpha * sum of x**2 over nearby channels) ** -beta, on a 4D channels-last x."""
    (x,) = inputs
    radius, bias, alpha, beta = attrs["depth_radius"], attrs["bias"], attrs["alpha"], attrs["beta"]
    xs = _values(backend, x).astype(np.float64)
    if xs.size == 0:
        return out(backend, np.zeros(x.shape), x.dtype)
    norm = bias + alpha * _window_sum(xs * xs, radius)
    return _float32_out(backend, xs * np.power(norm, -beta), x.dtype)


@cpu_kernel(kn.LRNGrad)
def lrn_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, y, dy) -> dx of LRN, with the forward's attributes."""
    x, y, dy = inputs
    radius, bias, alpha, beta = attrs["depth_radius"], attrs["bias"], attrs["alpha"], attrs["beta"]
    xs = _values(backend, x).astype(np.float64)
    if xs.size == 0:
        return out(backend, np.zeros(dy.shape), x.dtype)
    ys = _values(backend, y).astype(np.float64)
    dys = _values(backend, dy).astype(np.float64)
    norm = alpha * _window_sum(xs * xs, radius) + bias
    # Channel k feels every channel c with |c - k| <= radius through norm_c, and itself directly.
    result = -2.0 * alpha * beta * xs * _window_sum(dys * ys / norm, radius)
    if radius >= 0:
        result += dys * np.power(norm, -beta)
    return _float32_out(backend, result, x.dtype)


@cpu_kernel(kn.LogSoftmax)
def log_softmax(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """(x - max) - log(sum(exp(x - max))) along ``axis``, as float32."""
    (x,) = inputs
    axis = attrs["axis"]
    values = _values(backend, x)
    if values.size == 0:
        return out(backend, np.zeros(x.shape), "float32")
    if values.dtype.kind == "b":
        values = values.astype(np.float32)
    shifted = (values - values.max(axis=axis, keepdims=True)).astype(np.float64)
    result = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return out(backend, result, "float32")
