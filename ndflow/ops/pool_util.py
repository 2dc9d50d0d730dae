"""Pooling geometry: filter/stride/dilation parsing, padding and output sizes (TF.js's conv_util for pools).

Self-contained on purpose (the convolution family keeps its own helper). The result of
:func:`pool2d_info` / :func:`pool3d_info` is a :class:`PoolInfo`; its :meth:`PoolInfo.attrs` are the
kernel attributes of ``MaxPool``/``AvgPool``/``MaxPool3D``/``AvgPool3D`` and of their ``*Grad``
kernels, so a kernel never has to recompute the geometry.

TF.js quirks kept: ``'valid'`` output ``ceil((in - filter + 1) / stride)``; numeric pads rounded by
``dim_rounding_mode`` (truncation when none); 3D ``'same'`` does not clamp the total padding at zero
(a filter smaller than the stride shifts the windows). TF.js bugs not kept (see docs/beyond-tfjs):
a numeric pad in 2D sizes the width with the filter *height* and stride *height*; ndflow uses each
dimension's own; fractional pads, filters or strides below 1 and explicit pads on the batch or
channel axis are refused instead of giving garbage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

ROUNDING_MODES = ("floor", "round", "ceil")


class PoolInfo(NamedTuple):
    """Geometry of one pooling over the spatial dims of a channels-last tensor."""

    in_size: tuple[int, ...]
    filter_size: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pad_before: tuple[int, ...]  # may be negative (3D 'same' with a filter smaller than the stride)
    out_size: tuple[int, ...]

    def attrs(self, pad: Any, dim_rounding_mode: str | None) -> dict[str, Any]:
        """Kernel attributes: the TF.js ones plus the computed geometry."""
        return {
            "filter_size": self.filter_size,
            "strides": self.strides,
            "dilations": self.dilations,
            "pad": pad,
            "dim_rounding_mode": dim_rounding_mode,
            "pad_before": self.pad_before,
            "out_size": self.out_size,
        }


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def parse_tuple(value: Any, n: int, op: str, arg: str, minimum: int = 1) -> tuple[int, ...]:
    """An int or a list of ``n`` ints (each >= ``minimum``) as an ``n``-tuple."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if _is_int(value):
        items = [int(value)] * n
    elif isinstance(value, list | tuple) and len(value) == n:
        items = []
        for v in value:
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if not _is_int(v):
                raise TypeError(f"{op}: argument '{arg}' must hold ints, got {list(value)}")
            items.append(int(v))
    else:
        raise ValueError(f"{op}: argument '{arg}' must be an int or a list of {n} ints, got {value!r}")
    if any(v < minimum for v in items):
        raise ValueError(f"{op}: argument '{arg}' must be >= {minimum}, got {value!r}")
    return tuple(items)


def check_rounding(op: str, pad: Any, dim_rounding_mode: str | None) -> None:
    """TF.js's checkPadOnDimRoundingMode, plus a check of the mode itself."""
    if dim_rounding_mode is None:
        return
    if dim_rounding_mode not in ROUNDING_MODES:
        raise ValueError(
            f"{op}: argument 'dim_rounding_mode' must be one of {', '.join(ROUNDING_MODES)}, got {dim_rounding_mode!r}"
        )
    if isinstance(pad, str):
        raise ValueError(
            f"{op}: pad must be an integer when using dim_rounding_mode {dim_rounding_mode}, got pad {pad!r}"
        )


def _round(value: float, mode: str | None) -> int:
    if mode is None:
        return math.trunc(value)
    if mode == "round":
        return math.floor(value + 0.5)  # JavaScript's Math.round
    if mode == "ceil":
        return math.ceil(value)
    return math.floor(value)


