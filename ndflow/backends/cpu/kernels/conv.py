"""Convolutions (2-D): Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, and the n-d helpers they share.

Every convolution runs channels-last: im2col through a strided view of the (padded) input and one
BLAS matrix product; a 1x1 convolution without padding or strides is a plain matrix product. The
backward-input pass is the transpose: one matrix product to columns, then col2im (a small loop
over the filter taps adding vectorised slices); with numba (``ndflow.backends.cpu.numba``) the 2-D
backward-input pass runs one matrix product per tap into a reused buffer and a compiled scatter-add
instead (no taps-times-larger column matrix), and the 2-D forward pass writes its columns in one compiled
pass (no padded copy of the input), in blocks of output rows whose columns stay in cache for the matrix
product. NCHW inputs are transposed in and out. With numba, channels-last float32 Conv2D (and the fused and
depthwise kernels) run through a plan cached per call signature (:func:`planned`, :mod:`..plans.conv`).

Attributes (TF.js's, in snake_case): ``strides``, ``pad`` (``'same'``, ``'valid'``, an int or
explicit pairs), ``data_format`` (``'NHWC'``/``'NCHW'``), ``dilations``, ``dim_rounding_mode``;
the backprop kernels take ``input_shape`` / ``filter_shape`` too.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ....core import kernel_names as kn
from ....core.conv_util import ConvInfo
from ....core.replay_attrs import ReplayAttrs
from ...shared.conv import check_dy, info_from_attrs
from ..backend import CPUBackend
from ..native import parallel
from ..numba import grads as jit_grads
from ..numba import ops as jit_ops
from ..plans import conv as plans
from .common import Output, cpu_kernel, out, values_of

# ----------------------------------------------------------------------------- n-d helpers


def to_channels_last(a: np.ndarray, info: ConvInfo) -> np.ndarray:
    return a if info.channels_last else np.moveaxis(a, 1, -1)


def from_channels_last(a: np.ndarray, info: ConvInfo) -> np.ndarray:
    return a if info.channels_last else np.ascontiguousarray(np.moveaxis(a, -1, 1))


def needed_size(info: ConvInfo) -> tuple[int, ...]:
    """Extent of padded input that the windows read, per spatial dimension."""
    return tuple(
        (o - 1) * s + (k - 1) * d + 1 if o > 0 else 0
        for o, s, k, d in zip(info.out_size, info.strides, info.filter_size, info.dilations, strict=True)
    )


def place(src: np.ndarray, sizes: tuple[int, ...], offsets: tuple[int, ...], fill: float = 0) -> np.ndarray:
    """``dst[p] = src[p - offset]`` over the spatial axes of channels-last arrays; ``fill`` elsewhere.

    Pads (positive offsets) or crops (negative ones). Returns ``src`` itself (maybe a view of it)
    when no padding is needed.
    """
    n = len(sizes)
    spatial = src.shape[1 : 1 + n]
    if all(o == 0 for o in offsets) and all(d <= s for d, s in zip(sizes, spatial, strict=True)):
        return src[(slice(None), *(slice(0, d) for d in sizes))]
    dst = np.full((src.shape[0], *sizes, src.shape[-1]), fill, dtype=src.dtype)
    dst_sl, src_sl = [slice(None)], [slice(None)]
    for d, s, off in zip(sizes, spatial, offsets, strict=True):
        lo, hi = max(0, off), min(d, s + off)
        if hi <= lo:
            return dst
        dst_sl.append(slice(lo, hi))
        src_sl.append(slice(lo - off, hi - off))
    dst[tuple(dst_sl)] = src[tuple(src_sl)]
    return dst


def padded_input(x: np.ndarray, info: ConvInfo, fill: float = 0) -> np.ndarray:
    """Channels-last input placed so that every window lies inside it (padding with ``fill``)."""
    return place(x, needed_size(info), tuple(b for b, _ in info.pads), fill)


def windows(xp: np.ndarray, info: ConvInfo) -> np.ndarray:
    """Read-only strided view ``(batch, *out, *filter, channels)`` of the padded input's windows."""
    st = xp.strides
    n = len(info.out_size)
    shape = (xp.shape[0], *info.out_size, *info.filter_size, xp.shape[-1])
    strides = (
        st[0],
        *(st[1 + i] * info.strides[i] for i in range(n)),
        *(st[1 + i] * info.dilations[i] for i in range(n)),
        st[-1],
    )
    return as_strided(xp, shape, strides, writeable=False)


def tap_slices(tap: tuple[int, ...], info: ConvInfo) -> tuple[slice, ...]:
    """Index of the padded input read by filter tap ``tap`` for every output position."""
    return (
        slice(None),
        *(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, info.dilations, info.out_size, info.strides, strict=True)
        ),
        slice(None),
    )


def _is_pointwise_geometry(info: ConvInfo, in_shape: tuple[int, ...]) -> bool:
    """:func:`is_pointwise` from the shapes alone (contiguity is checked per call)."""
    return (
        all(f == 1 for f in info.filter_size)
        and all(s == 1 for s in info.strides)
        and all(p == (0, 0) for p in info.pads)
        and tuple(info.out_size) == tuple(in_shape[1:-1])
    )


