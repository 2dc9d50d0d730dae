"""Gradients of the fused kernels: FusedConv2D, FusedDepthwiseConv2D, _FusedMatMul.

``y = activation(product(x, filter) + bias)``. The upstream gradient first goes through the
activation's derivative (``dpre``); the bias gets ``dpre`` summed to its shape, the PReLU weights
``dpre``'s share where the pre-activation is negative, and ``x`` and ``filter`` the plain product's
gradients of ``dpre``. Every activation is differentiable: linear, relu, relu6, elu, sigmoid and
leakyrelu from the saved output ``y``; prelu (and leakyrelu with a negative slope, where ``y``
does not tell the sign of the pre-activation) from the pre-activation, recomputed with the
kernel's ``linear`` form. TF.js 4.22 differentiates fused ops by running them unfused, which
refuses NCHW with an activation, and refuses dilations in the linear case; ndflow does both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import add, cast, greater, greater_equal, less, logical_and, mat_mul, mul, reshape, sub, where
from ._util import unbroadcast
from .conv import conv2d_backprop_filter, conv2d_backprop_input, depthwise_backprop_filter, depthwise_backprop_input


def _channel_aligned(t: Tensor, channels_first: bool) -> Tensor:
    """As the kernel reads it: with NCHW a 1-D vector (of more than one value) runs along the channels."""
    if channels_first and t.rank == 1 and t.shape[0] != 1:
        return reshape(t, [t.shape[0], 1, 1])
    return t


def _sum_to(g: Tensor, t: Tensor, channels_first: bool) -> Tensor:
    """``g`` (the output's shape) summed to the shape of ``t`` (a bias or PReLU weights)."""
    aligned = _channel_aligned(t, channels_first)
    summed = unbroadcast(g, aligned.shape)
    return summed if summed.shape == t.shape else reshape(summed, list(t.shape))


def _mask(cond: Tensor) -> Tensor:
    return cast(cond, "float32")


def _parts(saved: list[Tensor], attrs: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor]:
    """(x, filter, bias or None, prelu weights or None, y) from the saved inputs and output."""
    *inputs, y = saved
    activation = attrs.get("activation") or "linear"
    rest = list(inputs[2:])
    prelu = rest.pop() if activation == "prelu" and rest else None
    bias = rest[0] if rest else None
    return inputs[0], inputs[1], bias, prelu, y


def _activation_grad(
    dy: Tensor, y: Tensor, pre: Tensor | None, activation: str, alpha: float, prelu: Tensor | None, nchw: bool
) -> Tensor:
    """dL/d(pre-activation) from dL/dy, the output ``y`` and (prelu, leakyrelu < 0) the pre-activation."""
    if activation == "linear":
        return dy
    if activation == "relu":
        return mul(dy, _mask(greater(y, 0.0)))
    if activation == "relu6":
        return mul(dy, _mask(logical_and(greater(y, 0.0), less(y, 6.0))))
    if activation == "elu":
        return where(greater_equal(y, 0.0), dy, mul(dy, add(y, 1.0)))
    if activation == "sigmoid":
        return mul(dy, mul(y, sub(1.0, y)))
    if activation == "leakyrelu":
        return where(greater(y if pre is None else pre, 0.0), dy, mul(dy, alpha))
    if activation == "prelu" and pre is not None and prelu is not None:
        return where(greater(pre, 0.0), dy, mul(dy, _channel_aligned(prelu, nchw)))
    raise ValueError(f"Cannot compute the gradient of fused activation {activation!r}")


def fused_grads(
    kernel: str,
    dy: Tensor,
    saved: list[Tensor],
    attrs: dict[str, Any],
    product_grads: Callable[[Tensor, Tensor, Tensor], list],
    channels_first: bool,
) -> list:
    """The thunks for (x, filter[, bias][, prelu weights]) of a fused kernel."""
    x, f, bias, prelu, y = _parts(saved, attrs)
    activation = attrs.get("activation") or "linear"
    alpha = float(attrs.get("leakyrelu_alpha", 0.2))

    pre = None  # the pre-activation product + bias, where y does not tell its sign
    if activation == "prelu" or (activation == "leakyrelu" and alpha < 0):
        inputs = (x, f) if bias is None else (x, f, bias)
        pre = ENGINE.run_kernel(kernel, inputs, {**attrs, "activation": "linear"})
    # Computed once here (freed with the backward pass), shared by every input's thunk.
    dpre = _activation_grad(dy, y, pre, activation, alpha, prelu, channels_first)
    thunks = product_grads(dpre, x, f)
    if bias is not None:
        thunks.append(lambda: _sum_to(dpre, bias, channels_first))
    if prelu is not None:
        thunks.append(lambda: _sum_to(mul(dy, mul(_mask(less(pre, 0.0)), pre)), prelu, channels_first))
    return thunks


def _fused_conv2d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    def product(dpre: Tensor, x: Tensor, f: Tensor) -> list:
        return [
            lambda: conv2d_backprop_input(dpre, f, x.shape, attrs),
            lambda: conv2d_backprop_filter(x, dpre, f.shape, attrs),
        ]

    return fused_grads(kn.FusedConv2D, dy, saved, attrs, product, attrs.get("data_format") == "NCHW")


def _fused_depthwise_conv2d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    def product(dpre: Tensor, x: Tensor, f: Tensor) -> list:
        return [
            lambda: depthwise_backprop_input(dpre, f, x.shape, attrs),
            lambda: depthwise_backprop_filter(x, dpre, f.shape, attrs),
        ]

    return fused_grads(kn.FusedDepthwiseConv2D, dy, saved, attrs, product, attrs.get("data_format") == "NCHW")


def _fused_mat_mul(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))

    def product(dpre: Tensor, a: Tensor, b: Tensor) -> list:
        def da() -> Tensor:
            g = mat_mul(dpre, b, False, not tb) if not ta else mat_mul(b, dpre, tb, True)
            return unbroadcast(g, a.shape)

        def db() -> Tensor:
            g = mat_mul(a, dpre, not ta, False) if not tb else mat_mul(dpre, a, True, ta)
            return unbroadcast(g, b.shape)

        return [da, db]

    return fused_grads(kn._FusedMatMul, dy, saved, attrs, product, False)


register_gradient(kn.FusedConv2D, _fused_conv2d, save_all_inputs=True, outputs_to_save=[True])
register_gradient(kn.FusedDepthwiseConv2D, _fused_depthwise_conv2d, save_all_inputs=True, outputs_to_save=[True])
register_gradient(kn._FusedMatMul, _fused_mat_mul, save_all_inputs=True, outputs_to_save=[True])
