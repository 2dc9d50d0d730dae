"""Selecting and joining: Slice, StridedSlice, GatherV2, Concat, Pack.

Outputs are copies (not views of the input), so that disposing an input frees its memory.
"""

from __future__ import annotations

from typing import Any

import torch

from ....core.slice_util import strided_slice_index
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


def _copy(v: torch.Tensor) -> torch.Tensor:
    return v.clone(memory_format=torch.contiguous_format)


@torch_kernel("Slice", strings=True)
def slice_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index = tuple(slice(b, b + s) for b, s in zip(attrs["begin"], attrs["size"], strict=True))
    return out(backend, _copy(values_of(backend, x)[index]), x.dtype)


def positive_steps(shape: tuple[int, ...], index: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int]]:
    """A numpy basic index rewritten with positive steps only (torch has no negative ones), and the
    output axes to flip afterwards."""
    if any(i is Ellipsis for i in index):
        at = index.index(Ellipsis)
        used = sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:at] + (slice(None),) * (len(shape) - used) + index[at + 1 :]
    result: list[Any] = []
    flips: list[int] = []
    axis = out_axis = 0
    for item in index:
        if item is None:
            result.append(None)
            out_axis += 1
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[axis])
            if step < 0:
                n = len(range(start, stop, step))
                item = slice(start + (n - 1) * step, start + 1, -step) if n else slice(0, 0)
                flips.append(out_axis)
            result.append(item)
            axis += 1
            out_axis += 1
        else:
            result.append(item)
            axis += 1
    return tuple(result), flips


@torch_kernel("StridedSlice", strings=True)
def strided_slice(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index, flips = positive_steps(x.shape, strided_slice_index(x.shape, attrs))
    picked = values_of(backend, x)[index]
    return out(backend, torch.flip(picked, flips) if flips else _copy(picked), x.dtype)


@torch_kernel("GatherV2", strings=True)
def gather_v2(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    x, indices = inputs
    axis, batch_dims = attrs["axis"], attrs["batch_dims"]
    v = values_of(backend, x)
    idx = values_of(backend, indices).long()
    dim = x.shape[axis]
    if idx.numel():
        bad = (idx < 0) | (idx >= dim)
        if bool(bad.any()):
            raise IndexError(f"gather: index {int(idx[bad][0])} is not in [0, {dim - 1}] along axis {axis}")
    if batch_dims == 0:
        shape = x.shape[:axis] + indices.shape + x.shape[axis + 1 :]
        return out(backend, v.index_select(axis, idx.reshape(-1)).reshape(shape), x.dtype, shape)
    # With batch dims, each batch gathers from its own slice: index with broadcast batch aranges.
    extra = idx.dim() - batch_dims
    lead = tuple(
        torch.arange(n, device=v.device).reshape([n if j == i else 1 for j in range(batch_dims)] + [1] * extra)
        for i, n in enumerate(x.shape[:batch_dims])
    )
    if axis != batch_dims:
        # Move the gathered axis next to the batch dims, gather, then restore the order.
        gathered = v.movedim(axis, batch_dims)[lead + (idx,)]
        result = gathered.movedim(list(range(batch_dims, batch_dims + extra)), list(range(axis, axis + extra)))
    else:
        result = v[lead + (idx,)]
    return out(backend, _copy(result), x.dtype)


@torch_kernel("Concat", strings=True)
def concat(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return out(backend, torch.cat([values_of(backend, t) for t in inputs], dim=attrs["axis"]), inputs[0].dtype)


@torch_kernel("Pack", strings=True)
def pack(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return out(backend, torch.stack([values_of(backend, t) for t in inputs], dim=attrs["axis"]), inputs[0].dtype)
