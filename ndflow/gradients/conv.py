"""Gradients of the convolutions and of their backprop kernels (so that higher orders work).

A convolution is linear in its input and in its filter: its gradient for one is the matching
backprop kernel, and each backprop kernel's gradient is again a convolution or a backprop kernel.
All run through ``ENGINE.run_kernel`` with the forward op's geometry attributes, so they are
recorded on the tape too. Unlike TF.js 4.22 (which refuses), dilations > 1 are differentiable.

Dilation2D (a max over ``x + filter``) sends its gradient to each window's winning position
through its own backprop kernels; those are not differentiated again (piecewise constant).
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor

_CONV2D_KEYS = ("strides", "pad", "data_format", "dilations", "dim_rounding_mode")
_CONV3D_KEYS = ("strides", "pad", "data_format", "dilations")


def geometry(attrs: dict[str, Any], keys: tuple[str, ...] = _CONV2D_KEYS) -> dict[str, Any]:
    """The geometry attributes of a convolution kernel (no shapes, no fused activation)."""
    return {k: attrs[k] for k in keys if k in attrs}


def conv2d_backprop_input(dy: Tensor, f: Tensor, x_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    """dL/dx of ``Conv2D(x, f)`` for upstream ``dy``."""
    return ENGINE.run_kernel(kn.Conv2DBackpropInput, (dy, f), {**geometry(attrs), "input_shape": tuple(x_shape)})


def conv2d_backprop_filter(x: Tensor, dy: Tensor, f_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    """dL/dfilter of ``Conv2D(x, f)`` for upstream ``dy``."""
    return ENGINE.run_kernel(kn.Conv2DBackpropFilter, (x, dy), {**geometry(attrs), "filter_shape": tuple(f_shape)})


def depthwise_backprop_input(dy: Tensor, f: Tensor, x_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    """dL/dx of ``DepthwiseConv2dNative(x, f)`` for upstream ``dy``."""
    attrs = {**geometry(attrs), "input_shape": tuple(x_shape)}
    return ENGINE.run_kernel(kn.DepthwiseConv2dNativeBackpropInput, (dy, f), attrs)


def depthwise_backprop_filter(x: Tensor, dy: Tensor, f_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    """dL/dfilter of ``DepthwiseConv2dNative(x, f)`` for upstream ``dy``."""
    attrs = {**geometry(attrs), "filter_shape": tuple(f_shape)}
    return ENGINE.run_kernel(kn.DepthwiseConv2dNativeBackpropFilter, (x, dy), attrs)


# ----------------------------------------------------------------------------- 2-D


def _conv2d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, f = saved
    return [
        lambda: conv2d_backprop_input(dy, f, x.shape, attrs),
        lambda: conv2d_backprop_filter(x, dy, f.shape, attrs),
    ]


def _conv2d_backprop_input(ddx: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # y = Conv2DBackpropInput(dy, f) (conv2d_transpose): linear in dy (a conv2d) and in f.
    dy, f = saved
    return [
        lambda: ENGINE.run_kernel(kn.Conv2D, (ddx, f), {"dilations": 1, **geometry(attrs)}),
        lambda: conv2d_backprop_filter(ddx, dy, f.shape, attrs),
    ]


def _conv2d_backprop_filter(ddf: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # y = Conv2DBackpropFilter(x, dy): bilinear; each input's gradient is a convolution with ddf.
    x, dy = saved
    return [
        lambda: conv2d_backprop_input(dy, ddf, x.shape, attrs),
        lambda: ENGINE.run_kernel(kn.Conv2D, (x, ddf), {"dilations": 1, **geometry(attrs)}),
    ]


register_gradient(kn.Conv2D, _conv2d, inputs_to_save=[0, 1])
register_gradient(kn.Conv2DBackpropInput, _conv2d_backprop_input, inputs_to_save=[0, 1])
register_gradient(kn.Conv2DBackpropFilter, _conv2d_backprop_filter, inputs_to_save=[0, 1])


# ----------------------------------------------------------------------------- 3-D


def _conv3d_input(dy: Tensor, f: Tensor, x_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    attrs = {**geometry(attrs, _CONV3D_KEYS), "input_shape": tuple(x_shape)}
    return ENGINE.run_kernel(kn.Conv3DBackpropInputV2, (dy, f), attrs)


def _conv3d_filter(x: Tensor, dy: Tensor, f_shape: tuple[int, ...], attrs: dict[str, Any]) -> Tensor:
    attrs = {**geometry(attrs, _CONV3D_KEYS), "filter_shape": tuple(f_shape)}
    return ENGINE.run_kernel(kn.Conv3DBackpropFilterV2, (x, dy), attrs)


def _conv3d_forward(x: Tensor, f: Tensor, attrs: dict[str, Any]) -> Tensor:
    return ENGINE.run_kernel(kn.Conv3D, (x, f), {"dilations": 1, **geometry(attrs, _CONV3D_KEYS)})


def _conv3d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, f = saved
    return [lambda: _conv3d_input(dy, f, x.shape, attrs), lambda: _conv3d_filter(x, dy, f.shape, attrs)]


def _conv3d_backprop_input(ddx: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    dy, f = saved
    return [lambda: _conv3d_forward(ddx, f, attrs), lambda: _conv3d_filter(ddx, dy, f.shape, attrs)]


def _conv3d_backprop_filter(ddf: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, dy = saved
    return [lambda: _conv3d_input(dy, ddf, x.shape, attrs), lambda: _conv3d_forward(x, ddf, attrs)]


register_gradient(kn.Conv3D, _conv3d, inputs_to_save=[0, 1])
register_gradient(kn.Conv3DBackpropInputV2, _conv3d_backprop_input, inputs_to_save=[0, 1])
register_gradient(kn.Conv3DBackpropFilterV2, _conv3d_backprop_filter, inputs_to_save=[0, 1])


# ----------------------------------------------------------------------------- depthwise


def _depthwise(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, f = saved
    return [
        lambda: depthwise_backprop_input(dy, f, x.shape, attrs),
        lambda: depthwise_backprop_filter(x, dy, f.shape, attrs),
    ]


def _depthwise_backprop_input(ddx: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    dy, f = saved
    return [
        lambda: ENGINE.run_kernel(kn.DepthwiseConv2dNative, (ddx, f), {"dilations": 1, **geometry(attrs)}),
        lambda: depthwise_backprop_filter(ddx, dy, f.shape, attrs),
    ]


def _depthwise_backprop_filter(ddf: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, dy = saved
    return [
        lambda: depthwise_backprop_input(dy, ddf, x.shape, attrs),
        lambda: ENGINE.run_kernel(kn.DepthwiseConv2dNative, (x, ddf), {"dilations": 1, **geometry(attrs)}),
    ]


register_gradient(kn.DepthwiseConv2dNative, _depthwise, inputs_to_save=[0, 1])
register_gradient(kn.DepthwiseConv2dNativeBackpropInput, _depthwise_backprop_input, inputs_to_save=[0, 1])
register_gradient(kn.DepthwiseConv2dNativeBackpropFilter, _depthwise_backprop_filter, inputs_to_save=[0, 1])


# ----------------------------------------------------------------------------- dilation2d


def _dilation2d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, f = saved
    return [
        lambda: ENGINE.run_kernel(kn.Dilation2DBackpropInput, (x, f, dy), attrs),
        lambda: ENGINE.run_kernel(kn.Dilation2DBackpropFilter, (x, f, dy), attrs),
    ]


register_gradient(kn.Dilation2D, _dilation2d, inputs_to_save=[0, 1])
