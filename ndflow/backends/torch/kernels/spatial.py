"""Space, batch and depth rearrangements: SpaceToBatchND, BatchToSpaceND, DepthToSpace.

Each is a reshape, a transpose and a reshape (plus a pad or a crop), as TensorFlow defines them.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ...shared.spatial import batch_to_space_layout, depth_to_space_layout, space_to_batch_layout
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of
from .transform import pad


@torch_kernel(kn.SpaceToBatchND, strings=True)
def space_to_batch_nd(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, paddings = list(attrs["block_shape"]), [tuple(p) for p in attrs["paddings"]]
    v = values_of(backend, x)
    padded = pad(v, [(0, 0), *paddings] + [(0, 0)] * (v.dim() - 1 - len(block)))
    split_shape, perm, out_shape = space_to_batch_layout(padded.shape, block)
    return out(backend, padded.reshape(split_shape).permute(perm).reshape(out_shape), x.dtype)


@torch_kernel(kn.BatchToSpaceND, strings=True)
def batch_to_space_nd(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    block, crops = list(attrs["block_shape"]), [tuple(c) for c in attrs["crops"]]
    v = values_of(backend, x)
    blocks_shape, perm, full_shape, index = batch_to_space_layout(v.shape, block, crops)
    full = v.reshape(blocks_shape).permute(perm).reshape(full_shape)
    return out(backend, full[index].contiguous(), x.dtype)


@torch_kernel(kn.DepthToSpace, strings=True)
def depth_to_space(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    split_shape, perm, out_shape = depth_to_space_layout(v.shape, attrs["block_size"], attrs["data_format"])
    return out(backend, v.reshape(split_shape).permute(perm).reshape(out_shape), x.dtype)
