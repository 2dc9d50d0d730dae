"""Gradients of scans, products and segment sums: Cumsum, Cumprod, Prod, ArgMin, UnsortedSegmentSum.

Cumprod and Prod are differentiated without dividing by ``x``, so inputs holding zeros get their
exact gradient; every gradient here is built from differentiable ops (higher orders work).
"""

from __future__ import annotations

import math
from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import (
    add,
    cast,
    clip_by_value,
    cumprod,
    cumsum,
    gather,
    greater_equal,
    less,
    logical_and,
    mul,
    pad,
    reshape,
    slice,
    transpose,
    where,
    zeros,
    zeros_like,
)


def _cumsum(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """The same scan of dy, run the other way (on any axis; TF.js's is wrong off the last axis)."""
    return [lambda: cumsum(dy, attrs["axis"], attrs["exclusive"], not attrs["reverse"])]


def _shift(t: Tensor, axis: int, by: int, reverse: bool) -> Tensor:
    """``t`` moved ``by`` places along ``axis`` towards the scan's start, zeros filling in.

    Forward scans see ``t[k + by]`` at ``k``; reverse scans ``t[k - by]``.
    """
    n = t.shape[axis]
    if by >= n:
        return zeros_like(t)
    begin = [0] * t.rank
    size = list(t.shape)
    size[axis] = n - by
    paddings = [[0, 0] for _ in range(t.rank)]
    if reverse:
        paddings[axis] = [by, 0]
    else:
        begin[axis] = by
        paddings[axis] = [0, by]
    return pad(slice(t, begin, size), paddings)


def _cumprod(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Beyond TF.js (which has no Cumprod gradient). For a forward inclusive scan,

        dx[k] = prod(x[:k]) * S[k],   S[k] = sum_{i >= k} dy[i] * prod(x[k+1 : i+1]),

    and S solves the linear recurrence ``S[k] = dy[k] + x[k+1] * S[k+1]``, computed by doubling
    (log2(n) steps of shift, multiply and add) with no division, so zeros in ``x`` are exact. The
    exclusive scan uses ``dy[k+1]`` in place of ``dy[k]``; reverse scans mirror the shifts.
    """
    (x,) = saved
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]

    def dx() -> Tensor:
        n = x.shape[axis]
        coeff = _shift(x, axis, 1, reverse)  # S[k] = total[k] + coeff[k] * S[k + step]
        total = _shift(dy, axis, 1, reverse) if exclusive else dy
        step = 1
        while step < n:
            total = add(total, mul(coeff, _shift(total, axis, step, reverse)))
            if 2 * step < n:
                coeff = mul(coeff, _shift(coeff, axis, step, reverse))
            step *= 2
        return mul(cumprod(x, axis, True, reverse), total)

    return [dx]


def _prod(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy times the product of the other elements of each reduced group: the exclusive running
    products from both ends multiplied (no division, so zeros are exact), as TF.js does."""
    (x,) = saved
    axes = sorted(attrs["axis"])

    def dx() -> Tensor:
        kept = [1 if i in axes else d for i, d in enumerate(x.shape)]
        if not axes:
            return reshape(dy, list(x.shape))
        outer = [i for i in range(x.rank) if i not in axes]
        perm = outer + axes
        moved = transpose(x, perm) if perm != list(range(x.rank)) else x
        flat = reshape(moved, [x.shape[i] for i in outer] + [math.prod(x.shape[i] for i in axes)])
        last = flat.rank - 1
        others = mul(cumprod(flat, last, True, False), cumprod(flat, last, True, True))
        others = reshape(others, list(moved.shape))
        if moved is not x:
            others = transpose(others, [perm.index(i) for i in range(x.rank)])
        return mul(others, reshape(dy, kept))

    return [dx]


def _arg_min(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: zeros_like(cast(x, "float32"))]


def _unsorted_segment_sum(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Each slice of x gets dy of its segment; slices whose id falls outside [0, num_segments)
    were dropped and get 0 (TF.js's gather fails on ids >= num_segments)."""
    (ids,) = saved
    n = attrs["num_segments"]
    x_shape = list(ids.shape) + list(dy.shape[1:])

    def dx() -> Tensor:
        if n == 0:
            return zeros(x_shape)
        gathered = gather(dy, clip_by_value(ids, 0, n - 1))
        valid = logical_and(greater_equal(ids, 0), less(ids, n))
        valid = reshape(valid, list(ids.shape) + [1] * (dy.rank - 1))
        return where(valid, gathered, 0.0)

    return [dx, None]


register_gradient(kn.Cumsum, _cumsum)
register_gradient(kn.Cumprod, _cumprod, inputs_to_save=[0])
register_gradient(kn.Prod, _prod, inputs_to_save=[0])
register_gradient(kn.ArgMin, _arg_min, inputs_to_save=[0])
register_gradient(kn.UnsortedSegmentSum, _unsorted_segment_sum, inputs_to_save=[1])
