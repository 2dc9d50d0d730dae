"""Per-channel filters: DepthwiseConv2dNative (+ backprops) and the morphological Dilation2D (+ backprops).

Both loop over the filter taps (a small static loop) and do vectorised work on the whole output per
tap: a multiply-accumulate for depthwise, a running maximum for dilation. Depthwise honours
``data_format`` NCHW (TF.js's cpu kernel ignores it and reads NCHW input as NHWC). With numba
(``ndflow.backends.cpu.numba``), the depthwise forward pass is one compiled loop instead (10-20x faster).
"""

from __future__ import annotations

import itertools

import numpy as np

from ....core import kernel_names as kn
from ...shared.conv import check_dy, dilation_info, info_from_attrs
from ..backend import CPUBackend
from ..numba import ops as jit_ops
from .common import Output, cpu_kernel, out
from .conv import (
    from_channels_last,
    needed_size,
    padded_input,
    place,
    planned,
    tap_slices,
    to_channels_last,
    values,
)
from .conv3d import store_as

# ----------------------------------------------------------------------------- depthwise


def _taps(filter_size: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(k) for k in filter_size)))


def depthwise_forward(x: np.ndarray, w: np.ndarray, info) -> np.ndarray:
    """Channels-last depthwise convolution; ``w`` is ``[kh, kw, in, multiplier]``, output channel ``c*m``."""
    batch, channels, mult = x.shape[0], x.shape[-1], w.shape[-1]
    shape = (batch, *info.out_size, channels * mult)
    if x.size == 0 or w.size == 0 or 0 in shape:
        return np.zeros(shape, dtype=np.float32)
    compiled = jit_ops.depthwise(x, w, info)
    if compiled is not None:
        return compiled
    xp = padded_input(x, info)
    acc = tmp = None
    for tap in _taps(info.filter_size):
        xs = xp[tap_slices(tap, info)]
        wt = w[tap]  # (in, multiplier)
        if mult == 1:
            wt = wt[:, 0]
        else:
            xs = xs[..., None]
        if acc is None:
            acc = np.multiply(xs, wt)
            tmp = np.empty_like(acc)
        else:
            acc += np.multiply(xs, wt, out=tmp)
    return acc.reshape(shape)


def depthwise_backprop_input(dy: np.ndarray, w: np.ndarray, info) -> np.ndarray:
    """Gradient of :func:`depthwise_forward` for its input (channels-last ``dy``)."""
    channels, mult = w.shape[-2], w.shape[-1]
    shape = (dy.shape[0], *info.in_size, channels)
    if dy.size == 0 or 0 in shape:
        return np.zeros(shape, dtype=np.float32)
    dy5 = dy.reshape(dy.shape[:-1] + (channels, mult))
    dxp = np.zeros((dy.shape[0], *needed_size(info), channels), dtype=np.float32)
    for tap in _taps(info.filter_size):
        wt = w[tap]
        contrib = dy5[..., 0] * wt[:, 0] if mult == 1 else np.einsum("...cm,cm->...c", dy5, wt)
        dxp[tap_slices(tap, info)] += contrib
    return np.ascontiguousarray(place(dxp, info.in_size, tuple(-b for b, _ in info.pads)))


def depthwise_backprop_filter(x: np.ndarray, dy: np.ndarray, info, filter_shape: tuple[int, ...]) -> np.ndarray:
    """Gradient of :func:`depthwise_forward` for its filter (channels-last ``x`` and ``dy``)."""
    channels, mult = filter_shape[-2], filter_shape[-1]
    dw = np.zeros(filter_shape, dtype=np.float32)
    if x.size == 0 or dy.size == 0:
        return dw
    dy5 = dy.reshape(dy.shape[:-1] + (channels, mult))
    xp = padded_input(x, info)
    for tap in _taps(info.filter_size):
        dw[tap] = np.einsum("bhwc,bhwcm->cm", xp[tap_slices(tap, info)], dy5)
    return dw


@cpu_kernel(kn.DepthwiseConv2dNative)
def depthwise_conv2d_native(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; one filter (times a channel multiplier) per input channel."""
    result = planned(backend, "DepthwiseConv2dNative", inputs, attrs, True, False)
    if result is not None:
        return result
    x, f = inputs
    info = info_from_attrs(x.shape, f.shape, attrs, "DepthwiseConv2dNative", depthwise=True)
    y = depthwise_forward(to_channels_last(values(backend, x), info), values(backend, f), info)
    return out(backend, from_channels_last(y, info), x.dtype)


@cpu_kernel(kn.DepthwiseConv2dNativeBackpropInput)
def depthwise_conv2d_native_backprop_input(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of DepthwiseConv2dNative for x."""
    dy, f = inputs
    kernel = "DepthwiseConv2dNativeBackpropInput"
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, kernel, depthwise=True)
    check_dy(dy.shape, info, kernel)
    dx = depthwise_backprop_input(to_channels_last(values(backend, dy), info), values(backend, f), info)
    return out(backend, from_channels_last(dx, info), "float32")


