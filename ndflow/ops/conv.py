"""Convolutions: conv1d, conv2d, conv2d_transpose, conv3d, conv3d_transpose, depthwise_conv2d,
separable_conv2d, dilation2d.

As in TF.js, a rank-3 (rank-4 for 3-D) input is a single example: it gains a batch axis for the
kernel and loses it again. ``pad`` is ``'same'``, ``'valid'``, an integer or (2-D) explicit pairs
``[[0, 0], [top, bottom], [left, right], [0, 0]]``; ``dim_rounding_mode`` (``'floor'``, ``'round'``,
``'ceil'``) rounds the output size for a numeric pad. Where TF.js 4.22 computes garbage (a numeric
pad with a non-square filter or unequal strides, fractional pads or strides, a negative output
size, an ``output_shape`` that does not match the input of a transposed convolution, NCHW
depthwise convolution) ndflow computes the right thing or raises a clear error.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ..core import conv_util as cu
from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import to_tensor


class ConvArgs:
    """Converted inputs of one conv op, with the temporaries to dispose when the op ends."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.temps: list[Tensor] = []

    def __enter__(self) -> ConvArgs:
        return self

    def __exit__(self, *exc: object) -> None:
        for t in self.temps:
            ENGINE.dispose_tensor(t)

    def tensor(self, x: Any, arg: str, float32: bool = False) -> Tensor:
        """``x`` as a tensor: float32 (non-tensors parsed as float32) or any numeric dtype."""
        if x.__class__ is Tensor and x.dtype == "float32":  # the common case
            return x
        t = to_tensor(x, arg, self.op, "float32" if float32 and not isinstance(x, Tensor) else None)
        if t is not x:
            self.temps.append(t)
        if float32 and t.dtype != "float32":
            raise TypeError(f"{self.op}: argument '{arg}' must be a float32 tensor, got {t.dtype}")
        if t.dtype in ("string", "complex64"):
            raise TypeError(f"{self.op}: argument '{arg}' must be a real numeric tensor, got {t.dtype}")
        return t

    def cast(self, t: Tensor, dtype: str) -> Tensor:
        if t.dtype == dtype:
            return t
        r = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": dtype})
        self.temps.append(r)
        return r

    def reshape(self, t: Tensor, shape: Sequence[int], keep: bool = False) -> Tensor:
        """``t`` reshaped (sharing data); a temporary unless ``keep``."""
        r = ENGINE.run_kernel(kn.Reshape, (t,), {"shape": tuple(shape)})
        if not keep:
            self.temps.append(r)
        return r

    def batched(self, t: Tensor, rank: int, arg: str = "x") -> tuple[Tensor, bool]:
        """``t`` with a batch axis of 1 when it has ``rank - 1`` axes; whether one was added."""
        if t.rank == rank - 1:
            return self.reshape(t, (1, *t.shape)), True
        if t.rank != rank:
            raise ValueError(f"{self.op}: {arg} must be rank {rank} (or {rank - 1}), got rank {t.rank}")
        return t, False

    def rank(self, t: Tensor, rank: int, arg: str) -> None:
        if t.rank != rank:
            raise ValueError(f"{self.op}: {arg} must be rank {rank}, got rank {t.rank} (shape {list(t.shape)})")

    def finish(self, result: Tensor, unbatch: bool) -> Tensor:
        """The kernel's result, without the batch axis the op added."""
        if not unbatch:
            return result
        self.temps.append(result)
        return self.reshape(result, result.shape[1:], keep=True)


