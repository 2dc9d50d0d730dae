"""Pooling: max_pool, avg_pool, pool, max_pool3d, avg_pool3d, max_pool_with_argmax.

(The module is `pooling`, not `pool`: a submodule named `pool` would shadow the op `nf.pool`.)

Inputs are channels last (NHWC, NDHWC); a tensor one rank short is taken as a batch of one.
``pad`` is 'same', 'valid', a number, or (2D) explicit pairs ``[[0, 0], [top, bottom], [left,
right], [0, 0]]``; ``dim_rounding_mode`` ('floor', 'round', 'ceil') rounds the output size for
numeric pads. Max pooling never sees the padding; avg pooling averages over the input positions
of each window only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted
from .pool_util import parse_tuple, pool2d_info, pool3d_info, space_to_batch_base_padding

Size2 = int | tuple[int, int] | list[int]
Size3 = int | tuple[int, int, int] | list[int]
Pad = str | int | list[list[int]]


class MaxPoolWithArgmaxResult(NamedTuple):
    """``max_pool_with_argmax``'s result: the maxima and their flat indexes (int32)."""

    result: Tensor
    indexes: Tensor


def _check_numeric(t: Tensor, op: str, float_only: bool) -> None:
    if t.dtype in ("string", "complex64"):
        raise TypeError(f"{op}: argument 'x' must be a real numeric tensor, got {t.dtype}")
    if float_only and t.dtype != "float32":
        raise TypeError(f"{op}: argument 'x' must be float32, got {t.dtype}")


def _run_batched(kernel: str, t: Tensor, rank: int, attrs_for: Any, op: str) -> Tensor:
    """Run ``kernel`` on ``t`` made rank ``rank`` (a batch of one when one short), shape restored."""
    if t.rank not in (rank - 1, rank):
        raise ValueError(f"{op}: argument 'x' must be rank {rank} or {rank - 1}, got rank {t.rank}")
    if t.rank == rank:
        return ENGINE.run_kernel(kernel, (t,), attrs_for(t.shape))
    batched = ENGINE.run_kernel(kn.Reshape, (t,), {"shape": (1, *t.shape)})
    try:
        attrs = attrs_for(batched.shape)
        res = ENGINE.run_kernel(kernel, (batched,), attrs)
    finally:
        batched.dispose()
    try:
        return ENGINE.run_kernel(kn.Reshape, (res,), {"shape": res.shape[1:]})
    finally:
        res.dispose()


def _pool2d(kernel: str, op: str, x: Any, filter_size: Any, strides: Any, pad: Any, mode: str | None) -> Tensor:
    float_only = kernel == kn.AvgPool
    with converted(x, "x", op, "float32" if float_only else None) as t:
        _check_numeric(t, op, float_only)

        def attrs_for(shape: tuple[int, ...]) -> dict[str, Any]:
            return pool2d_info(shape[1:3], filter_size, strides, 1, pad, mode, op).attrs(pad, mode)

        return _run_batched(kernel, t, 4, attrs_for, op)


def max_pool(
    x: TensorLike, filter_size: Size2, strides: Size2, pad: Pad, dim_rounding_mode: str | None = None
) -> Tensor:
    """2D max pooling of an NHWC (or HWC) tensor; keeps the dtype; NaN is ignored."""
    return _pool2d(kn.MaxPool, "max_pool", x, filter_size, strides, pad, dim_rounding_mode)


def avg_pool(
    x: TensorLike, filter_size: Size2, strides: Size2, pad: Pad, dim_rounding_mode: str | None = None
) -> Tensor:
    """2D average pooling of a float32 NHWC (or HWC) tensor over the input positions of each window."""
    return _pool2d(kn.AvgPool, "avg_pool", x, filter_size, strides, pad, dim_rounding_mode)


def _pool3d(
    kernel: str, op: str, x: Any, filter_size: Any, strides: Any, pad: Any, mode: str | None, data_format: str
) -> Tensor:
    float_only = kernel == kn.AvgPool3D
    if strides is None or pad is None:
        raise TypeError(f"{op}: arguments 'strides' and 'pad' are required")
    with converted(x, "x", op, "float32" if float_only else None) as t:
        _check_numeric(t, op, float_only)
        if data_format != "NDHWC":
            raise ValueError(f"{op}: only data_format 'NDHWC' is supported, got {data_format!r}")

        def attrs_for(shape: tuple[int, ...]) -> dict[str, Any]:
            info = pool3d_info(shape[1:4], filter_size, strides, pad, mode, op)
            return {**info.attrs(pad, mode), "data_format": data_format}

        return _run_batched(kernel, t, 5, attrs_for, op)


def max_pool3d(
    x: TensorLike,
    filter_size: Size3 = (1, 1, 1),
    strides: Size3 | None = None,
    pad: str | int | None = None,
    dim_rounding_mode: str | None = None,
    data_format: str = "NDHWC",
) -> Tensor:
    """3D max pooling of an NDHWC (or DHWC) tensor; float32 out, as TF.js; NaN is ignored."""
    return _pool3d(kn.MaxPool3D, "max_pool3d", x, filter_size, strides, pad, dim_rounding_mode, data_format)