def _effective(filter_size: tuple[int, ...], dilations: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(f + (f - 1) * (d - 1) for f, d in zip(filter_size, dilations, strict=True))


def _number_pad(pad: Any, op: str) -> int:
    if isinstance(pad, float) and pad.is_integer():
        pad = int(pad)
    if not _is_int(pad):
        raise ValueError(f"{op}: argument 'pad' must be an integer, 'same', 'valid' or explicit pairs, got {pad!r}")
    if pad < 0:
        raise ValueError(f"{op}: argument 'pad' must be >= 0, got {pad}")
    return int(pad)


def _explicit_pad(pad: Any, op: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``[[0, 0], [top, bottom], [left, right], [0, 0]]`` -> ((top, bottom), (left, right))."""
    if len(pad) != 4 or not all(isinstance(p, list | tuple) and len(p) == 2 for p in pad):
        raise ValueError(
            f"{op}: explicit 'pad' must be 4 pairs [[0, 0], [top, bottom], [left, right], [0, 0]], got {pad}"
        )
    values = [_number_pad(v, op) for pair in pad for v in pair]
    if values[0] or values[1] or values[6] or values[7]:
        raise ValueError(f"{op}: explicit 'pad' cannot pad the batch or channel axis, got {pad}")
    return (values[2], values[3]), (values[4], values[5])


def _check_out(out: tuple[int, ...], op: str, in_size: tuple[int, ...]) -> tuple[int, ...]:
    if any(o < 0 for o in out):
        raise ValueError(
            f"{op}: the filter does not fit: input size {list(in_size)} would give output size {list(out)}"
        )
    return out


def pool2d_info(
    in_size: Sequence[int],
    filter_size: Any,
    strides: Any,
    dilations: Any,
    pad: Any,
    dim_rounding_mode: str | None,
    op: str,
) -> PoolInfo:
    """Geometry of a 2D pool (TF.js computePool2DInfo, channels last)."""
    in_size = tuple(int(v) for v in in_size)
    f = parse_tuple(filter_size, 2, op, "filter_size")
    s = parse_tuple(strides, 2, op, "strides")
    d = parse_tuple(dilations, 2, op, "dilations")
    check_rounding(op, pad, dim_rounding_mode)
    eff = _effective(f, d)
    if isinstance(pad, str):
        if pad == "same":
            out = tuple(-(-n // st) for n, st in zip(in_size, s, strict=True))
            totals = [max(0, (o - 1) * st + e - n) for o, st, e, n in zip(out, s, eff, in_size, strict=True)]
            before = tuple(t // 2 for t in totals)
        elif pad == "valid":
            out = tuple(-(-(n - e + 1) // st) for n, e, st in zip(in_size, eff, s, strict=True))
            before = (0, 0)
        else:
            raise ValueError(f"{op}: unknown padding parameter {pad!r} (use 'same', 'valid', a number or pairs)")
    elif isinstance(pad, list | tuple):
        pairs = _explicit_pad(pad, op)
        before = (pairs[0][0], pairs[1][0])
        out = tuple(
            _round((n - e + a + b) / st + 1, dim_rounding_mode)
            for n, e, (a, b), st in zip(in_size, eff, pairs, s, strict=True)
        )
    else:
        p = _number_pad(pad, op)
        before = (p, p)
        out = tuple(
            _round((n - e + 2 * p) / st + 1, dim_rounding_mode) for n, e, st in zip(in_size, eff, s, strict=True)
        )
    return PoolInfo(in_size, f, s, d, before, _check_out(out, op, in_size))


def pool3d_info(
    in_size: Sequence[int],
    filter_size: Any,
    strides: Any,
    pad: Any,
    dim_rounding_mode: str | None,
    op: str,
) -> PoolInfo:
    """Geometry of a 3D pool (TF.js computePool3DInfo, NDHWC)."""
    in_size = tuple(int(v) for v in in_size)
    f = parse_tuple(filter_size, 3, op, "filter_size")
    s = parse_tuple(strides, 3, op, "strides")
    d = (1, 1, 1)
    check_rounding(op, pad, dim_rounding_mode)
    if pad == "valid":
        pad = 0
    if isinstance(pad, str):
        if pad != "same":
            raise ValueError(f"{op}: unknown padding parameter {pad!r} (use 'same', 'valid' or a number)")
        out = tuple(-(-n // st) for n, st in zip(in_size, s, strict=True))
        # TF.js does not clamp this at 0: a filter smaller than the stride starts the windows later.
        totals = [(o - 1) * st + e - n for o, st, e, n in zip(out, s, f, in_size, strict=True)]
        before = tuple(t // 2 for t in totals)
    elif isinstance(pad, list | tuple):
        raise ValueError(f"{op}: unknown padding parameter {pad!r}; 3D pools take 'same', 'valid' or a number")
    else:
        p = _number_pad(pad, op)
        before = (p, p, p)
        out = tuple(
            _round((n - e + 2 * p) / st + 1, dim_rounding_mode) if n + 2 * p >= e else 0
            for n, e, st in zip(in_size, f, s, strict=True)
        )
    return PoolInfo(in_size, f, s, d, before, _check_out(out, op, in_size))


def space_to_batch_base_padding(filter_size: tuple[int, ...], dilations: tuple[int, ...]) -> list[tuple[int, int]]:
    """The zero padding TF.js's ``pool`` adds for 'same' with dilation > 1 (more at the end when odd)."""
    out = []
    for total in (e - 1 for e in _effective(filter_size, dilations)):
        out.append((total // 2, total - total // 2))
    return out


__all__: list[str] = []  # a helper module: no public ops (ndflow.ops imports every module here)
