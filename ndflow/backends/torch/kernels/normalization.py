"""Normalization: FusedBatchNorm, LRN, LRNGrad, LogSoftmax."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import F, Output, out, torch_kernel, values_of
from .pool import store_like_tfjs


def _param(backend: TorchBackend, t, dtype: torch.dtype) -> torch.Tensor:
    """A batch-norm parameter, leading 1-dims dropped so that it broadcasts like TF.js."""
    v = values_of(backend, t).to(dtype)
    lead = 0
    while lead < v.dim() and v.shape[lead] == 1:
        lead += 1
    return v.reshape(v.shape[lead:])


def _float32_out(backend: TorchBackend, result: torch.Tensor, dtype: str, shape: tuple[int, ...]) -> Output:
    """Results stored as TF.js does: through a Float32Array, whatever the tensor's dtype."""
    if dtype == "float32":
        return out(backend, result, dtype, shape)
    return out(backend, store_like_tfjs(result.to(torch.float32).double(), dtype), dtype, shape)


@torch_kernel(kn.FusedBatchNorm)
def fused_batch_norm(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, mean, variance[, offset][, scale]) as ``has_offset``/``has_scale`` say:
    ``offset + (x - mean) * scale / sqrt(variance + variance_epsilon)``, broadcast over x.

    float32 data is normalized in float32, int32 and bool data in float64."""
    x, mean, variance, *rest = inputs
    xv = values_of(backend, x)
    work = xv.dtype if xv.is_floating_point() else torch.float64
    offset = _param(backend, rest.pop(0), work) if attrs.get("has_offset") else None
    scale = _param(backend, rest.pop(0), work) if attrs.get("has_scale") else None
    inv = torch.rsqrt(_param(backend, variance, work) + attrs["variance_epsilon"])
    if scale is not None:
        inv = inv * scale
    centered = xv.to(work) - _param(backend, mean, work)
    result = centered * inv if offset is None else torch.addcmul(offset, centered, inv)
    if tuple(result.shape) != tuple(x.shape):
        result = result.expand(x.shape).contiguous()
    return _float32_out(backend, result, x.dtype, x.shape)


def _running(values: torch.Tensor, radius: int) -> torch.Tensor:
    """Window sums (channels c - radius .. c + radius) from one cumulative sum, finite values only."""
    channels = values.shape[-1]
    r = min(radius, channels)
    csum = torch.cumsum(values, dim=-1)
    zeros = torch.zeros(values.shape[:-1] + (r + 1,), dtype=values.dtype, device=values.device)
    tail = csum[..., -1:].expand(values.shape[:-1] + (r,))
    padded = torch.cat([zeros, csum, tail], dim=-1)
    return padded[..., 2 * r + 1 : 2 * r + 1 + channels] - padded[..., :channels]


def _window_sum(values: torch.Tensor, radius: int) -> torch.Tensor:
    """Sum over channels c - radius .. c + radius (clipped to the channel range) along the last axis;
    NaN and infinities are counted apart so that they reach only the windows that hold them."""
    if radius < 0:
        return torch.zeros_like(values)
    if values.device.type == "cpu" and bool(torch.isfinite(values.sum())):  # a finite sum: all finite
        return _running(values, radius)
    finite = torch.isfinite(values)
    total = _running(torch.where(finite, values, 0.0), radius)
    nan = _running(torch.isnan(values).double(), radius) > 0
    pos = _running((values == torch.inf).double(), radius) > 0
    neg = _running((values == -torch.inf).double(), radius) > 0
    total = torch.where(pos, torch.inf, torch.where(neg, -torch.inf, total))
    return torch.where(nan | (pos & neg), torch.nan, total)


@torch_kernel(kn.LRN)
def lrn(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """x * (bias + alpha * sum of x**2 over nearby channels) ** -beta, on a 4D channels-last x."""
    (x,) = inputs
    radius, bias, alpha, beta = attrs["depth_radius"], attrs["bias"], attrs["alpha"], attrs["beta"]
    xs = values_of(backend, x).double()
    if xs.numel() == 0:
        return out(backend, torch.zeros(x.shape, dtype=F(), device=backend.device), x.dtype, x.shape)
    norm = bias + alpha * _window_sum(xs * xs, radius)
    return _float32_out(backend, xs * torch.pow(norm, -beta), x.dtype, x.shape)


@torch_kernel(kn.LRNGrad)
def lrn_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, y, dy) -> dx of LRN, with the forward's attributes."""
    x, y, dy = inputs
    radius, bias, alpha, beta = attrs["depth_radius"], attrs["bias"], attrs["alpha"], attrs["beta"]
    xs = values_of(backend, x).double()
    if xs.numel() == 0:
        return out(backend, torch.zeros(dy.shape, dtype=F(), device=backend.device), x.dtype, dy.shape)
    ys = values_of(backend, y).double()
    dys = values_of(backend, dy).double()
    norm = alpha * _window_sum(xs * xs, radius) + bias
    # Channel k feels every channel c with |c - k| <= radius through norm_c, and itself directly.
    result = -2.0 * alpha * beta * xs * _window_sum(dys * ys / norm, radius)
    if radius >= 0:
        result = result + dys * torch.pow(norm, -beta)
    return _float32_out(backend, result, x.dtype, x.shape)


@torch_kernel(kn.LogSoftmax)
def log_softmax(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """(x - max) - log(sum(exp(x - max))) along ``axis``, as float32."""
    (x,) = inputs
    axis = attrs["axis"]
    v = values_of(backend, x)
    if v.numel() == 0:
        return out(backend, torch.zeros(x.shape, dtype=F(), device=backend.device), "float32", x.shape)
    if v.dtype is torch.bool:
        v = v.to(F())
    # x - max in x's dtype (int32 wraps, as in TF.js), then in float64
    shifted = (v - torch.amax(v, dim=axis, keepdim=True)).double()
    result = shifted - torch.log(torch.exp(shifted).sum(dim=axis, keepdim=True))
    return out(backend, result, "float32", x.shape)
