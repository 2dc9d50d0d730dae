"""Fused kernels: FusedConv2D, FusedDepthwiseConv2D, _FusedMatMul (+ bias, + activation, in place).

Inputs are ``(x, filter)`` (``(a, b)`` for _FusedMatMul), then ``bias`` when there is one, then (the
convolutions, with the ndflow attribute ``residual: True``) a tensor of the output's shape added after
the bias, then the PReLU weights when ``activation == 'prelu'``. Attributes: those of the plain kernel
plus ``activation`` (``linear``, ``relu``, ``relu6``, ``elu``, ``leakyrelu``, ``prelu``, ``sigmoid``) and
``leakyrelu_alpha``. Bias, residual and activation work on the product's own buffer. With NCHW, a 1-D bias
or 1-D PReLU weights line up with the channels, as in TF.js. With numba, a channels-last float32
output gets its bias and activation in one compiled pass (written row by row, while the depthwise
kernel still has the row in cache) instead of a numpy pass per step. Those calls go through a plan cached per
call signature (:mod:`..plans.conv`): the second call of a model's node does only the numeric work.
"""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ...shared.conv import info_from_attrs
from ...shared.fused import ACTIVATIONS, split_inputs
from ..backend import CPUBackend
from ..native import parallel
from ..numba import ops as jit_ops
from ..plans import bound as jit_bound
from .common import Output, cpu_kernel, out, values_of
from .conv import (
    conv_forward,
    conv_input_slots,
    from_channels_last,
    planned,
    to_channels_last,
    values,
)
from .depthwise import depthwise_forward


def split_conv_inputs(inputs: tuple, attrs: dict) -> tuple[tuple, object, object, object]:
    """``(main inputs, bias or None, residual or None, prelu weights or None)`` of a fused convolution."""
    bias, residual, prelu = conv_input_slots(len(inputs), attrs)
    return (
        inputs[:2],
        inputs[bias] if bias >= 0 else None,
        inputs[residual] if residual >= 0 else None,
        inputs[prelu] if prelu >= 0 else None,
    )


def add_residual(y: np.ndarray, residual: np.ndarray, kernel: str) -> np.ndarray:
    """``y + residual`` in ``y``'s buffer; the residual has ``y``'s shape."""
    if residual.shape != y.shape:
        raise ValueError(f"{kernel}: residual of shape {list(residual.shape)} must match the output {list(y.shape)}")
    np.add(y, residual, out=y, casting="unsafe")
    return y


def _channel_aligned(v: np.ndarray, channels_first: bool) -> np.ndarray:
    """With NCHW, a 1-D vector (of more than one value) runs along the channels."""
    if channels_first and v.ndim == 1 and v.shape[0] != 1:
        return v.reshape(-1, 1, 1)
    return v


def add_bias(y: np.ndarray, bias: np.ndarray, channels_first: bool = False) -> np.ndarray:
    """``y + bias``, in ``y``'s buffer when the bias does not enlarge it."""
    bias = _channel_aligned(bias, channels_first)
    if np.broadcast_shapes(y.shape, bias.shape) == y.shape:
        np.add(y, bias, out=y, casting="unsafe")
        return y
    return (y + bias).astype(y.dtype)


def _float_work(y: np.ndarray) -> np.ndarray:
    return y if y.dtype == np.float32 else y.astype(np.float32)


def activate(
    y: np.ndarray, activation: str, alpha: np.ndarray | None, leakyrelu_alpha: float, channels_first: bool = False
) -> tuple[np.ndarray, str | None]:
    """Apply a fused activation in place where possible; returns the array and its dtype if it changed.

    Float results as TF.js's cpu kernels: relu, relu6, elu and sigmoid keep an int32 input int32
    (truncating), leakyrelu and prelu always give float32.
    """
    if activation == "linear":
        return y, None
    if activation == "relu":
        return np.maximum(y, 0, out=y), None  # keeps NaN, as TF.js's Math.max
    if activation == "relu6":
        return np.clip(y, 0, 6, out=y), None
    if activation == "elu":
        if y.dtype.kind != "f":  # exp(v) - 1 lies in (-1, 0) for v < 0: truncated to 0
            return np.maximum(y, 0, out=y), None
        return np.expm1(y, out=y, where=y < 0), None
    if activation == "sigmoid":
        work = y if y.dtype.kind == "f" else y.astype(np.float64)
        np.negative(work, out=work)
        np.exp(work, out=work)
        work += 1
        np.reciprocal(work, out=work)
        return (work if work is y else np.trunc(work).astype(y.dtype)), None
    if activation == "leakyrelu":
        y = _float_work(y)
        return np.multiply(y, np.float32(leakyrelu_alpha), out=y, where=y < 0), "float32"
    if activation == "prelu":
        if alpha is None:
            raise ValueError("activation 'prelu' needs the PReLU weights as the last input")
        y = _float_work(y)
        a = _channel_aligned(alpha.astype(np.float32, copy=False), channels_first)  # type: ignore[union-attr]
        if np.broadcast_shapes(y.shape, a.shape) == y.shape:
            return np.multiply(y, a, out=y, where=y < 0), "float32"
        return np.where(y < 0, y * a, y).astype(np.float32), "float32"
    raise ValueError(f"activation {activation!r} is not one of {list(ACTIVATIONS)}")


