"""Fused kernels: FusedConv2D, FusedDepthwiseConv2D, _FusedMatMul (+ bias, + activation).

Inputs are ``(x, filter)`` (``(a, b)`` for _FusedMatMul), then ``bias`` when there is one, then the
PReLU weights when ``activation == 'prelu'``. Attributes: those of the plain kernel plus
``activation`` (``linear``, ``relu``, ``relu6``, ``elu``, ``leakyrelu``, ``prelu``, ``sigmoid``) and
``leakyrelu_alpha``; with the ndflow attribute ``residual`` the convolutions take a tensor of the
output's shape after the bias, added before the activation. A bias of one value per output channel
goes into torch's convolution (or ``addmm``) itself; other biases broadcast afterwards. Activations
run in place on the product's own buffer. With NCHW, a 1-D bias or 1-D PReLU weights line up with
the channels, as in TF.js.
"""

from __future__ import annotations

import numpy as np
import torch

from ....core import kernel_names as kn
from ...shared.fused import ACTIVATIONS, split_inputs
from ..backend import TorchBackend
from ._threads import conv_forward_flops, matmul_flops
from .common import F, Output, keep, out, torch_kernel, values_of
from .conv import conv_forward, floats, from_torch_layout, geometry, prepared_weight, to_torch_layout
from .matrix import matmul


def _channel_aligned(v: torch.Tensor, channels_first: bool) -> torch.Tensor:
    """With NCHW, a 1-D vector (of more than one value) runs along the channels."""
    if channels_first and v.dim() == 1 and v.shape[0] != 1:
        return v.reshape(-1, 1, 1)
    return v


def activate(
    y: torch.Tensor, activation: str, alpha: torch.Tensor | None, leakyrelu_alpha: float, channels_first: bool = False
) -> tuple[torch.Tensor, str | None]:
    """Apply a fused activation (in place where possible); returns the tensor and its dtype if it changed.

    Float results as TF.js's cpu kernels: relu, relu6, elu and sigmoid keep an int32 input int32
    (truncating), leakyrelu and prelu always give float32.
    """
    if activation == "linear":
        return y, None
    if activation == "relu":
        return torch.relu_(y), None  # keeps NaN, as TF.js's Math.max
    if activation == "relu6":
        return y.clamp_(0, 6), None
    if activation == "elu":
        if not y.is_floating_point():  # exp(v) - 1 lies in (-1, 0) for v < 0: truncated to 0
            return y.clamp_(min=0), None
        return torch.where(y < 0, torch.expm1(y), y), None
    if activation == "sigmoid":
        if y.is_floating_point():
            return y.sigmoid_(), None
        return torch.trunc(torch.sigmoid(y.double())).to(y.dtype), None
    if activation == "leakyrelu":
        y = y if y.is_floating_point() else y.to(F())
        alpha_value = float(np.float32(leakyrelu_alpha)) if y.dtype is torch.float32 else float(leakyrelu_alpha)
        return torch.where(y < 0, y * alpha_value, y), "float32"
    if activation == "prelu":
        if alpha is None:
            raise ValueError("activation 'prelu' needs the PReLU weights as the last input")
        y = y if y.is_floating_point() else y.to(F())
        a = _channel_aligned(alpha if alpha.is_floating_point() else alpha.to(F()), channels_first)
        return torch.where(y < 0, y * a, y), "float32"
    raise ValueError(f"activation {activation!r} is not one of {list(ACTIVATIONS)}")


def _finish(
    backend: TorchBackend, y: torch.Tensor, dtype: str, bias, prelu, attrs: dict, channels_first: bool, residual=None
) -> Output:
    if bias is not None:
        b = _channel_aligned(values_of(backend, bias), channels_first)
        y = y + b if y.is_floating_point() or not b.is_floating_point() else (y + b).to(y.dtype)
    if residual is not None:  # ndflow's residual input (attribute residual): the output's shape
        r = values_of(backend, residual)
        y = y + r if y.is_floating_point() or not r.is_floating_point() else (y + r).to(y.dtype)
    activation = attrs.get("activation") or "linear"
    alpha = values_of(backend, prelu) if prelu is not None else None
    y, new_dtype = activate(y, activation, alpha, attrs.get("leakyrelu_alpha", 0.2), channels_first)
    return out(backend, y, new_dtype or dtype)


# Activations that keep float32 float32 and run in place on the convolution's fresh output.
_IN_PLACE = frozenset(("linear", "relu", "relu6", "sigmoid"))


