"""Gradients of reductions: Sum, Mean, Max, Min, ArgMax (no gradient flows through an index)."""

from __future__ import annotations

import math
from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import broadcast_to, cast, div, equal, mul, reshape, zeros_like


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> list[int]:
    return [1 if i in axes else d for i, d in enumerate(shape)]


def _kept(t: Tensor, shape: list[int]) -> Tensor:
    """``t`` (a reduction's result or its gradient) aligned for broadcasting against the input: reshaped
    to ``shape`` (the reduced axes kept as 1s), without a kernel where broadcasting already aligns it
    (the reduced axes were leading ones, or were kept)."""
    missing = len(shape) - t.rank
    if missing >= 0 and all(d == 1 for d in shape[:missing]) and list(t.shape) == shape[missing:]:
        return t
    return reshape(t, shape)


def _sum(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: broadcast_to(_kept(dy, _kept_shape(x.shape, attrs["axis"])), list(x.shape))]


def _mean(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy / count spread over the reduced axes (divided before it is spread: the same values, fewer divisions)."""
    (x,) = saved
    count = math.prod(x.shape[a] for a in attrs["axis"])
    return [lambda: broadcast_to(div(_kept(dy, _kept_shape(x.shape, attrs["axis"])), float(count)), list(x.shape))]


def _extreme(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy flows to every element equal to the extreme (ties share it, as in TF.js)."""
    x, y = saved

    def dx() -> Tensor:
        shape = _kept_shape(x.shape, attrs["axis"])
        hit = cast(equal(x, _kept(y, shape)), "float32")  # x's shape: the product below broadcasts dy to it
        return mul(_kept(dy, shape), hit)

    return [dx]


def _arg(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: zeros_like(cast(x, "float32"))]


register_gradient(kn.Sum, _sum, inputs_to_save=[0])
register_gradient(kn.Mean, _mean, inputs_to_save=[0])
register_gradient(kn.Max, _extreme, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.Min, _extreme, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.ArgMax, _arg, inputs_to_save=[0])