def _finish(
    backend: CPUBackend, y: np.ndarray, dtype: str, bias, prelu, attrs: dict, channels_first: bool, residual=None
) -> Output:
    if bias is not None:
        y = add_bias(y, values_of(backend, bias), channels_first)
    if residual is not None:
        y = add_residual(y, values_of(backend, residual), "fused kernel")
    activation = attrs.get("activation") or "linear"
    alpha = values_of(backend, prelu) if prelu is not None else None
    y, new_dtype = activate(y, activation, alpha, attrs.get("leakyrelu_alpha", 0.2), channels_first)
    return out(backend, y, new_dtype or dtype)


@cpu_kernel(kn.FusedConv2D)
def fused_conv2d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Conv2D, then ``+ bias``, then ``+ residual``, then the activation, on one output buffer."""
    result = planned(backend, "FusedConv2D", inputs, attrs, False, True)
    if result is not None:
        return result
    (x, f), bias, residual, prelu = split_conv_inputs(inputs, attrs)
    info = info_from_attrs(x.shape, f.shape, attrs, "FusedConv2D")
    y = conv_forward(to_channels_last(values(backend, x), info), values(backend, f), info)
    ep = compiled_epilogue(backend, x, bias, prelu, attrs, info, info.out_shape[-1], residual)
    if ep is not None and jit_ops.epilogue(y, ep):
        return out(backend, y, "float32")
    y = from_channels_last(y, info)
    return _finish(backend, y, x.dtype, bias, prelu, attrs, not info.channels_last, residual)


def compiled_epilogue(backend: CPUBackend, x, bias, prelu, attrs: dict, info, channels: int, residual=None):
    """The bias, residual and activation as a compiled epilogue (channels-last float32 only), or None."""
    if not info.channels_last or x.dtype != "float32":
        return None
    return jit_ops.make_epilogue(
        values_of(backend, bias) if bias is not None else None,
        attrs.get("activation") or "linear",
        attrs.get("leakyrelu_alpha", 0.2),
        values_of(backend, prelu) if prelu is not None else None,
        channels,
        len(info.out_shape),
        values_of(backend, residual) if residual is not None else None,
        tuple(info.out_shape),
    )


@cpu_kernel(kn.FusedDepthwiseConv2D)
def fused_depthwise_conv2d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """DepthwiseConv2dNative, then ``+ bias``, then ``+ residual``, then the activation, on one output buffer."""
    result = planned(backend, "FusedDepthwiseConv2D", inputs, attrs, True, True)
    if result is not None:
        return result
    (x, f), bias, residual, prelu = split_conv_inputs(inputs, attrs)
    info = info_from_attrs(x.shape, f.shape, attrs, "FusedDepthwiseConv2D", depthwise=True)
    xv = to_channels_last(values(backend, x), info)
    ep = compiled_epilogue(backend, x, bias, prelu, attrs, info, info.out_shape[-1], residual)
    if ep is not None and x.size and f.size:
        y = jit_ops.depthwise(xv, values(backend, f), info, ep)
        if y is not None:
            return out(backend, y, "float32")
    y = from_channels_last(depthwise_forward(xv, values(backend, f), info), info)
    return _finish(backend, y, x.dtype, bias, prelu, attrs, not info.channels_last, residual)


_F32 = np.dtype(np.float32)


def _small_product(inputs: tuple, attrs: dict):
    """A replayed float32 ``(m, k) @ (k, n)`` too small for a split, with a per-column bias and a linear, relu or
    relu6 activation: the same product and epilogue as the path below (the C module's, where it takes the
    product, its epilogue in registers; else numpy's calls), decided once. None where the call is not of that
    kind."""
    activation = attrs.get("activation") or "linear"
    (a, b), bias, prelu = split_inputs(inputs, activation)
    if activation not in ("linear", "relu", "relu6") or attrs.get("transpose_a") or attrs.get("transpose_b"):
        return None
    if len(a.shape) != 2 or len(b.shape) != 2 or a.dtype != "float32" or b.dtype != "float32":
        return None
    m, k = a.shape
    n = b.shape[1]
    threads = parallel.threads()
    if threads > 1 and 2 * m * k * n >= parallel.native_split.MIN_FLOPS:
        return None  # the native split's territory
    if bias is not None and (bias.dtype != "float32" or np.broadcast_shapes((m, n), bias.shape) != (m, n)):
        return None
    with_bias = bias is not None
    native = _native_small_product(m, k, n, threads, activation, None if bias is None else tuple(bias.shape))
    if native is not None:
        return native

    def run(arrays: list) -> np.ndarray | None:
        va, vb = arrays[0], arrays[1]
        if va.dtype is not _F32 or vb.dtype is not _F32:
            return None
        y = np.matmul(va, vb)
        if with_bias:
            vbias = arrays[2]
            if vbias.dtype is not _F32:
                return None
            np.add(y, vbias, out=y, casting="unsafe")
        if activation == "relu":
            np.maximum(y, 0, out=y)
        elif activation == "relu6":
            np.clip(y, 0, 6, out=y)
        return y

    return run


def _native_small_product(m: int, k: int, n: int, threads: int, activation: str, bias_shape: tuple | None):
    """:func:`_small_product` on the C module, where :func:`parallel.matmul` takes the product there (the plain
    call's kernel, so the same bits on every processor), or None where it does not. A bias of one value per
    column or a full ``(m, n)`` one goes into the product's epilogue with the activation; any other broadcast
    bias is added after the product by numpy, then the activation, as the plain call's ``_finish`` does."""
    native_split = parallel.native_split
    split = native_split.product_split(m, k, n, threads) if native_split.avx512_product(m, k) else None
    if split is None:
        return None
    per_column = bias_shape is not None and bias_shape[-1:] == (n,) and math.prod(bias_shape) == n
    full = bias_shape == (m, n)
    after = bias_shape is not None and not (per_column or full)  # added by numpy after the product
    threads, chunk, by_cols = split
    matmul, act = native_split.module().matmul, ("linear", "relu", "relu6").index(activation)

    def run(arrays: list) -> np.ndarray | None:
        va, vb = arrays[0], arrays[1]
        if va.dtype is not _F32 or vb.dtype is not _F32 or not (va.flags.c_contiguous and vb.flags.c_contiguous):
            return None
        vbias = add = None
        if bias_shape is not None:
            v = arrays[2]
            if v.dtype is not _F32:
                return None
            if per_column:
                vbias = v.reshape(n)
            elif full:
                add = np.ascontiguousarray(v)
        y = np.empty((m, n), np.float32)
        if not after:
            matmul(va, vb, y, vbias, add, act, threads, chunk, 0.0, None, by_cols)
            return y
        matmul(va, vb, y, None, None, 0, threads, chunk, 0.0, None, by_cols)
        np.add(y, arrays[2], out=y)
        if activation == "relu":
            np.maximum(y, 0, out=y)
        elif activation == "relu6":
            np.clip(y, 0, 6, out=y)
        return y

    return run


@cpu_kernel(kn._FusedMatMul)
def fused_mat_mul(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """BatchMatMul (batch axes broadcast), then ``+ bias``, then the activation, on one output buffer."""
    small = jit_bound.replayed(attrs, lambda: _small_product(inputs, attrs))
    if small is not None:
        y = small([values_of(backend, t) for t in inputs])
        if y is not None:
            return backend.store(y), y.shape, "float32"
    (a, b), bias, prelu = split_inputs(inputs, attrs.get("activation") or "linear")
    va = values_of(backend, a)
    vb = values_of(backend, b)
    if attrs.get("transpose_a"):
        va = np.swapaxes(va, -1, -2)
    if attrs.get("transpose_b"):
        vb = np.swapaxes(vb, -1, -2)
    if va.ndim == 2 and vb.ndim == 2 and va.dtype == np.float32 == vb.dtype:
        y = parallel.matmul(va, vb)  # large products over the cores
    else:
        y = np.matmul(va, vb)
    if not y.flags.writeable or not y.flags.c_contiguous:
        y = np.ascontiguousarray(y)
    return _finish(backend, y, a.dtype, bias, prelu, attrs, False)