def _is_full_window_geometry(info: ConvInfo) -> bool:
    """Whether the filter covers the whole (unpadded, undilated) input once: the one output position's column
    row is then the input's row, and the convolution one product ``(batch, H*W*C) @ (KH*KW*C, out)``."""
    return (
        tuple(info.filter_size) == tuple(info.in_size)
        and all(d == 1 for d in info.dilations)
        and all(p == (0, 0) for p in info.pads)
        and all(o == 1 for o in info.out_size)
    )


def is_pointwise(x: np.ndarray, info: ConvInfo) -> bool:
    """Whether the convolution is 1x1 without padding or strides on a C-contiguous input: the input is then
    already the column matrix."""
    return _is_pointwise_geometry(info, x.shape) and x.flags.c_contiguous


def im2col(x: np.ndarray, info: ConvInfo) -> np.ndarray:
    """``(batch * prod(out), prod(filter) * channels)`` matrix of input windows (channels-last ``x``)."""
    n_rows = x.shape[0] * math.prod(info.out_size)
    k = math.prod(info.filter_size) * x.shape[-1]
    if is_pointwise(x, info):
        return x.reshape(n_rows, k)
    compiled = jit_ops.im2col(x, info)
    if compiled is not None:
        return compiled
    return np.ascontiguousarray(windows(padded_input(x, info), info)).reshape(n_rows, k)


def conv_forward(x: np.ndarray, w: np.ndarray, info: ConvInfo) -> np.ndarray:
    """Channels-last convolution of ``x`` with filter ``w`` (``[*filter, in, out]``) as one matrix product."""
    out_channels = w.shape[-1]
    shape = (x.shape[0], *info.out_size, out_channels)
    if math.prod(shape) == 0:
        return np.zeros(shape, dtype=np.result_type(x, w))
    if not is_pointwise(x, info):
        compiled = jit_ops.conv2d(x, w, info)  # im2col and product in cache-sized blocks
        if compiled is not None:
            return compiled
    cols = im2col(x, info)
    w2 = w.reshape(-1, out_channels)
    if cols.dtype == np.float32 == w2.dtype:
        return parallel.matmul(cols, w2).reshape(shape)  # large products over the cores
    return (cols @ w2).reshape(shape)


def col2im(cols: np.ndarray, info: ConvInfo, channels: int, dtype: np.dtype) -> np.ndarray:
    """Sum window columns ``(batch, *out, *filter, channels)`` back onto the (unpadded) input."""
    n = len(info.out_size)
    dxp = np.zeros((cols.shape[0], *needed_size(info), channels), dtype=dtype)
    for tap in itertools.product(*(range(k) for k in info.filter_size)):
        dxp[tap_slices(tap, info)] += cols[(slice(None),) * (1 + n) + tap]
    return place(dxp, info.in_size, tuple(-b for b, _ in info.pads))


def conv_backprop_input(dy: np.ndarray, w: np.ndarray, info: ConvInfo) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its input (channels-last ``dy``)."""
    channels = w.shape[-2]
    shape = (dy.shape[0], *info.in_size, channels)
    if math.prod(shape) == 0 or dy.size == 0:
        return np.zeros(shape, dtype=np.result_type(dy, w))
    if dy.dtype == np.float32 and w.dtype == np.float32:
        compiled = jit_ops.conv_backprop_input(dy, w, info)
        if compiled is not None:
            return compiled
    cols = dy.reshape(-1, dy.shape[-1]) @ w.reshape(-1, w.shape[-1]).T
    cols = cols.reshape(dy.shape[:-1] + tuple(info.filter_size) + (channels,))
    return np.ascontiguousarray(col2im(cols, info, channels, cols.dtype))


def conv_backprop_filter(x: np.ndarray, dy: np.ndarray, info: ConvInfo, filter_shape: tuple[int, ...]) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its filter (channels-last ``x`` and ``dy``)."""
    if x.size == 0 or dy.size == 0:
        return np.zeros(filter_shape, dtype=np.result_type(x, dy))
    if info.channels_last:
        compiled = jit_grads.conv_backprop_filter(x, dy, info, filter_shape)
        if compiled is not None:
            return compiled
    cols = im2col(x, info)
    return (cols.T @ dy.reshape(-1, dy.shape[-1])).reshape(filter_shape)


def values(backend: CPUBackend, t: object, dtype: type = np.float32) -> np.ndarray:
    v = values_of(backend, t)  # type: ignore[arg-type]
    return v if v.dtype == dtype else v.astype(dtype)


# ----------------------------------------------------------------------------- plans


