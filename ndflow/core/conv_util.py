"""Shape arithmetic shared by the convolution ops and kernels: strides, dilations, padding, output sizes.

Pure Python (no tensors, no numpy), so that ops and backend kernels can both use it, as TF.js's
backends use ``conv_util`` through ``backend_util``. Semantics follow TF.js 4.22's
``computeConv2DInfo`` / ``computeConv3DInfo`` with two corrections (see ``docs`` of the conv ops):
a numeric pad uses each spatial dimension's own filter size and stride (TF.js uses the height's for
both), and a negative output size is an error instead of a tensor with a negative shape.

Pads are ``(before, after)`` per spatial dimension. A negative pad crops (TF.js computes that for a
negative numeric pad, and for ``'same'`` in 3-D when a stride exceeds the filter).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

ROUNDING_MODES = ("floor", "round", "ceil")


class ConvInfo(NamedTuple):
    """Geometry of an n-d convolution (n = 2 or 3 spatial dimensions)."""

    batch: int
    in_channels: int
    out_channels: int
    in_size: tuple[int, ...]  # spatial sizes of the input
    out_size: tuple[int, ...]  # spatial sizes of the output
    filter_size: tuple[int, ...]  # spatial sizes of the filter
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]  # (before, after) per spatial dimension; negative crops
    channels_last: bool
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]

    @property
    def effective_filter_size(self) -> tuple[int, ...]:
        return tuple(effective_size(k, d) for k, d in zip(self.filter_size, self.dilations, strict=True))


def effective_size(k: int, dilation: int) -> int:
    """The extent of a filter of size ``k`` with holes (atrous convolution)."""
    return k if dilation <= 1 else k + (k - 1) * (dilation - 1)


def _is_int(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and float(v).is_integer()


def tuple_param(value: Any, n: int, op: str, arg: str) -> tuple[int, ...]:
    """An int or a sequence of ``n`` positive ints (``strides``, ``dilations``) as a tuple of ``n``."""
    if _is_int(value):
        values = [value] * n
    elif isinstance(value, Sequence) and not isinstance(value, str) and len(value) == n:
        values = list(value)
    else:
        raise ValueError(f"{op}: argument '{arg}' must be an int or a list of {n} ints, got {value!r}")
    if not all(_is_int(v) for v in values):
        raise ValueError(f"{op}: argument '{arg}' must hold integers, got {value!r}")
    if any(v <= 0 for v in values):
        raise ValueError(f"{op}: argument '{arg}' must be larger than 0, got {value!r}")
    return tuple(int(v) for v in values)


def either_strides_or_dilations_are_one(strides: tuple[int, ...], dilations: tuple[int, ...]) -> bool:
    return all(s == 1 for s in strides) or all(d == 1 for d in dilations)


def check_strides_dilations(strides: Any, dilations: Any, n: int, op: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated strides and dilations; one of them must be all ones (as in TF.js)."""
    s = tuple_param(strides, n, op, "strides")
    d = tuple_param(1 if dilations is None else dilations, n, op, "dilations")
    if not either_strides_or_dilations_are_one(s, d):
        raise ValueError(f"{op}: either strides or dilations must be 1, got strides {list(s)} and dilations {list(d)}")
    return s, d


def check_pad(pad: Any, op: str, n: int = 2, explicit: bool = True) -> Any:
    """``'same'``, ``'valid'``, an integer, or (2-D only) explicit ``[[0, 0], [t, b], [l, r], [0, 0]]``."""
    if isinstance(pad, str):
        if pad in ("same", "valid"):
            return pad
        raise ValueError(f"{op}: argument 'pad' must be 'same', 'valid', a number or explicit pads, got {pad!r}")
    if _is_int(pad):
        return int(pad)
    if isinstance(pad, int | float) and not isinstance(pad, bool):
        raise ValueError(f"{op}: argument 'pad' must be an integer, got {pad!r}")
    if explicit and isinstance(pad, Sequence) and len(pad) == n + 2:
        pairs = []
        for p in pad:
            if not (isinstance(p, Sequence) and len(p) == 2 and all(_is_int(v) for v in p)):
                break
            pairs.append((int(p[0]), int(p[1])))
        else:
            return tuple(pairs)
    forms = "'same', 'valid', an integer" + (f" or {n + 2} pairs of integers" if explicit else "")
    raise ValueError(f"{op}: argument 'pad' must be {forms}, got {pad!r}")


