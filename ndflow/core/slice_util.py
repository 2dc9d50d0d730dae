"""Strided-slice specs (begin, end, strides and the five bit masks of TF) as numpy indices."""

from __future__ import annotations

from typing import Any

import numpy as np


def strided_slice_index(shape: tuple[int, ...], attrs: dict[str, Any]) -> tuple[Any, ...]:
    """The numpy index that selects what ``tf.stridedSlice`` selects (masks as in TF).

    Each spec position is an ellipsis, a new axis, a single index (shrink) or a slice; numpy
    indexing has exactly these semantics, including clamping of out-of-range slice bounds.
    """
    begin, end = list(attrs["begin"]), list(attrs["end"])
    strides = list(attrs["strides"]) if attrs.get("strides") is not None else [1] * len(begin)
    n = len(begin)
    if len(end) != n or len(strides) != n:
        raise ValueError(
            f"strided_slice: 'begin' ({len(begin)}), 'end' ({len(end)}) and 'strides' ({len(strides)}) "
            "must have the same length"
        )
    for arg, values in (("begin", begin), ("end", end), ("strides", strides)):
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise TypeError(f"strided_slice: argument '{arg}' must hold ints, got {values}")
    begin_mask = attrs.get("begin_mask", 0)
    end_mask = attrs.get("end_mask", 0)
    ellipsis_mask = attrs.get("ellipsis_mask", 0)
    new_axis_mask = attrs.get("new_axis_mask", 0)
    shrink_mask = attrs.get("shrink_axis_mask", 0)
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("strided_slice: only one ellipsis is allowed (ellipsis_mask has several bits set)")
    index: list[Any] = []
    consumed = sum(1 for i in range(n) if not (new_axis_mask >> i) & 1 and not (ellipsis_mask >> i) & 1)
    axis = 0
    for i in range(n):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
            axis += max(len(shape) - consumed, 0)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_mask & bit:
            if axis >= len(shape):
                raise ValueError(f"strided_slice: index at position {i} is beyond the rank {len(shape)}")
            if strides[i] != 1:
                raise ValueError(f"strided_slice: only stride 1 is allowed on a shrunk axis, got {strides[i]}")
            dim = shape[axis]
            b = begin[i] + dim if begin[i] < 0 else begin[i]
            if not 0 <= b < dim:
                raise IndexError(f"strided_slice: index {begin[i]} is out of bounds for axis {axis} of size {dim}")
            index.append(b)
            axis += 1
        else:
            if strides[i] == 0:
                raise ValueError(f"strided_slice: stride at position {i} must be non-zero")
            b = None if begin_mask & bit else begin[i]
            e = None if end_mask & bit else end[i]
            index.append(slice(b, e, strides[i]))
            axis += 1
    if axis > len(shape):
        raise ValueError(f"strided_slice: the slice spec indexes {axis} axes but the tensor has rank {len(shape)}")
    return tuple(index)
