"""Index layouts of the space, batch and depth rearrangements shared by the backends (SpaceToBatchND,
BatchToSpaceND, DepthToSpace): each kernel is a reshape, a transpose and a reshape, as TensorFlow defines them;
these give the shapes and the permutation from the input's shape and the attributes."""

from __future__ import annotations

import math
from collections.abc import Sequence


def space_to_batch_layout(padded_shape: Sequence[int], block: list[int]) -> tuple[list[int], list[int], list[int]]:
    """``(split_shape, perm, out_shape)`` of SpaceToBatchND on the padded input:
    ``[batch, d1/b1, b1, ..., dM/bM, bM, rest] -> [b1, ..., bM, batch, d1/b1, ..., dM/bM, rest]``."""
    m = len(block)
    batch, spatial, rest = padded_shape[0], padded_shape[1 : 1 + m], list(padded_shape[1 + m :])
    split_shape = [batch]
    for d, b in zip(spatial, block, strict=True):
        split_shape += [d // b, b]
    split_shape += rest
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, len(split_shape)))
    outer = [d // b for d, b in zip(spatial, block, strict=True)]
    return split_shape, perm, [batch * math.prod(block), *outer, *rest]


def batch_to_space_layout(
    shape: Sequence[int], block: list[int], crops: list[tuple[int, int]]
) -> tuple[list[int], list[int], list[int], tuple[slice, ...]]:
    """``(blocks_shape, perm, full_shape, crop_index)`` of BatchToSpaceND:
    ``[b1, ..., bM, batch, d1, ..., dM, rest] -> [batch, d1, b1, ..., dM, bM, rest]``, then the crop."""
    m = len(block)
    batch = shape[0] // math.prod(block)
    spatial, rest = list(shape[1 : 1 + m]), list(shape[1 + m :])
    blocks_shape = block + [batch] + spatial + rest
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, len(blocks_shape)))
    full_shape = [batch] + [d * b for d, b in zip(spatial, block, strict=True)] + rest
    index = (slice(None),) + tuple(slice(c0, full_shape[1 + i] - c1) for i, (c0, c1) in enumerate(crops))
    return blocks_shape, perm, full_shape, index


def depth_to_space_layout(
    shape: Sequence[int], block_size: int, data_format: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(split_shape, perm, out_shape)`` of DepthToSpace; channels are ordered (row offset, column offset,
    output channel)."""
    bs = block_size
    if data_format == "NHWC":
        n, h, w, c = shape
        depth = c // (bs * bs)
        return (n, h, w, bs, bs, depth), (0, 1, 3, 2, 4, 5), (n, h * bs, w * bs, depth)
    n, c, h, w = shape
    depth = c // (bs * bs)
    return (n, bs, bs, depth, h, w), (0, 3, 4, 1, 5, 2), (n, depth, h * bs, w * bs)