def avg_pool3d(
    x: TensorLike,
    filter_size: Size3,
    strides: Size3 | None = None,
    pad: str | int | None = None,
    dim_rounding_mode: str | None = None,
    data_format: str = "NDHWC",
) -> Tensor:
    """3D average pooling of a float32 NDHWC (or DHWC) tensor over the input positions of each window."""
    return _pool3d(kn.AvgPool3D, "avg_pool3d", x, filter_size, strides, pad, dim_rounding_mode, data_format)


def max_pool_with_argmax(
    x: TensorLike, filter_size: Size2, strides: Size2, pad: Pad, include_batch_in_index: bool = False
) -> MaxPoolWithArgmaxResult:
    """2D max pooling of an NHWC tensor, with the flat index of each maximum:
    ``(y * W + x) * C + c``, plus ``b * H * W * C`` when ``include_batch_in_index``."""
    op = "max_pool_with_argmax"
    with converted(x, "x", op) as t:
        _check_numeric(t, op, False)
        if t.rank != 4:
            raise ValueError(f"{op}: argument 'x' must be rank 4, got rank {t.rank}")
        info = pool2d_info(t.shape[1:3], filter_size, strides, 1, pad, None, op)
        attrs = {**info.attrs(pad, None), "include_batch_in_index": bool(include_batch_in_index)}
        result, indexes = ENGINE.run_kernel(kn.MaxPoolWithArgmax, (t,), attrs)
        return MaxPoolWithArgmaxResult(result, indexes)


def _zero_pad(t: Tensor, paddings: list[tuple[int, int]]) -> Tensor:
    """``t`` (NHWC) with zeros around its spatial dims (TF.js pads so in its space-to-batch step)."""
    from .creation import zeros
    from .slicing import concat

    def run() -> Tensor:
        result = t
        for axis, (before, after) in enumerate(paddings, start=t.rank - 3):
            parts = []
            for n in (before, after):
                shape = list(result.shape)
                shape[axis] = n
                parts.append(zeros(shape, t.dtype) if n else None)
            pieces = [p for p in (parts[0], result, parts[1]) if p is not None]
            result = concat(pieces, axis) if len(pieces) > 1 else result
        return result if result is not t else ENGINE.run_kernel(kn.Identity, (t,), None)

    return ENGINE.tidy(None, run, (), {})


def pool(
    input: TensorLike,  # noqa: A002 - TF.js's name
    window_shape: Size2,
    pooling_type: str,
    pad: Pad,
    dilations: Size2 | None = None,
    strides: Size2 | None = None,
    dim_rounding_mode: str | None = None,
) -> Tensor:
    """Max or avg pooling ('max'/'avg') with optional dilation, as TF.js's ``pool``.

    With dilation > 1 (strides must then be 1) the windows skip input positions; 'same' then pads
    with zeros, which take part in the max and the mean, as in TF.js (and TensorFlow).
    """
    op = "pool"
    dilations = 1 if dilations is None else dilations
    strides = 1 if strides is None else strides
    if isinstance(pad, int | float) and not isinstance(pad, bool) and pad == 0:
        pad = "valid"
    if pooling_type not in ("max", "avg"):
        raise ValueError(f"{op}: argument 'pooling_type' must be 'max' or 'avg', got {pooling_type!r}")
    kernel = kn.AvgPool if pooling_type == "avg" else kn.MaxPool
    d = parse_tuple(dilations, 2, op, "dilations")
    s = parse_tuple(strides, 2, op, "strides")
    if d != (1, 1) and s != (1, 1):
        raise ValueError(
            f"{op}: either strides or dilations must be 1, got strides {strides} and dilations {dilations}"
        )
    if d == (1, 1):
        return _pool2d(kernel, op, input, window_shape, strides, pad, dim_rounding_mode)
    if not (isinstance(pad, str) and pad in ("same", "valid")):
        raise ValueError(f"{op}: with dilations > 1, pad must be 'same' or 'valid', got {pad!r}")
    if dim_rounding_mode is not None:
        raise ValueError(f"{op}: dim_rounding_mode needs a numeric pad, which dilations > 1 do not take")
    float_only = kernel == kn.AvgPool
    with converted(input, "x", op, "float32" if float_only else None) as t:
        _check_numeric(t, op, float_only)
        if t.rank not in (3, 4):
            raise ValueError(f"{op}: argument 'x' must be rank 4 or 3, got rank {t.rank}")
        f = parse_tuple(window_shape, 2, op, "window_shape")
        padded = _zero_pad(t, space_to_batch_base_padding(f, d)) if pad == "same" else t

        def attrs_for(shape: tuple[int, ...]) -> dict[str, Any]:
            return pool2d_info(shape[1:3], f, s, d, "valid", None, op).attrs("valid", None)

        try:
            return _run_batched(kernel, padded, 4, attrs_for, op)
        finally:
            if padded is not t:
                padded.dispose()


__all__ = ["max_pool", "avg_pool", "pool", "max_pool3d", "avg_pool3d", "max_pool_with_argmax"]

CHAINED = [max_pool, avg_pool, pool]  # also Tensor methods, as TF.js's chain API has them
