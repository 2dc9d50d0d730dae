"""Space, batch and depth rearrangements: SpaceToBatchND, BatchToSpaceND, DepthToSpace.

Each is a reshape, a transpose and a reshape (plus a pad or a crop), as TensorFlow defines them.
"""

from __future__ import annotations

import math

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of
from .transform import pad


@torch_kernel(kn.SpaceToBatchND, strings=True)
def space_to_batch_nd(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, paddings = list(attrs["block_shape"]), [tuple(p) for p in attrs["paddings"]]
    m = len(block)
    v = values_of(backend, x)
    rest = list(v.shape[1 + m :])
    padded = pad(v, [(0, 0), *paddings] + [(0, 0)] * len(rest))
    batch = padded.shape[0]
    # [batch, d1/b1, b1, ..., dM/bM, bM, rest] -> [b1, ..., bM, batch, d1/b1, ..., dM/bM, rest]
    split_shape = [batch]
    for d, b in zip(padded.shape[1 : 1 + m], block, strict=True):
        split_shape += [d // b, b]
    blocks = padded.reshape(split_shape + rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, blocks.dim()))
    outer = [d // b for d, b in zip(padded.shape[1 : 1 + m], block, strict=True)]
    result = blocks.permute(perm).reshape([batch * math.prod(block), *outer, *rest])
    return out(backend, result, x.dtype)


@torch_kernel(kn.BatchToSpaceND, strings=True)
def batch_to_space_nd(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, crops = list(attrs["block_shape"]), [tuple(c) for c in attrs["crops"]]
    m = len(block)
    v = values_of(backend, x)
    batch = v.shape[0] // math.prod(block)
    spatial, rest = list(v.shape[1 : 1 + m]), list(v.shape[1 + m :])
    # [b1, ..., bM, batch, d1, ..., dM, rest] -> [batch, d1, b1, ..., dM, bM, rest]
    blocks = v.reshape(block + [batch] + spatial + rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, blocks.dim()))
    full = blocks.permute(perm).reshape([batch] + [d * b for d, b in zip(spatial, block, strict=True)] + rest)
    index = (slice(None),) + tuple(slice(c0, full.shape[1 + i] - c1) for i, (c0, c1) in enumerate(crops))
    return out(backend, full[index].contiguous(), x.dtype)


@torch_kernel(kn.DepthToSpace, strings=True)
def depth_to_space(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    bs = attrs["block_size"]
    v = values_of(backend, x)
    if attrs["data_format"] == "NHWC":
        n, h, w, c = v.shape
        depth = c // (bs * bs)
        # channels are ordered (row offset, column offset, output channel)
        moved = v.reshape(n, h, w, bs, bs, depth).permute(0, 1, 3, 2, 4, 5)
        return out(backend, moved.reshape(n, h * bs, w * bs, depth), x.dtype)
    n, c, h, w = v.shape
    depth = c // (bs * bs)
    moved = v.reshape(n, bs, bs, depth, h, w).permute(0, 3, 4, 1, 5, 2)
    return out(backend, moved.reshape(n, depth, h * bs, w * bs), x.dtype)