@cpu_kernel(kn.DepthwiseConv2dNativeBackpropFilter)
def depthwise_conv2d_native_backprop_filter(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of DepthwiseConv2dNative for its filter."""
    x, dy = inputs
    kernel = "DepthwiseConv2dNativeBackpropFilter"
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, kernel, depthwise=True)
    check_dy(dy.shape, info, kernel)
    xv = to_channels_last(values(backend, x), info)
    dw = depthwise_backprop_filter(xv, to_channels_last(values(backend, dy), info), info, filter_shape)
    return out(backend, dw, "float32")


# ----------------------------------------------------------------------------- dilation2d

MIN_SAFE_INTEGER = -9007199254740991.0  # TF.js's start value for the running maximum


def _dilation_dtype(*dtypes: str) -> type:
    return np.float32 if all(d == "float32" for d in dtypes) else np.float64


def _dilation_values(backend: CPUBackend, x: object, f: object, info) -> tuple[list, np.ndarray]:
    """Per tap, ``x + filter`` for every output position (NaN where the window leaves the input)."""
    dtype = _dilation_dtype(x.dtype, f.dtype)  # type: ignore[attr-defined]
    xp = padded_input(values(backend, x, dtype), info, fill=np.nan)
    fv = values(backend, f, dtype)
    return [(tap, xp[tap_slices(tap, info)] + fv[tap]) for tap in _taps(info.filter_size)], fv


@cpu_kernel(kn.Dilation2D)
def dilation2d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``: grayscale dilation, the max over each window of ``x + filter`` (NHWC)."""
    x, f = inputs
    info = dilation_info(x.shape, f.shape, attrs, "Dilation2D")
    dtype = _dilation_dtype(x.dtype, f.dtype)
    result = np.full((x.shape[0], *info.out_size, x.shape[-1]), MIN_SAFE_INTEGER, dtype=dtype)
    if result.size and x.size:
        for _, vals in _dilation_values(backend, x, f, info)[0]:
            np.fmax(result, vals, out=result)  # fmax skips NaN: outside the input, or NaN input
    return out(backend, store_as(result, x.dtype), x.dtype)


def _argmax_taps(backend: CPUBackend, x: object, f: object, info) -> tuple[np.ndarray, np.ndarray, int]:
    """Index of the winning tap per output element (the first maximum), whether any tap won, and kw."""
    per_tap, _ = _dilation_values(backend, x, f, info)
    stacked = np.stack([v for _, v in per_tap])
    stacked = np.where(np.isnan(stacked), -np.inf, stacked)
    idx = stacked.argmax(axis=0)
    best = np.take_along_axis(stacked, idx[None], axis=0)[0]
    return idx, best > MIN_SAFE_INTEGER, info.filter_size[1]


def _dilation_backprop(backend: CPUBackend, inputs: tuple, attrs: dict, kernel: str, for_input: bool) -> Output:
    x, f, dy = inputs
    info = dilation_info(x.shape, f.shape, attrs, kernel)
    check_dy(dy.shape, info, kernel)
    target = x if for_input else f
    if dy.size == 0 or x.size == 0:
        return out(backend, np.zeros(target.shape, np.float32), target.dtype)
    idx, won, kw = _argmax_taps(backend, x, f, info)
    th, tw = idx // kw, idx % kw
    b, oh, ow, c = np.indices(idx.shape, sparse=True)
    if for_input:  # where no tap won, TF.js sends the gradient to the window's clamped corner
        h0, w0 = oh * info.strides[0] - info.pads[0][0], ow * info.strides[1] - info.pads[1][0]
        h = np.where(won, h0 + th * info.dilations[0], np.maximum(h0, 0))
        w = np.where(won, w0 + tw * info.dilations[1], np.maximum(w0, 0))
        ok = (h < x.shape[1]) & (w < x.shape[2])
        flat = ((b * x.shape[1] + h) * x.shape[2] + w) * x.shape[3] + c
    else:  # where no tap won, to tap (0, 0)
        flat = (np.where(won, th, 0) * kw + np.where(won, tw, 0)) * f.shape[2] + c
        ok = np.ones(idx.shape, bool)
    dyv = np.broadcast_to(values(backend, dy, np.float64), idx.shape)
    flat = np.broadcast_to(flat, idx.shape)
    grad = np.bincount(flat[ok], weights=dyv[ok], minlength=int(np.prod(target.shape)))
    return out(backend, store_as(grad.reshape(target.shape), target.dtype), target.dtype)


@cpu_kernel(kn.Dilation2DBackpropInput)
def dilation2d_backprop_input(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for x (to each window's winning position)."""
    return _dilation_backprop(backend, inputs, attrs, "Dilation2DBackpropInput", for_input=True)


@cpu_kernel(kn.Dilation2DBackpropFilter)
def dilation2d_backprop_filter(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for its filter (to each winning tap)."""
    return _dilation_backprop(backend, inputs, attrs, "Dilation2DBackpropFilter", for_input=False)
