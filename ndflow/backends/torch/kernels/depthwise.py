"""Per-channel filters: DepthwiseConv2dNative (+ backprops) and the morphological Dilation2D (+ backprops).

Depthwise convolutions are grouped torch convolutions (one group per input channel) on the same
channels_last views as ``conv.py``; TF's filter ``[kh, kw, in, multiplier]`` becomes torch's
``[in * multiplier, 1, kh, kw]`` (output channel ``c * multiplier + m``, as TF orders them).
Dilation2D has no torch counterpart: a small static loop over the filter taps does vectorised
work on the whole output per tap (a running maximum), as the cpu kernel does.
"""

from __future__ import annotations

import itertools
import math

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from ._threads import conv_forward_flops, depthwise_filter_grad_flops, depthwise_input_grad_flops
from .common import F, Output, out, torch_kernel
from .conv import (
    check_dy,
    conv_backprop_filter,
    conv_backprop_input,
    conv_forward,
    depthwise_weight_view,
    floats,
    from_torch_layout,
    geometry,
    info_from_attrs,
    prepared_weight,
    to_torch_layout,
)
from .conv3d import store_as

# ----------------------------------------------------------------------------- depthwise


@torch_kernel(kn.DepthwiseConv2dNative, parallel=conv_forward_flops)
def depthwise_conv2d_native(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; one filter (times a channel multiplier) per input channel."""
    x, f = inputs
    geo = geometry(x.shape, f.shape, attrs, "DepthwiseConv2dNative", depthwise=True)
    info = geo[0]
    weight = prepared_weight(backend, f, depthwise=True)
    y = conv_forward(to_torch_layout(floats(backend, x), info), weight, geo, groups=f.shape[2])
    return out(backend, from_torch_layout(y, info), x.dtype, info.out_shape)


@torch_kernel(kn.DepthwiseConv2dNativeBackpropInput, parallel=depthwise_input_grad_flops)
def depthwise_conv2d_native_backprop_input(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of DepthwiseConv2dNative for x."""
    dy, f = inputs
    kernel = "DepthwiseConv2dNativeBackpropInput"
    geo = geometry(tuple(attrs["input_shape"]), f.shape, attrs, kernel, depthwise=True)
    info = geo[0]
    check_dy(dy.shape, info, kernel)
    w = floats(backend, f)
    weight = depthwise_weight_view(w)
    dx = conv_backprop_input(to_torch_layout(floats(backend, dy), info), weight, geo, groups=w.shape[2])
    return out(backend, from_torch_layout(dx, info), "float32", info.in_shape)


@torch_kernel(kn.DepthwiseConv2dNativeBackpropFilter, parallel=depthwise_filter_grad_flops)
def depthwise_conv2d_native_backprop_filter(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of DepthwiseConv2dNative for its filter."""
    x, dy = inputs
    kernel = "DepthwiseConv2dNativeBackpropFilter"
    filter_shape = tuple(attrs["filter_shape"])
    kh, kw, c, m = filter_shape
    geo = geometry(x.shape, filter_shape, attrs, kernel, depthwise=True)
    info = geo[0]
    check_dy(dy.shape, info, kernel)
    xv = to_torch_layout(floats(backend, x), info)
    dw = conv_backprop_filter(xv, to_torch_layout(floats(backend, dy), info), geo, (c * m, 1, kh, kw), groups=c)
    return out(backend, dw.squeeze(1).permute(1, 2, 0).reshape(filter_shape).contiguous(), "float32", filter_shape)


# ----------------------------------------------------------------------------- dilation2d

MIN_SAFE_INTEGER = -9007199254740991.0  # TF.js's start value for the running maximum


def _dilation_info(x_shape: tuple[int, ...], f_shape: tuple[int, ...], attrs: dict, kernel: str):
    attrs = {**attrs, "data_format": "NHWC", "dim_rounding_mode": None}
    return info_from_attrs(x_shape, (*f_shape, f_shape[-1]), attrs, kernel)


def _taps(info) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(k) for k in info.filter_size)))


def _frame(x: torch.Tensor, info, fill: float) -> torch.Tensor:
    """Channels-last ``x`` placed so that every window lies inside (``fill`` outside the input)."""
    sizes = [
        (o - 1) * s + (k - 1) * d + 1 if o > 0 else 0
        for o, s, k, d in zip(info.out_size, info.strides, info.filter_size, info.dilations, strict=True)
    ]
    frame = torch.full((x.shape[0], *sizes, x.shape[-1]), fill, dtype=x.dtype, device=x.device)
    dst, src = [slice(None)], [slice(None)]
    for size, n, (before, _) in zip(sizes, x.shape[1:-1], info.pads, strict=True):
        lo, hi = max(0, before), min(size, n + before)
        if hi <= lo:
            return frame
        dst.append(slice(lo, hi))
        src.append(slice(lo - before, hi - before))
    frame[tuple(dst)] = x[tuple(src)]
    return frame


def _tap(tap: tuple[int, ...], info) -> tuple[slice, ...]:
    """The frame slice that tap ``tap`` reads for every output position."""
    return (
        slice(None),
        *(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, info.dilations, info.out_size, info.strides, strict=True)
        ),
        slice(None),
    )


def _dilation_dtype(*dtypes: str) -> torch.dtype:
    return F() if all(d == "float32" for d in dtypes) else torch.float64


def _per_tap(backend: TorchBackend, x, f, info) -> list[torch.Tensor]:
    """Per tap, ``x + filter`` for every output position (NaN where the window leaves the input)."""
    dtype = _dilation_dtype(x.dtype, f.dtype)
    frame = _frame(floats(backend, x, dtype), info, math.nan)
    fv = floats(backend, f, dtype)
    return [frame[_tap(tap, info)] + fv[tap] for tap in _taps(info)]


@torch_kernel(kn.Dilation2D)
def dilation2d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``: grayscale dilation, the max over each window of ``x + filter`` (NHWC)."""
    x, f = inputs
    info = _dilation_info(x.shape, f.shape, attrs, "Dilation2D")
    shape = (x.shape[0], *info.out_size, x.shape[-1])
    result = torch.full(shape, MIN_SAFE_INTEGER, dtype=_dilation_dtype(x.dtype, f.dtype), device=backend.device)
    if result.numel() and x.size:
        for values in _per_tap(backend, x, f, info):
            result = torch.fmax(result, values)  # fmax skips NaN: outside the input, or NaN input
    return out(backend, store_as(result, x.dtype), x.dtype, shape)


def _dilation_backprop(backend: TorchBackend, inputs: tuple, attrs: dict, kernel: str, for_input: bool) -> Output:
    x, f, dy = inputs
    info = _dilation_info(x.shape, f.shape, attrs, kernel)
    check_dy(dy.shape, info, kernel)
    target = x if for_input else f
    device = backend.device
    if dy.size == 0 or x.size == 0:
        return out(backend, torch.zeros(target.shape, dtype=torch.float64, device=device), target.dtype)
    stacked = torch.stack(_per_tap(backend, x, f, info))
    stacked = torch.where(torch.isnan(stacked), -math.inf, stacked)
    best, idx = stacked.max(dim=0)  # the first maximum
    won = best > MIN_SAFE_INTEGER
    kw = info.filter_size[1]
    th, tw = torch.div(idx, kw, rounding_mode="floor"), idx % kw
    b, oh, ow, c = (
        torch.arange(n, device=device).reshape([n if j == i else 1 for j in range(4)]) for i, n in enumerate(idx.shape)
    )
    if for_input:  # where no tap won, TF.js sends the gradient to the window's clamped corner
        h0, w0 = oh * info.strides[0] - info.pads[0][0], ow * info.strides[1] - info.pads[1][0]
        h = torch.where(won, h0 + th * info.dilations[0], h0.clamp(min=0))
        w = torch.where(won, w0 + tw * info.dilations[1], w0.clamp(min=0))
        ok = (h < x.shape[1]) & (w < x.shape[2])
        flat = ((b * x.shape[1] + h) * x.shape[2] + w) * x.shape[3] + c
    else:  # where no tap won, to tap (0, 0)
        flat = (torch.where(won, th, 0) * kw + torch.where(won, tw, 0)) * f.shape[2] + c
        ok = torch.ones(idx.shape, dtype=torch.bool, device=device)
    dyv = floats(backend, dy, torch.float64).expand(idx.shape)
    flat = flat.expand(idx.shape)
    grad = torch.zeros(math.prod(target.shape), dtype=torch.float64, device=device)
    grad.index_add_(0, flat[ok], dyv[ok])
    return out(backend, store_as(grad.reshape(target.shape), target.dtype), target.dtype, target.shape)


@torch_kernel(kn.Dilation2DBackpropInput)
def dilation2d_backprop_input(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for x (to each window's winning position)."""
    return _dilation_backprop(backend, inputs, attrs, "Dilation2DBackpropInput", for_input=True)


@torch_kernel(kn.Dilation2DBackpropFilter)
def dilation2d_backprop_filter(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for its filter (to each winning tap)."""
    return _dilation_backprop(backend, inputs, attrs, "Dilation2DBackpropFilter", for_input=False)
