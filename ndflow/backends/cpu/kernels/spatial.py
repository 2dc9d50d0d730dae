"""Space, batch and depth rearrangements: SpaceToBatchND, BatchToSpaceND, DepthToSpace.

Each is a reshape, a transpose and a reshape (plus a pad or a crop), as TensorFlow defines them.
"""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.SpaceToBatchND)
def space_to_batch_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, paddings = list(attrs["block_shape"]), [tuple(p) for p in attrs["paddings"]]
    m = len(block)
    values = values_of(backend, x)
    rest = values.shape[1 + m :]
    padded = np.pad(values, [(0, 0), *paddings] + [(0, 0)] * len(rest))
    batch = padded.shape[0]
    # [batch, d1/b1, b1, ..., dM/bM, bM, rest] -> [b1, ..., bM, batch, d1/b1, ..., dM/bM, rest]
    split_shape = [batch]
    for d, b in zip(padded.shape[1 : 1 + m], block, strict=True):
        split_shape += [d // b, b]
    blocks = padded.reshape(split_shape + list(rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, blocks.ndim))
    moved = blocks.transpose(perm)
    outer = [d // b for d, b in zip(padded.shape[1 : 1 + m], block, strict=True)]
    return out(backend, moved.reshape([batch * math.prod(block), *outer, *rest]), x.dtype)


@cpu_kernel(kn.BatchToSpaceND)
def batch_to_space_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, crops = list(attrs["block_shape"]), [tuple(c) for c in attrs["crops"]]
    m = len(block)
    values = values_of(backend, x)
    batch = values.shape[0] // math.prod(block)
    spatial, rest = list(values.shape[1 : 1 + m]), list(values.shape[1 + m :])
    # [b1, ..., bM, batch, d1, ..., dM, rest] -> [batch, d1, b1, ..., dM, bM, rest]
    blocks = values.reshape(block + [batch] + spatial + rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, blocks.ndim))
    full = blocks.transpose(perm).reshape([batch] + [d * b for d, b in zip(spatial, block, strict=True)] + rest)
    index = (slice(None),) + tuple(slice(c0, full.shape[1 + i] - c1) for i, (c0, c1) in enumerate(crops))
    return out(backend, full[index].copy(), x.dtype)


@cpu_kernel(kn.DepthToSpace)
def depth_to_space(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    bs = attrs["block_size"]
    values = values_of(backend, x)
    if attrs["data_format"] == "NHWC":
        n, h, w, c = values.shape
        depth = c // (bs * bs)
        # channels are ordered (row offset, column offset, output channel)
        moved = values.reshape(n, h, w, bs, bs, depth).transpose(0, 1, 3, 2, 4, 5)
        return out(backend, moved.reshape(n, h * bs, w * bs, depth), x.dtype)
    n, c, h, w = values.shape
    depth = c // (bs * bs)
    moved = values.reshape(n, bs, bs, depth, h, w).transpose(0, 3, 4, 1, 5, 2)
    return out(backend, moved.reshape(n, depth, h * bs, w * bs), x.dtype)
