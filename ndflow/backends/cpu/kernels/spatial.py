"""Space, batch and depth rearrangements: SpaceToBatchND, BatchToSpaceND, DepthToSpace.

Each is a reshape, a transpose and a reshape (plus a pad or a crop), as TensorFlow defines them.
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.spatial import batch_to_space_layout, depth_to_space_layout, space_to_batch_layout
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.SpaceToBatchND)
def space_to_batch_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, paddings = list(attrs["block_shape"]), [tuple(p) for p in attrs["paddings"]]
    values = values_of(backend, x)
    padded = np.pad(values, [(0, 0), *paddings] + [(0, 0)] * (values.ndim - 1 - len(block)))
    split_shape, perm, out_shape = space_to_batch_layout(padded.shape, block)
    return out(backend, padded.reshape(split_shape).transpose(perm).reshape(out_shape), x.dtype)


@cpu_kernel(kn.BatchToSpaceND)
def batch_to_space_nd(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, crops = list(attrs["block_shape"]), [tuple(c) for c in attrs["crops"]]
    values = values_of(backend, x)
    blocks_shape, perm, full_shape, index = batch_to_space_layout(values.shape, block, crops)
    full = values.reshape(blocks_shape).transpose(perm).reshape(full_shape)
    return out(backend, full[index].copy(), x.dtype)


@cpu_kernel(kn.DepthToSpace)
def depth_to_space(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    split_shape, perm, out_shape = depth_to_space_layout(values.shape, attrs["block_size"], attrs["data_format"])
    return out(backend, values.reshape(split_shape).transpose(perm).reshape(out_shape), x.dtype)