def _conv_bias_act(
    backend: TorchBackend, inputs: tuple, attrs: dict, kernel: str, depthwise: bool, activation: str
) -> Output | None:
    """The common case on its shortest path: float32 NHWC ``(x, filter, bias)``, one bias value per output
    channel (into torch's convolution), an in-place activation; None for anything else."""
    x, f, bias = inputs
    if x.dtype != "float32" or bias.dtype != "float32" or len(x.shape) != 4 or len(bias.shape) != 1:
        return None
    geo = geometry(x.shape, f.shape, attrs, kernel, depthwise=depthwise)
    info = geo[0]
    weight = prepared_weight(backend, f, depthwise)
    if not info.channels_last or bias.shape[0] != weight.shape[0]:
        return None
    xv = values_of(backend, x).permute(0, 3, 1, 2)  # the channels_last NCHW view, no copy
    y = conv_forward(xv, weight, geo, f.shape[2] if depthwise else 1, values_of(backend, bias))
    y = activate(y, activation, None, 0.2)[0]
    return keep(backend, y.permute(0, 2, 3, 1), info.out_shape, "float32")


def _fused_conv(backend: TorchBackend, inputs: tuple, attrs: dict, kernel: str, depthwise: bool) -> Output:
    activation = attrs.get("activation") or "linear"
    if len(inputs) == 3 and activation in _IN_PLACE and not attrs.get("residual"):
        done = _conv_bias_act(backend, inputs, attrs, kernel, depthwise, activation)
        if done is not None:
            return done
    (x, f), bias, prelu = split_inputs(inputs, activation)
    residual = None
    if attrs.get("residual"):  # the residual sits after the bias, before the PReLU weights
        rest = list(inputs[2:-1] if prelu is not None else inputs[2:])
        residual = rest.pop()
        bias = rest[0] if rest else None
    geo = geometry(x.shape, f.shape, attrs, kernel, depthwise=depthwise)
    info = geo[0]
    weight = prepared_weight(backend, f, depthwise)
    conv_bias = None
    if bias is not None and bias.shape == (weight.shape[0],):  # one value per output channel: into the conv
        conv_bias, bias = floats(backend, bias), None
    groups = f.shape[2] if depthwise else 1
    y = conv_forward(to_torch_layout(floats(backend, x), info), weight, geo, groups, conv_bias)
    y = from_torch_layout(y, info)
    return _finish(backend, y, x.dtype, bias, prelu, attrs, not info.channels_last, residual)


@torch_kernel(kn.FusedConv2D, parallel=conv_forward_flops)
def fused_conv2d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Conv2D, then ``+ bias``, then the activation."""
    return _fused_conv(backend, inputs, attrs, "FusedConv2D", depthwise=False)


@torch_kernel(kn.FusedDepthwiseConv2D, parallel=conv_forward_flops)
def fused_depthwise_conv2d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """DepthwiseConv2dNative, then ``+ bias``, then the activation."""
    return _fused_conv(backend, inputs, attrs, "FusedDepthwiseConv2D", depthwise=True)


@torch_kernel(kn._FusedMatMul, parallel=matmul_flops)
def fused_mat_mul(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """BatchMatMul (batch axes broadcast), then ``+ bias``, then the activation."""
    activation = attrs.get("activation") or "linear"
    if len(inputs) == 3 and activation in _IN_PLACE:  # the common case: float32 matrices, a bias per column
        a, b, bias = inputs
        if a.dtype == "float32" and b.dtype == "float32" and bias.dtype == "float32" and len(a.shape) == 2:
            va, vb = values_of(backend, a), values_of(backend, b)
            if attrs.get("transpose_a"):
                va = va.t()
            if attrs.get("transpose_b"):
                vb = vb.t()
            if vb.dim() == 2 and bias.shape == (vb.shape[1],):
                y = activate(torch.addmm(values_of(backend, bias), va, vb), activation, None, 0.2)[0]
                return keep(backend, y, (va.shape[0], vb.shape[1]), "float32")
    (a, b), bias, prelu = split_inputs(inputs, activation)
    va, vb = values_of(backend, a), values_of(backend, b)
    if attrs.get("transpose_a"):
        va = va.transpose(-1, -2)
    if attrs.get("transpose_b"):
        vb = vb.transpose(-1, -2)
    if (
        bias is not None
        and va.dim() == 2
        and vb.dim() == 2
        and bias.shape == (vb.shape[1],)
        and va.is_floating_point()
        and bias.dtype == a.dtype
    ):
        y = torch.addmm(values_of(backend, bias), va, vb)  # bias fused into the product
        bias = None
    else:
        y = matmul(va, vb)
    return _finish(backend, y, a.dtype, bias, prelu, attrs, False)
