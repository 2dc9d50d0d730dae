"""``nf.fused``: a product plus bias plus activation in one kernel: conv2d, depthwise_conv2d, mat_mul.

TF.js takes one config object (``tf.fused.conv2d({x, filter, strides, pad, bias, activation})``);
ndflow takes the same fields as keyword arguments
(``nf.fused.conv2d(x=x, filter=f, strides=1, pad='same', bias=b, activation='relu')``).
Activations: ``'linear'`` (default), ``'relu'``, ``'relu6'``, ``'elu'``, ``'leakyrelu'`` (slope
``leakyrelu_alpha``, default 0.2 everywhere; TF.js's conv ops leave it undefined and return NaN),
``'prelu'`` (slopes ``prelu_activation_weights``) and ``'sigmoid'``.

ndflow extension: the convolutions take ``add``, a tensor of the output's shape added after the bias
and before the activation (a residual connection; the graph optimizer fuses ``Add`` into the
convolution this way). TF.js has no such argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .conv import ConvArgs, prepare_conv2d
from .convert import binary_inputs, broadcast_shape

ACTIVATIONS = ("linear", "relu", "relu6", "elu", "leakyrelu", "prelu", "sigmoid")


def _activation(activation: str | None, op: str) -> str:
    activation = activation or "linear"
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {activation!r}; expected one of {list(ACTIVATIONS)}")
    return activation


def _alpha(leakyrelu_alpha: Any, op: str) -> float:
    if leakyrelu_alpha is None:
        return 0.2
    if isinstance(leakyrelu_alpha, bool) or not isinstance(leakyrelu_alpha, int | float):
        raise TypeError(f"{op}: argument 'leakyrelu_alpha' must be a number, got {leakyrelu_alpha!r}")
    return float(leakyrelu_alpha)


def _bias(a: ConvArgs, bias: Any, dtype: str, out_shape: tuple[int, ...], channels_first: bool) -> Tensor:
    """The bias as ``dtype`` (TF.js's makeTypesMatch), checked against the output shape."""
    op = a.op
    b = a.tensor(bias, "bias")
    if b.dtype != dtype:
        b = a.cast(b, "float32" if "float32" in (b.dtype, dtype) else dtype)
    if channels_first:
        if b.rank > 1:
            raise ValueError(f"{op}: with NCHW only a scalar or 1-D bias is supported, got rank {b.rank}")
        if b.rank == 1 and b.shape[0] not in (1, out_shape[1]):
            raise ValueError(f"{op}: bias shape {list(b.shape)} is not compatible with {out_shape[1]} output channels")
    elif broadcast_shape(out_shape, b.shape, op) != tuple(out_shape):
        raise ValueError(f"{op}: bias of shape {list(b.shape)} would enlarge the output {list(out_shape)}")
    return b


def _residual(a: ConvArgs, add: Any, dtype: str, out_shape: tuple[int, ...]) -> Tensor:
    """The residual ``add`` as ``dtype``, which must have the output's shape exactly (no broadcasting)."""
    r = a.tensor(add, "add")
    if r.dtype != dtype:
        r = a.cast(r, "float32" if "float32" in (r.dtype, dtype) else dtype)
    if tuple(r.shape) != tuple(out_shape):
        raise ValueError(
            f"{a.op}: argument 'add' of shape {list(r.shape)} must have the output's shape {list(out_shape)}"
        )
    return r


def _prelu_weights(a: ConvArgs, weights: Any, out_shape: tuple[int, ...], channels_first: bool, conv: bool) -> Tensor:
    """PReLU slopes: a scalar, 1-D along the channels, or (conv) 3-D broadcasting to the output."""
    op = a.op
    w = a.tensor(weights, "prelu_activation_weights")
    channels = out_shape[1] if channels_first else out_shape[-1]
    if conv and w.rank not in (0, 1, 3):
        raise ValueError(f"{op}: prelu_activation_weights must be a scalar, 1-D or 3-D, got rank {w.rank}")
    if w.rank == 1 and conv:
        if w.shape[0] not in (1, channels):
            raise ValueError(
                f"{op}: prelu_activation_weights {list(w.shape)} are not compatible with {channels} output channels"
            )
        return w
    shape = w.shape
    if channels_first and w.rank == 1 and w.shape[0] != 1:
        shape = (w.shape[0], 1, 1)
    try:
        grown = broadcast_shape(tuple(out_shape), shape, op) != tuple(out_shape)
    except ValueError:
        grown = True
    if grown:
        raise ValueError(
            f"{op}: prelu_activation_weights {list(w.shape)} are not compatible with the output shape {list(out_shape)}"
        )
    return w


def _fused_conv(
    kernel: str,
    op: str,
    depthwise: bool,
    x: Any,
    filter: Any,  # noqa: A002 - TF.js's name
    strides: Any,
    pad: Any,
    data_format: str,
    dilations: Any,
    dim_rounding_mode: str | None,
    bias: Any,
    activation: str | None,
    prelu_activation_weights: Any,
    leakyrelu_alpha: float,
    add: Any = None,
    record: list | None = None,
) -> Tensor:
    with ConvArgs(op) as a:
        activation = _activation(activation, op)
        x4, f, attrs, info, unbatch = prepare_conv2d(
            a, x, filter, strides, pad, data_format, dilations, dim_rounding_mode, depthwise=depthwise
        )
        channels_first = data_format == "NCHW"
        inputs = [x4, f]
        if bias is not None:
            inputs.append(_bias(a, bias, x4.dtype, info.out_shape, channels_first))
        if add is not None:
            if ENGINE.gradient_depth:
                raise NotImplementedError(f"{op}: argument 'add' has no gradient; add the residual with nf.add")
            r = _residual(a, add, x4.dtype, info.out_shape[1:] if unbatch else info.out_shape)
            inputs.append(a.reshape(r, info.out_shape) if unbatch else r)
            attrs["residual"] = True
        if prelu_activation_weights is not None:
            w = _prelu_weights(a, prelu_activation_weights, info.out_shape, channels_first, conv=not depthwise)
            if activation == "prelu":
                inputs.append(w)
        elif activation == "prelu":
            raise ValueError(f"{op}: activation 'prelu' needs prelu_activation_weights")
        attrs.update(activation=activation, leakyrelu_alpha=_alpha(leakyrelu_alpha, op))
        if record is not None and not a.temps and not unbatch:
            record.append((kernel, tuple(inputs), attrs))
        return a.finish(ENGINE.run_kernel(kernel, tuple(inputs), attrs), unbatch)


def recorded_conv(depthwise: bool, record: list, **kwargs: Any) -> Tensor:
    """Internal (the graph converter's mappers): :func:`conv2d` / :func:`depthwise_conv2d` on the same
    keyword arguments, which also appends to ``record`` the kernel call it made, ``(kernel, inputs, attrs)``,
    when that call took the given tensors as they are (no conversion, cast or added batch axis): the same
    call is then valid for any tensors of the same shapes and dtypes, checks included."""
    kernel, op = (kn.FusedDepthwiseConv2D, "fused.depthwise_conv2d") if depthwise else (kn.FusedConv2D, "fused.conv2d")
    return _fused_conv(
        kernel, op, depthwise, kwargs["x"], kwargs["filter"], kwargs["strides"], kwargs["pad"],
        kwargs.get("data_format", "NHWC"), kwargs.get("dilations", 1), kwargs.get("dim_rounding_mode"),
        kwargs.get("bias"), kwargs.get("activation", "linear"), kwargs.get("prelu_activation_weights"),
        kwargs.get("leakyrelu_alpha", 0.2), kwargs.get("add"), record,
    )  # fmt: skip


def conv2d(
    *,
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    dim_rounding_mode: str | None = None,
    bias: TensorLike | None = None,
    activation: str | None = "linear",
    prelu_activation_weights: TensorLike | None = None,
    leakyrelu_alpha: float = 0.2,
    add: TensorLike | None = None,
) -> Tensor:
    """``activation(conv2d(x, filter) + bias + add)`` in one kernel (keyword arguments, as TF.js's config;
    ``add``, a tensor of the output's shape, is an ndflow extension)."""
    return _fused_conv(
        kn.FusedConv2D, "fused.conv2d", False, x, filter, strides, pad, data_format, dilations,
        dim_rounding_mode, bias, activation, prelu_activation_weights, leakyrelu_alpha, add,
    )  # fmt: skip


def depthwise_conv2d(
    *,
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    dim_rounding_mode: str | None = None,
    bias: TensorLike | None = None,
    activation: str | None = "linear",
    prelu_activation_weights: TensorLike | None = None,
    leakyrelu_alpha: float = 0.2,
    add: TensorLike | None = None,
) -> Tensor:
    """``activation(depthwise_conv2d(x, filter) + bias + add)`` in one kernel (keyword arguments; ``add``
    is an ndflow extension)."""
    return _fused_conv(
        kn.FusedDepthwiseConv2D, "fused.depthwise_conv2d", True, x, filter, strides, pad, data_format,
        dilations, dim_rounding_mode, bias, activation, prelu_activation_weights, leakyrelu_alpha, add,
    )  # fmt: skip


def mat_mul(
    *,
    a: TensorLike,
    b: TensorLike,
    transpose_a: bool = False,
    transpose_b: bool = False,
    bias: TensorLike | None = None,
    activation: str | None = "linear",
    prelu_activation_weights: TensorLike | None = None,
    leakyrelu_alpha: float = 0.2,
) -> Tensor:
    """``activation(mat_mul(a, b) + bias)`` in one kernel; batch axes broadcast (keyword arguments)."""
    op = "fused.mat_mul"
    activation = _activation(activation, op)
    ta, tb, temps = binary_inputs(a, b, op)
    with ConvArgs(op) as args:
        args.temps.extend(temps)
        if ta.dtype not in ("float32", "int32"):
            raise TypeError(f"{op}: a and b must be float32 or int32, got {ta.dtype}")
        if ta.rank < 2 or tb.rank < 2:
            raise ValueError(
                f"{op}: a and b must have rank >= 2, got a.shape={list(ta.shape)}, b.shape={list(tb.shape)}"
            )
        inner_a = ta.shape[-2] if transpose_a else ta.shape[-1]
        inner_b = tb.shape[-1] if transpose_b else tb.shape[-2]
        if inner_a != inner_b:
            raise ValueError(
                f"{op}: inner dimensions ({inner_a}) and ({inner_b}) of a.shape={list(ta.shape)} and "
                f"b.shape={list(tb.shape)} (transpose_a={transpose_a}, transpose_b={transpose_b}) must match"
            )
        outer_a = ta.shape[-1] if transpose_a else ta.shape[-2]
        outer_b = tb.shape[-2] if transpose_b else tb.shape[-1]
        out_shape = (*broadcast_shape(ta.shape[:-2], tb.shape[:-2], op), outer_a, outer_b)
        inputs = [ta, tb]
        if bias is not None:
            inputs.append(_bias(args, bias, ta.dtype, out_shape, False))
        if prelu_activation_weights is not None:
            w = _prelu_weights(args, prelu_activation_weights, out_shape, False, conv=False)
            if activation == "prelu":
                inputs.append(w)
        elif activation == "prelu":
            raise ValueError(f"{op}: activation 'prelu' needs prelu_activation_weights")
        attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b), "activation": activation,
                 "leakyrelu_alpha": _alpha(leakyrelu_alpha, op)}  # fmt: skip
        return ENGINE.run_kernel(kn._FusedMatMul, tuple(inputs), attrs)


__all__ = ["conv2d", "depthwise_conv2d", "mat_mul"]
