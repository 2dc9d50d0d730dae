"""Convolutions (2-D): Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, and the n-d helpers they share.

NHWC (NDHWC) data is handed to torch as a zero-copy ``channels_last`` view: ``x.permute(0, 3, 1, 2)``
of a contiguous NHWC tensor *is* an NCHW tensor in channels_last memory, which torch's CPU
(oneDNN) and CUDA (cuDNN) convolutions run natively; the output comes back channels_last and is
stored through the inverse permutation, again without a copy. NCHW data goes in as it is.

TF's padding rules: ``pads`` are ``(before, after)`` per spatial dimension and may differ ('same'
puts the odd pixel after; a ceil rounding mode reads past the input). torch pads symmetrically,
so the common part goes to torch and only the difference is padded (or cropped) explicitly.
The backprops use ``aten.convolution_backward`` on the same geometry. On CUDA, TF32 is off in
these kernels (unless the flag ``TORCH_TF32`` is on): float32 means float32, as on TF.js's backends.

Attributes (TF.js's, in snake_case): ``strides``, ``pad``, ``data_format``, ``dilations``,
``dim_rounding_mode``; the backprop kernels take ``input_shape`` / ``filter_shape`` too.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as tnf

from ....core import kernel_names as kn
from ....core.conv_util import ConvInfo
from ...shared.conv import check_dy, info_from_attrs
from ..backend import TorchBackend
from ..device import tf32_allowed
from ._threads import conv_forward_flops, conv_input_grad_flops, filter_grad_flops
from .common import F, Output, out, torch_kernel, values_of

if TYPE_CHECKING:
    from ....core.tensor import Tensor

__all__ = ["check_dy", "info_from_attrs"]

_CONV = {2: torch.conv2d, 3: torch.conv3d}

Geometry = tuple[ConvInfo, list[int], list[int] | None]
_GEOMETRY: dict[tuple, Geometry] = {}


def _freeze(value: object) -> object:
    return tuple(_freeze(v) for v in value) if isinstance(value, list | tuple) else value


def geometry(
    in_shape: tuple[int, ...], filter_shape: tuple[int, ...], attrs: dict, kernel: str, depthwise: bool = False
) -> Geometry:
    """``(info, symmetric torch padding, explicit pads or None)`` of a call, cached: models call the
    same convolutions again and again, and the geometry costs more than a small convolution."""
    key: tuple | None = (in_shape, filter_shape, kernel, depthwise, tuple(attrs), *attrs.values())
    try:
        cached = _GEOMETRY.get(key)
    except TypeError:  # list-valued attributes
        key = (in_shape, filter_shape, kernel, depthwise, tuple(attrs), _freeze(tuple(attrs.values())))
        try:
            cached = _GEOMETRY.get(key)
        except TypeError:  # something else unhashable: no caching
            key, cached = None, None
    if cached is None:
        info = info_from_attrs(in_shape, filter_shape, attrs, kernel, depthwise=depthwise)
        sym, extra = padding(info)
        cached = (info, sym, extra if any(extra) else None)
        if key is not None:
            if len(_GEOMETRY) > 4096:
                _GEOMETRY.clear()
            _GEOMETRY[key] = cached
    return cached


@contextlib.contextmanager
def precise(device: torch.device) -> Iterator[None]:
    """Full float32 precision on CUDA (no TF32 in cuDNN convolutions) for the duration, unless the flag
    ``TORCH_TF32`` allows TF32."""
    if device.type != "cuda" or tf32_allowed():
        yield
        return
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = previous


def to_torch_layout(v: torch.Tensor, info: ConvInfo) -> torch.Tensor:
    """Channels-last data as torch's (N, C, *spatial) view (a channels_last tensor, no copy)."""
    if not info.channels_last:
        return v
    n = v.dim() - 2
    return v.permute(0, n + 1, *range(1, n + 1))


def from_torch_layout(y: torch.Tensor, info: ConvInfo) -> torch.Tensor:
    """The inverse of :func:`to_torch_layout`."""
    if not info.channels_last:
        return y
    n = y.dim() - 2
    return y.permute(0, *range(2, n + 2), 1)