def _check_depth(op: str, got: int, want: int, what: str = "depth of input") -> None:
    if got != want:
        raise ValueError(f"{op}: {what} ({got}) must match the input depth of the filter ({want})")


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key of plain ints and strings (lists become tuples), or None when it holds
    anything else (floats, bools, numpy scalars: those take the uncached path and its checks)."""
    kind = type(value)
    if value is None or kind is int or kind is str:
        return value
    if kind is tuple and all(type(v) is int for v in value):  # the common case: (1, 1)
        return value
    if isinstance(value, list | tuple):
        items = tuple(_frozen(v) for v in value)
        return None if any(i is None for i in items) else items
    return None


def _conv2d_geometry(
    op: str,
    x_shape: tuple[int, ...],
    f_shape: tuple[int, ...],
    strides: Any,
    pad: Any,
    data_format: str,
    dilations: Any,
    dim_rounding_mode: str | None,
    depthwise: bool,
) -> tuple[tuple[int, ...], tuple[int, ...], Any, cu.ConvInfo]:
    """Checked strides, dilations and pad, and the geometry of a 2-D convolution."""
    cu.check_data_format(data_format, op, ("NHWC", "NCHW"))
    pad = cu.check_pad(pad, op, 2)
    cu.check_pad_rounding(op, pad, dim_rounding_mode)
    in_depth = x_shape[3] if data_format == "NHWC" else x_shape[1]
    _check_depth(op, in_depth, f_shape[2], "number of input channels" if depthwise else "depth of input")
    s, d = cu.check_strides_dilations(strides, dilations, 2, op)
    info = cu.conv_info(x_shape, f_shape, s, d, pad, dim_rounding_mode, depthwise, data_format == "NHWC", op)
    return s, d, pad, info


# The geometry of the argument combinations seen (a model's layers): checks and output sizes cost ~50 us a call.
_cached_geometry = functools.lru_cache(maxsize=4096)(_conv2d_geometry)


def prepare_conv2d(
    a: ConvArgs,
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: Any,
    pad: Any,
    data_format: str,
    dilations: Any,
    dim_rounding_mode: str | None,
    depthwise: bool = False,
) -> tuple[Tensor, Tensor, dict, cu.ConvInfo, bool]:
    """Validated 4-D input, filter, kernel attributes and geometry of a (depthwise) 2-D convolution
    (the geometry cached per argument combination when the arguments are plain ints and strings)."""
    op = a.op
    xt = a.tensor(x, "x", float32=True)
    ft = a.tensor(filter, "filter", float32=True)
    x4, unbatch = a.batched(xt, 4)
    a.rank(ft, 4, "filter")
    geometry = _conv2d_geometry
    frozen_strides, frozen_pad, frozen_dilations = _frozen(strides), _frozen(pad), _frozen(dilations)
    plain = type(data_format) is str and (dim_rounding_mode is None or type(dim_rounding_mode) is str)
    if plain and None not in (frozen_strides, frozen_pad) and (dilations is None or frozen_dilations is not None):
        geometry, strides, pad, dilations = _cached_geometry, frozen_strides, frozen_pad, frozen_dilations
    s, d, pad, info = geometry(
        op, x4.shape, ft.shape, strides, pad, data_format, dilations, dim_rounding_mode, depthwise
    )
    attrs = {
        "strides": s,
        "pad": pad,
        "data_format": data_format,
        "dilations": d,
        "dim_rounding_mode": dim_rounding_mode,
    }
    return x4, ft, attrs, info, unbatch


def conv2d(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    dim_rounding_mode: str | None = None,
) -> Tensor:
    """2-D convolution of ``x`` (``[batch, h, w, in]``, or NCHW) with ``filter`` (``[fh, fw, in, out]``)."""
    with ConvArgs("conv2d") as a:
        x4, f, attrs, _, unbatch = prepare_conv2d(a, x, filter, strides, pad, data_format, dilations, dim_rounding_mode)
        return a.finish(ENGINE.run_kernel(kn.Conv2D, (x4, f), attrs), unbatch)


def conv1d(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    stride: int,
    pad: Any,
    data_format: str = "NWC",
    dilation: int = 1,
    dim_rounding_mode: str | None = None,
) -> Tensor:
    """1-D convolution of ``x`` (``[batch, width, in]``) with ``filter`` (``[fw, in, out]``), via conv2d."""
    op = "conv1d"
    with ConvArgs(op) as a:
        xt = a.tensor(x, "x", float32=True)
        ft = a.tensor(filter, "filter", float32=True)
        x3, unbatch = a.batched(xt, 3)
        a.rank(ft, 3, "filter")
        pad = cu.check_pad(pad, op, 2)
        cu.check_pad_rounding(op, pad, dim_rounding_mode)
        _check_depth(op, x3.shape[2], ft.shape[1])
        (s,), (d,) = cu.check_strides_dilations(stride, dilation, 1, op)
        if data_format != "NWC":
            raise ValueError(f"{op}: got data_format {data_format!r} but only 'NWC' is supported")
        if isinstance(pad, int):  # the pad applies to the width only (TF.js pads the dummy height too)
            pad = ((0, 0), (0, 0), (pad, pad), (0, 0))
        elif isinstance(pad, tuple) and pad[1] != (0, 0):
            raise ValueError(f"{op}: explicit pad must leave the height (pad[1]) at [0, 0], got {list(pad[1])}")
        x4 = a.reshape(x3, (x3.shape[0], 1, x3.shape[1], x3.shape[2]))
        f4 = a.reshape(ft, (1, *ft.shape))
        info = cu.conv_info(x4.shape, f4.shape, (1, s), (1, d), pad, dim_rounding_mode, op=op)
        attrs = {"strides": (1, s), "pad": pad, "data_format": "NHWC", "dilations": (1, d),
                 "dim_rounding_mode": dim_rounding_mode}  # fmt: skip
        res = ENGINE.run_kernel(kn.Conv2D, (x4, f4), attrs)
        a.temps.append(res)
        _, _, width, channels = info.out_shape
        return a.reshape(res, (width, channels) if unbatch else (res.shape[0], width, channels), keep=True)


def _transpose_args(
    a: ConvArgs, x: Any, filter: Any, output_shape: Any, n: int
) -> tuple[Tensor, Tensor, tuple[int, ...], bool]:
    """Input, filter and output shape of an n-d transposed convolution, batched."""
    op = a.op
    xt = a.tensor(x, "x")
    ft = a.tensor(filter, "filter")
    if isinstance(output_shape, Tensor) or not isinstance(output_shape, Sequence):
        raise TypeError(f"{op}: argument 'output_shape' must be a list of ints, got {type(output_shape).__name__}")
    out_shape = tuple(output_shape)
    if not all(cu._is_int(v) and v >= 0 for v in out_shape):
        raise ValueError(f"{op}: argument 'output_shape' must hold non-negative ints, got {list(output_shape)}")
    out_shape = tuple(int(v) for v in out_shape)
    if len(out_shape) != xt.rank:
        raise ValueError(f"{op}: length of output_shape ({len(out_shape)}) and rank of x ({xt.rank}) must match")
    x_b, unbatch = a.batched(xt, n + 2)
    if unbatch:
        out_shape = (1, *out_shape)
    a.rank(ft, n + 2, "filter")
    _check_depth(op, out_shape[-1], ft.shape[-2], "depth of output_shape")
    if x_b.shape[-1] != ft.shape[-1]:
        raise ValueError(
            f"{op}: depth of x ({x_b.shape[-1]}) must match the output depth of the filter ({ft.shape[-1]})"
        )
    return x_b, ft, out_shape, unbatch


def _check_transpose_shape(op: str, info: cu.ConvInfo, x_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> None:
    if tuple(info.out_shape) != tuple(x_shape):
        raise ValueError(
            f"{op}: output_shape {list(out_shape)} is inconsistent with x of shape {list(x_shape)}: a convolution "
            f"of output_shape with these strides and pad has shape {list(info.out_shape)}"
        )


def conv2d_transpose(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    output_shape: Sequence[int],
    strides: int | Sequence[int],
    pad: Any,
    dim_rounding_mode: str | None = None,
) -> Tensor:
    """Transposed 2-D convolution ("deconvolution"): the gradient of conv2d for its input (NHWC)."""
    op = "conv2d_transpose"
    with ConvArgs(op) as a:
        x4, f, out_shape, unbatch = _transpose_args(a, x, filter, output_shape, 2)
        pad = cu.check_pad(pad, op, 2)
        cu.check_pad_rounding(op, pad, dim_rounding_mode)
        s = cu.tuple_param(strides, 2, op, "strides")
        info = cu.conv_info(out_shape, f.shape, s, 1, pad, dim_rounding_mode, op=op)
        _check_transpose_shape(op, info, x4.shape, out_shape)
        attrs = {"input_shape": out_shape, "strides": s, "pad": pad, "data_format": "NHWC",
                 "dim_rounding_mode": dim_rounding_mode}  # fmt: skip
        return a.finish(ENGINE.run_kernel(kn.Conv2DBackpropInput, (x4, f), attrs), unbatch)


def conv3d(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    data_format: str = "NDHWC",
    dilations: int | Sequence[int] = 1,
) -> Tensor:
    """3-D convolution of ``x`` (``[batch, d, h, w, in]``) with ``filter`` (``[fd, fh, fw, in, out]``)."""
    op = "conv3d"
    with ConvArgs(op) as a:
        x5, unbatch = a.batched(a.tensor(x, "x"), 5)
        f = a.tensor(filter, "filter")
        a.rank(f, 5, "filter")
        _check_depth(op, x5.shape[4], f.shape[3])
        s, d = cu.check_strides_dilations(strides, dilations, 3, op)
        if data_format != "NDHWC":
            raise ValueError(f"{op}: got data_format {data_format!r} but only 'NDHWC' is supported")
        pad = cu.check_pad(pad, op, 3, explicit=False)
        cu.conv_info(x5.shape, f.shape, s, d, pad, op=op)
        attrs = {"strides": s, "pad": pad, "data_format": "NDHWC", "dilations": d}
        return a.finish(ENGINE.run_kernel(kn.Conv3D, (x5, f), attrs), unbatch)


def conv3d_transpose(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    output_shape: Sequence[int],
    strides: int | Sequence[int],
    pad: Any,
) -> Tensor:
    """Transposed 3-D convolution: the gradient of conv3d for its input (NDHWC)."""
    op = "conv3d_transpose"
    with ConvArgs(op) as a:
        x5, f, out_shape, unbatch = _transpose_args(a, x, filter, output_shape, 3)
        pad = cu.check_pad(pad, op, 3, explicit=False)
        s = cu.tuple_param(strides, 3, op, "strides")
        info = cu.conv_info(out_shape, f.shape, s, 1, pad, op=op)
        _check_transpose_shape(op, info, x5.shape, out_shape)
        attrs = {"input_shape": out_shape, "strides": s, "pad": pad}
        return a.finish(ENGINE.run_kernel(kn.Conv3DBackpropInputV2, (x5, f), attrs), unbatch)


def depthwise_conv2d(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    dim_rounding_mode: str | None = None,
) -> Tensor:
    """Depthwise 2-D convolution: ``filter`` ``[fh, fw, in, multiplier]`` applied per input channel."""
    with ConvArgs("depthwise_conv2d") as a:
        x4, f, attrs, _, unbatch = prepare_conv2d(
            a, x, filter, strides, pad, data_format, dilations, dim_rounding_mode, depthwise=True
        )
        return a.finish(ENGINE.run_kernel(kn.DepthwiseConv2dNative, (x4, f), attrs), unbatch)


def separable_conv2d(
    x: TensorLike,
    depthwise_filter: TensorLike,
    pointwise_filter: TensorLike,
    strides: int | Sequence[int],
    pad: Any,
    dilation: int | Sequence[int] = 1,
    data_format: str = "NHWC",
) -> Tensor:
    """A depthwise convolution followed by a 1x1 (pointwise) convolution mixing the channels."""
    op = "separable_conv2d"
    with ConvArgs(op) as a:
        xt = a.tensor(x, "x", float32=True)
        dw = a.tensor(depthwise_filter, "depthwise_filter", float32=True)
        pw = a.tensor(pointwise_filter, "pointwise_filter", float32=True)
        if data_format == "NCHW":
            raise ValueError(f"{op}: data_format NCHW is not supported; only NHWC is")
        x4, unbatch = a.batched(xt, 4)
        a.rank(dw, 4, "depthwise_filter")
        a.rank(pw, 4, "pointwise_filter")
        if pw.shape[0] != 1 or pw.shape[1] != 1:
            raise ValueError(f"{op}: pointwise_filter must be 1x1 spatially, got shape {list(pw.shape)}")
        channels = dw.shape[2] * dw.shape[3]
        if pw.shape[2] != channels:
            raise ValueError(
                f"{op}: the third dimension of pointwise_filter must be {channels} (in_channels * multiplier), "
                f"got {pw.shape[2]}"
            )
        _check_depth(op, x4.shape[3], dw.shape[2], "number of input channels")
        try:
            depthwise = depthwise_conv2d(x4, dw, strides, pad, data_format, dilation)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{op}: {exc}") from None
        a.temps.append(depthwise)
        return a.finish(conv2d(depthwise, pw, 1, "valid", data_format), unbatch)


def dilation2d(
    x: TensorLike,
    filter: TensorLike,  # noqa: A002 - TF.js's name
    strides: int | Sequence[int],
    pad: Any,
    dilations: int | Sequence[int] = 1,
    data_format: str = "NHWC",
) -> Tensor:
    """Grayscale morphological dilation: the max over each window of ``x + filter`` (``[fh, fw, depth]``)."""
    op = "dilation2d"
    with ConvArgs(op) as a:
        xt = a.tensor(x, "x")
        f = a.tensor(filter, "filter")
        if xt.rank not in (3, 4):
            raise ValueError(f"{op}: x must be rank 3 or 4, got rank {xt.rank}")
        a.rank(f, 3, "filter")
        if data_format != "NHWC":
            raise ValueError(f"{op}: only NHWC is supported, got data_format {data_format!r}")
        x4, unbatch = a.batched(xt, 4)
        if x4.shape[3] != f.shape[2]:
            raise ValueError(f"{op}: x and filter must have the same depth: {x4.shape[3]} vs {f.shape[2]}")
        s = cu.tuple_param(strides, 2, op, "strides")
        d = cu.tuple_param(dilations, 2, op, "dilations")
        pad = cu.check_pad(pad, op, 2)
        cu.conv_info(x4.shape, (*f.shape, f.shape[2]), s, d, pad, op=op)
        attrs = {"strides": s, "pad": pad, "dilations": d}
        return a.finish(ENGINE.run_kernel(kn.Dilation2D, (x4, f), attrs), unbatch)


__all__ = [
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "depthwise_conv2d",
    "separable_conv2d",
    "dilation2d",
]

CHAINED = [conv1d, conv2d, conv2d_transpose, depthwise_conv2d, dilation2d, separable_conv2d]  # as TF.js's chain API
