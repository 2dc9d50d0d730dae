"""Helpers shared by gradient functions."""

from __future__ import annotations

from ..core.tensor import Tensor
from ..ops import reshape, sum


def reduction_axes(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """Axes of ``out_shape`` that broadcasting added or stretched relative to ``in_shape``."""
    axes = []
    offset = len(out_shape) - len(in_shape)
    for i, dim in enumerate(out_shape):
        j = i - offset
        if j < 0 or (in_shape[j] == 1 and dim != 1):
            axes.append(i)
    return axes


def unbroadcast(dy: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``dy`` over broadcast axes so that it has ``shape`` (the input's shape).

    One kernel where one suffices: axes stretched from 1 are kept (size 1) by the sum itself, and a
    reshape follows only when leading axes were added *and* others stretched.
    """
    if dy.shape == shape:
        return dy
    axes = reduction_axes(shape, dy.shape)
    if not axes:
        return reshape(dy, list(shape))
    added = len(dy.shape) - len(shape)
    stretched = any(a >= added for a in axes)
    summed = sum(dy, axes, stretched)
    return reshape(summed, list(shape)) if summed.shape != shape else summed