def torch_weight(w: torch.Tensor) -> torch.Tensor:
    """TF's filter ``[*k, in, out]`` as torch's ``[out, in, *k]`` (a view)."""
    n = w.dim() - 2
    return w.permute(n + 1, n, *range(n))


def prepared_weight(backend: TorchBackend, f: Tensor, depthwise: bool = False) -> torch.Tensor:
    """Filter input ``f`` in torch's layout, contiguous (channels_last for a convolution's ``[out, in,
    kh, kw]``, as an eager channels_last model holds it), made once per buffer and kept on its record:
    a graph model's filters are converted on the first run only. A permuted view costs the convolution
    a copy of the weights on every call (up to 1.4x on the 1x1 convolutions of MobileNet's last blocks)."""
    record = backend.data[f.data_id]
    key = ("depthwise" if depthwise else "conv", f.shape, F())
    cache = record.prepared
    if cache is None:
        cache = record.prepared = {}
    weight = cache.get(key)
    if weight is None:
        v = floats(backend, f)
        if depthwise:
            weight = depthwise_weight_view(v).contiguous()
        elif v.dim() == 4:
            weight = torch_weight(v).contiguous(memory_format=torch.channels_last)
        else:
            weight = torch_weight(v).contiguous()
        cache[key] = weight
    return weight


def depthwise_weight_view(w: torch.Tensor) -> torch.Tensor:
    """A depthwise filter ``[kh, kw, in, m]`` as torch's grouped ``[in * m, 1, kh, kw]`` (a view)."""
    kh, kw, c, m = w.shape
    return w.reshape(kh, kw, c * m).permute(2, 0, 1).unsqueeze(1)


def from_torch_weight(dw: torch.Tensor) -> torch.Tensor:
    """torch's ``[out, in, *k]`` back to TF's ``[*k, in, out]`` (contiguous)."""
    n = dw.dim() - 2
    return dw.permute(*range(2, n + 2), 1, 0).contiguous()


def padding(info: ConvInfo) -> tuple[list[int], list[int]]:
    """(symmetric padding for torch, explicit ``F.pad`` amounts for the rest, last dim first).

    The after-padding covers exactly the extent the windows read, ``(out - 1) * stride +
    effective filter``, so that torch's output size is ``out``.
    """
    sym: list[int] = []
    extra: list[int] = []
    for size, o, s, k, (before, _) in zip(
        info.in_size, info.out_size, info.strides, info.effective_filter_size, info.pads, strict=True
    ):
        after = (o - 1) * s + k - size - before if o > 0 else -size - before
        common = max(0, min(before, after))
        sym.append(common)
        extra = [before - common, after - common, *extra]
    return sym, extra


def _padded(x: torch.Tensor, extra: list[int] | None) -> torch.Tensor:
    return x if extra is None else tnf.pad(x, extra)