def check_pad_rounding(op: str, pad: Any, dim_rounding_mode: Any) -> None:
    """With a rounding mode the pad must be numeric (TF.js's ``checkPadOnDimRoundingMode``)."""
    if dim_rounding_mode is None:
        return
    if dim_rounding_mode not in ROUNDING_MODES:
        raise ValueError(
            f"{op}: argument 'dim_rounding_mode' must be one of {list(ROUNDING_MODES)} or None, "
            f"got {dim_rounding_mode!r}"
        )
    if isinstance(pad, str):
        raise ValueError(f"{op}: pad must be an integer when using dim_rounding_mode {dim_rounding_mode}, got {pad!r}")


def check_data_format(data_format: Any, op: str, formats: Sequence[str]) -> str:
    if data_format not in formats:
        raise ValueError(f"{op}: argument 'data_format' must be one of {list(formats)}, got {data_format!r}")
    return data_format


def _round(value: float, mode: str | None) -> int:
    if mode is None:
        return math.trunc(value)
    if mode == "round":
        return math.floor(value + 0.5)  # JavaScript's Math.round
    if mode == "ceil":
        return math.ceil(value)
    if mode == "floor":
        return math.floor(value)
    raise ValueError(f"unknown dim_rounding_mode {mode!r}")


def _pads_and_out(
    pad: Any,
    in_size: tuple[int, ...],
    eff: tuple[int, ...],
    strides: tuple[int, ...],
    mode: str | None,
    channels_last: bool,
    op: str,
) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    n = len(in_size)
    if pad == "same":
        out = tuple(-(-i // s) for i, s in zip(in_size, strides, strict=True))
        pads = []
        for i, k, s, o in zip(in_size, eff, strides, out, strict=True):
            total = (o - 1) * s + k - i
            if n == 2:  # TF.js clamps at 0 in 2-D only; in 3-D a negative total crops
                total = max(0, total)
            pads.append((total // 2, total - total // 2))
        return tuple(pads), out
    if pad == "valid" and n == 2:
        out = tuple(-(-(i - k + 1) // s) for i, k, s in zip(in_size, eff, strides, strict=True))
        return ((0, 0),) * n, out
    if pad == "valid" or isinstance(pad, int):
        p = 0 if pad == "valid" else pad
        pads = ((p, p),) * n
        if n == 3:  # TF.js: a dimension whose padded input is smaller than the filter has size 0
            out = tuple(
                _round((i - k + 2 * p) / s + 1, mode) if i + 2 * p >= k else 0
                for i, k, s in zip(in_size, eff, strides, strict=True)
            )
            return pads, out
    else:  # explicit [[0, 0], [top, bottom], [left, right], [0, 0]] (NHWC) or [[0, 0], [0, 0], [t, b], [l, r]]
        spatial = pad[1:-1] if channels_last else pad[2:]
        pads = tuple(tuple(p) for p in spatial)
    out = tuple(
        _round((i - k + b + a) / s + 1, mode) for i, k, s, (b, a) in zip(in_size, eff, strides, pads, strict=True)
    )
    return pads, out  # type: ignore[return-value]


def conv_info(
    in_shape: Sequence[int],
    filter_shape: Sequence[int],
    strides: Any,
    dilations: Any,
    pad: Any,
    dim_rounding_mode: str | None = None,
    depthwise: bool = False,
    channels_last: bool = True,
    op: str = "conv",
) -> ConvInfo:
    """Geometry of a 2-D or 3-D convolution; ``filter_shape`` is ``[*spatial, in_channels, out]``."""
    n = len(in_shape) - 2
    in_shape = tuple(int(d) for d in in_shape)
    if channels_last:
        batch, in_size, in_channels = in_shape[0], in_shape[1:-1], in_shape[-1]
    else:
        batch, in_channels, in_size = in_shape[0], in_shape[1], in_shape[2:]
    filter_size = tuple(int(d) for d in filter_shape[:n])
    s = tuple_param(strides, n, op, "strides")
    d = tuple_param(1 if dilations is None else dilations, n, op, "dilations")
    eff = tuple(effective_size(k, dd) for k, dd in zip(filter_size, d, strict=True))
    pad = check_pad(pad, op, n, explicit=n == 2)
    pads, out = _pads_and_out(pad, in_size, eff, s, dim_rounding_mode, channels_last, op)
    if any(o < 0 for o in out):
        raise ValueError(
            f"{op}: the output size would be negative ({list(out)}): the filter {list(filter_size)} "
            f"(dilations {list(d)}) does not fit the input {list(in_size)} with pad {pad!r}"
        )
    out_channels = int(filter_shape[-1]) * (in_channels if depthwise else 1)
    out_shape = (batch, *out, out_channels) if channels_last else (batch, out_channels, *out)
    return ConvInfo(batch, in_channels, out_channels, in_size, out, filter_size, s, d, pads, channels_last,
                    in_shape, out_shape)  # fmt: skip
