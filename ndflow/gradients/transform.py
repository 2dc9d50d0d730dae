"""Gradients of splitting, tiling, padding and spatial rearrangement: SplitV, Unpack, Tile, Reverse,
PadV2, MirrorPad, SpaceToBatchND, BatchToSpaceND, DepthToSpace, OneHot.

Beyond TF.js: ``MirrorPad``'s gradient adds the mirrored border back onto the values it copied
(TF.js only crops, which finite differences refute); ``Tile`` works at any rank (TF.js: 1 to 4);
``DepthToSpace`` has a gradient (TF.js has none).
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import (
    add,
    batch_to_space_nd,
    concat,
    pad,
    reshape,
    reverse,
    slice,
    space_to_batch_nd,
    stack,
    sum,
    transpose,
    zeros,
)


def _split_v(dy: list[Tensor], saved: list[Tensor], attrs: dict[str, Any]) -> list:
    parts = dy if isinstance(dy, list) else [dy]
    return [lambda: concat(parts, attrs["axis"])]


def _unpack(dy: list[Tensor], saved: list[Tensor], attrs: dict[str, Any]) -> list:
    parts = dy if isinstance(dy, list) else [dy]
    return [lambda: stack(parts, attrs["axis"])]


def _tile(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Each element of x appears once per tile: sum dy over the tiles (dims interleaved as [rep, dim])."""
    (x,) = saved
    reps = attrs["reps"]

    def dx() -> Tensor:
        if x.size == 0 or dy.size == 0:
            return zeros(x.shape)
        interleaved = [n for r, d in zip(reps, x.shape, strict=True) for n in (r, d)]
        axes = list(range(0, 2 * x.rank, 2))
        return reshape(sum(reshape(dy, interleaved), axes), list(x.shape))

    return [dx]


def _reverse(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: reverse(dy, list(attrs["dims"]))]


def _unpadded_shape(dy: Tensor, paddings: Any) -> list[int]:
    return [d - p[0] - p[1] for d, p in zip(dy.shape, paddings, strict=True)]


def _pad_v2(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    paddings = attrs["paddings"]
    return [lambda: slice(dy, [p[0] for p in paddings], _unpadded_shape(dy, paddings))]


def _part(t: Tensor, axis: int, start: int, length: int) -> Tensor:
    """``length`` entries of ``t`` from ``start`` along ``axis``."""
    begin, size = [0] * t.rank, list(t.shape)
    begin[axis], size[axis] = start, length
    return slice(t, begin, size)


def _placed(t: Tensor, axis: int, lead: int, trail: int) -> Tensor:
    """``t`` with ``lead`` zeros before and ``trail`` zeros after it along ``axis``."""
    widths = [[0, 0] for _ in range(t.rank)]
    widths[axis] = [lead, trail]
    return pad(t, widths)


def _mirror_pad(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Fold each padded border, reversed, back onto the values it mirrors, one axis at a time."""
    paddings, offset = attrs["paddings"], 1 if attrs["mode"] == "reflect" else 0

    def dx() -> Tensor:
        g = dy
        for axis, (before, after) in enumerate(paddings):
            if before == 0 and after == 0:
                continue
            n = g.shape[axis] - before - after
            total = _part(g, axis, before, n)
            if before:  # x[offset : offset + before] was copied, reversed, to the front
                front = reverse(_part(g, axis, 0, before), axis)
                total = add(total, _placed(front, axis, offset, n - offset - before))
            if after:  # x[n - offset - after : n - offset] was copied, reversed, to the back
                back = reverse(_part(g, axis, before + n, after), axis)
                total = add(total, _placed(back, axis, n - offset - after, offset))
            g = total
        return g

    return [dx]


def _space_to_batch_nd(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: batch_to_space_nd(dy, list(attrs["block_shape"]), [list(p) for p in attrs["paddings"]])]


def _batch_to_space_nd(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: space_to_batch_nd(dy, list(attrs["block_shape"]), [list(c) for c in attrs["crops"]])]


def _depth_to_space(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """The kernel is a reshape, a transpose and a reshape: undo them in reverse order."""
    bs = attrs["block_size"]

    def dx() -> Tensor:
        if attrs["data_format"] == "NHWC":
            n, hb, wb, depth = dy.shape
            h, w = hb // bs, wb // bs
            blocks = transpose(reshape(dy, [n, h, bs, w, bs, depth]), [0, 1, 3, 2, 4, 5])
            return reshape(blocks, [n, h, w, bs * bs * depth])
        n, depth, hb, wb = dy.shape
        h, w = hb // bs, wb // bs
        # forward: [n, bs, bs, depth, h, w] -> perm (0, 3, 4, 1, 5, 2); its inverse is (0, 3, 5, 1, 2, 4)
        blocks = transpose(reshape(dy, [n, depth, h, bs, w, bs]), [0, 3, 5, 1, 2, 4])
        return reshape(blocks, [n, bs * bs * depth, h, w])

    return [dx]


def _one_hot(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # As TF.js: zeros for the (integer) indices; the tape never asks, since int32 carries no gradient.
    return [lambda: zeros(dy.shape[:-1])]


register_gradient(kn.SplitV, _split_v)
register_gradient(kn.Unpack, _unpack)
register_gradient(kn.Tile, _tile, inputs_to_save=[0])
register_gradient(kn.Reverse, _reverse)
register_gradient(kn.PadV2, _pad_v2)
register_gradient(kn.MirrorPad, _mirror_pad)
register_gradient(kn.SpaceToBatchND, _space_to_batch_nd)
register_gradient(kn.BatchToSpaceND, _batch_to_space_nd)
register_gradient(kn.DepthToSpace, _depth_to_space)
register_gradient(kn.OneHot, _one_hot)