def conv_input_slots(n_inputs: int, attrs: dict) -> tuple[int, int, int]:
    """Indexes (-1: none) of the bias, the residual and the PReLU weights among a fused convolution's inputs:
    ``(x, filter)``, then the bias when there is one, then the residual (``residual: True``), then the PReLU
    weights (``activation == 'prelu'``)."""
    rest = list(range(2, n_inputs))
    prelu = rest.pop() if (attrs.get("activation") or "linear") == "prelu" and rest else -1
    residual = -1
    if attrs.get("residual"):
        if not rest:
            raise ValueError("fused convolution with residual=True needs the residual input")
        residual = rest.pop()
    bias = rest[0] if rest else -1
    return bias, residual, prelu


def _build_plan(kernel: str, depthwise: bool, fused: bool, inputs: tuple, attrs: dict) -> plans.ConvPlan | None:
    """The plan of a 2-D (depthwise) convolution call, or None where its compiled path does not apply (not
    channels-last float32, an empty tensor, an epilogue the compiled code cannot apply)."""
    slots = conv_input_slots(len(inputs), attrs) if fused else (-1, -1, -1)
    x, f = inputs[0], inputs[1]
    info = info_from_attrs(x.shape, f.shape, attrs, kernel, depthwise)
    if not info.channels_last or x.dtype != "float32" or f.dtype != "float32" or len(x.shape) != 4:
        return None
    if 0 in x.shape or 0 in f.shape or 0 in info.out_shape:
        return None
    if depthwise:
        route = jit_ops.depthwise_route(info, x.shape, f.shape)
    elif _is_pointwise_geometry(info, x.shape):
        route = plans.pointwise_route(info.out_shape, x.shape[-1])
    elif _is_full_window_geometry(info):  # one output position: (batch, H*W*C) @ (KH*KW*C, out)
        route = plans.pointwise_route(info.out_shape, x.shape[1] * x.shape[2] * x.shape[3])
    else:
        route = jit_ops.conv_route(info, x.shape, f.shape)
    if route is None:
        return None
    epilogue = plans.IDENTITY
    if fused:
        epilogue = plans.epilogue_plan(
            slots,
            [t.shape for t in inputs],
            [t.dtype for t in inputs],
            attrs.get("activation") or "linear",
            attrs.get("leakyrelu_alpha", 0.2),
            info.out_shape,
        )
        if epilogue is None:
            return None
    return plans.ConvPlan(route, epilogue)


_BUILDERS = {
    (kernel, depthwise, fused): functools.partial(_build_plan, kernel, depthwise, fused)
    for kernel, depthwise, fused in (
        ("Conv2D", False, False),
        ("FusedConv2D", False, True),
        ("DepthwiseConv2dNative", True, False),
        ("FusedDepthwiseConv2D", True, True),
    )
}


def planned(
    backend: CPUBackend, kernel: str, inputs: tuple, attrs: dict, depthwise: bool, fused: bool
) -> Output | None:
    """The output of a 2-D convolution kernel through its cached plan (:mod:`..plans.conv`), or None when it has
    none (the caller then runs its unplanned path, which gives the same result)."""
    if attrs.__class__ is ReplayAttrs:  # a replayed call whose plan is bound: straight to its bound call
        runner = plans.replayed_bound(attrs)
        if runner is not None:
            data, arrays = backend.data, []
            for t in inputs:
                v = data[t.data_id].values  # as values_of reads it
                arrays.append(v if v.shape == t.shape else v.reshape(t.shape))
            y = runner(arrays)
            if y is not None:
                return backend.store(y), y.shape, "float32"
    plan = plans.PLANS.lookup(kernel, inputs, attrs, _BUILDERS[kernel, depthwise, fused])
    if plan is None:
        return None
    y = plans.run_bound(plan, [values_of(backend, t) for t in inputs])
    if y is None:
        return None
    return backend.store(y), y.shape, "float32"


# ----------------------------------------------------------------------------- kernels


@cpu_kernel(kn.Conv2D)
def conv2d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; 2-D convolution, NHWC or NCHW."""
    result = planned(backend, "Conv2D", inputs, attrs, False, False)
    if result is not None:
        return result
    x, f = inputs
    info = info_from_attrs(x.shape, f.shape, attrs, "Conv2D")
    y = conv_forward(to_channels_last(values(backend, x), info), values(backend, f), info)
    return out(backend, from_channels_last(y, info), x.dtype)


@cpu_kernel(kn.Conv2DBackpropInput)
def conv2d_backprop_input(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv2D for x (conv2d_transpose)."""
    dy, f = inputs
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, "Conv2DBackpropInput")
    check_dy(dy.shape, info, "Conv2DBackpropInput")
    dx = conv_backprop_input(to_channels_last(values(backend, dy), info), values(backend, f), info)
    return out(backend, from_channels_last(dx, info), "float32")


@cpu_kernel(kn.Conv2DBackpropFilter)
def conv2d_backprop_filter(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv2D for its filter."""
    x, dy = inputs
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, "Conv2DBackpropFilter")
    check_dy(dy.shape, info, "Conv2DBackpropFilter")
    xv = to_channels_last(values(backend, x), info)
    dw = conv_backprop_filter(xv, to_channels_last(values(backend, dy), info), info, filter_shape)
    return out(backend, dw, "float32")