def conv_forward(
    x: torch.Tensor, w: torch.Tensor, geo: Geometry, groups: int = 1, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """Convolution of torch-layout ``x`` (N, C, *spatial) with torch weight ``w`` (and a per-channel
    ``bias``); torch-layout result."""
    info, sym, extra = geo
    if 0 in info.out_size or info.batch == 0 or w.shape[0] == 0 or x.numel() == 0:
        y = x.new_zeros((info.batch, w.shape[0], *info.out_size))
        return y if bias is None else y + bias.reshape(-1, *(1,) * len(info.out_size))
    conv = _CONV[len(info.in_size)]
    if not x.is_cuda:
        return conv(x if extra is None else tnf.pad(x, extra), w, bias, info.strides, sym, info.dilations, groups)
    with precise(x.device):
        return conv(_padded(x, extra), w, bias, info.strides, sym, info.dilations, groups)


def conv_backprop_input(dy: torch.Tensor, w: torch.Tensor, geo: Geometry, groups: int = 1) -> torch.Tensor:
    """Gradient of :func:`conv_forward` for its input (torch layouts)."""
    info, sym, extra = geo
    channels = w.shape[1] * groups
    n = len(info.in_size)
    padded_size = [
        size + (0 if extra is None else extra[2 * (n - 1 - i)] + extra[2 * (n - 1 - i) + 1])
        for i, size in enumerate(info.in_size)
    ]
    shape = (info.batch, channels, *info.in_size)
    if math.prod(shape) == 0 or dy.numel() == 0 or w.numel() == 0:
        return dy.new_zeros(shape)
    # torch reads only the sizes and memory format of the input: an unfilled stand-in, channels_last like dy
    # (a stride-0 stand-in reads as NCHW, and torch then copies dy and dx between the layouts)
    stand_in = dy.new_empty(1).expand(info.batch, channels, *padded_size)
    if n == 2 and dy.is_contiguous(memory_format=torch.channels_last) and not dy.is_contiguous():
        stand_in = torch.empty(stand_in.shape, dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)
    with precise(dy.device):
        dx = torch.ops.aten.convolution_backward(
            dy,
            stand_in,
            w,
            None,
            info.strides,
            sym,
            info.dilations,
            False,
            [0] * len(sym),
            groups,
            (True, False, False),
        )[0]
    return dx if extra is None else tnf.pad(dx, [-e for e in extra])


def conv_backprop_filter(
    x: torch.Tensor, dy: torch.Tensor, geo: Geometry, weight_shape: tuple[int, ...], groups: int = 1
) -> torch.Tensor:
    """Gradient of :func:`conv_forward` for its torch weight of ``weight_shape`` (torch layouts)."""
    if x.numel() == 0 or dy.numel() == 0:
        return x.new_zeros(weight_shape)
    info, sym, extra = geo
    stand_in = dy.new_empty(1).expand(weight_shape)
    with precise(dy.device):
        return torch.ops.aten.convolution_backward(
            dy, _padded(x, extra), stand_in, None, info.strides, sym, info.dilations, False, [0] * len(sym), groups,
            (False, True, False),
        )[1]  # fmt: skip


def floats(backend: TorchBackend, t: object, dtype: torch.dtype | None = None) -> torch.Tensor:
    """An input as a float tensor (the float dtype unless ``dtype`` is given)."""
    v = values_of(backend, t)  # type: ignore[arg-type]
    target = dtype or F()
    return v if v.dtype is target else v.to(target)


# ----------------------------------------------------------------------------- kernels


@torch_kernel(kn.Conv2D, parallel=conv_forward_flops)
def conv2d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; 2-D convolution, NHWC or NCHW."""
    x, f = inputs
    geo = geometry(x.shape, f.shape, attrs, "Conv2D")
    info = geo[0]
    y = conv_forward(to_torch_layout(floats(backend, x), info), prepared_weight(backend, f), geo)
    return out(backend, from_torch_layout(y, info), x.dtype, info.out_shape)


@torch_kernel(kn.Conv2DBackpropInput, parallel=conv_input_grad_flops)
def conv2d_backprop_input(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv2D for x (conv2d_transpose)."""
    dy, f = inputs
    geo = geometry(tuple(attrs["input_shape"]), f.shape, attrs, "Conv2DBackpropInput")
    info = geo[0]
    check_dy(dy.shape, info, "Conv2DBackpropInput")
    dyv = to_torch_layout(floats(backend, dy), info)
    weight = prepared_weight(backend, f) if info.channels_last else torch_weight(floats(backend, f))
    dx = conv_backprop_input(dyv, weight, geo)
    return out(backend, from_torch_layout(dx, info), "float32", info.in_shape)


@torch_kernel(kn.Conv2DBackpropFilter, parallel=filter_grad_flops)
def conv2d_backprop_filter(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv2D for its filter."""
    x, dy = inputs
    filter_shape = tuple(attrs["filter_shape"])
    geo = geometry(x.shape, filter_shape, attrs, "Conv2DBackpropFilter")
    info = geo[0]
    check_dy(dy.shape, info, "Conv2DBackpropFilter")
    xv = to_torch_layout(floats(backend, x), info)
    weight_shape = (filter_shape[-1], filter_shape[-2], *filter_shape[:-2])
    dw = conv_backprop_filter(xv, to_torch_layout(floats(backend, dy), info), geo, weight_shape)
    return out(backend, from_torch_weight(dw), "float32", filter_shape)
