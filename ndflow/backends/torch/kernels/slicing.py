"""Selecting and joining: Slice, StridedSlice, GatherV2, Concat, Pack.

A slice of a large input is a copy, so that disposing the input frees its memory while the slice lives.
A slice of a small input (at most :data:`VIEW_ELEMENTS` values), or one that keeps at least half of its
input, is a view of the input's buffer instead, as ``transpose`` is: stored data never changes, the memory
it holds on to is bounded (a small input, or at most twice the slice), and a copy costs more than the
slicing itself (graph models slice scalars off small tensors dozens of times per run).
"""

from __future__ import annotations

from typing import Any

import torch

from ....core import kernel_names as kn
from ....core.slice_util import strided_slice_index
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of

VIEW_ELEMENTS = 1 << 16  # inputs up to this many values are sliced as views

# (shape, begin, end, strides, masks) -> (index with positive steps, axes to flip): the spec's analysis is
# pure, and a model slices with the same specs run after run.
_INDEXES: dict[tuple, tuple[tuple[Any, ...], list[int]]] = {}


def _copy(v: torch.Tensor) -> torch.Tensor:
    return v.clone(memory_format=torch.contiguous_format)


def _sliced(picked: torch.Tensor, source_size: int) -> torch.Tensor:
    """``picked`` (a view of the input) as the output: the view itself where the module doc allows, else a copy."""
    if source_size <= VIEW_ELEMENTS or 2 * picked.numel() >= source_size:
        return picked
    return _copy(picked)


@torch_kernel(kn.Slice, strings=True)
def slice_(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index = tuple(slice(b, b + s) for b, s in zip(attrs["begin"], attrs["size"], strict=True))
    return out(backend, _sliced(values_of(backend, x)[index], x.size), x.dtype)


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


def _strided_index(shape: tuple[int, ...], attrs: dict) -> tuple[tuple[Any, ...], list[int]]:
    """:func:`positive_steps` of the spec's index, cached by shape and spec."""
    g = attrs.get
    try:
        key = (shape, tuple(attrs["begin"]), tuple(attrs["end"]), tuple(g("strides") or ()), g("begin_mask", 0),
               g("end_mask", 0), g("ellipsis_mask", 0), g("new_axis_mask", 0), g("shrink_axis_mask", 0))  # fmt: skip
        found = _INDEXES.get(key)
    except TypeError:  # something unhashable in the spec: no caching (the analysis reports what is wrong)
        return positive_steps(shape, strided_slice_index(shape, attrs))
    if found is None:
        found = positive_steps(shape, strided_slice_index(shape, attrs))
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        _INDEXES[key] = found
    return found


@torch_kernel(kn.StridedSlice, strings=True)
def strided_slice(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    index, flips = _strided_index(x.shape, attrs)
    picked = values_of(backend, x)[index]
    return out(backend, torch.flip(picked, flips) if flips else _sliced(picked, x.size), x.dtype)


@torch_kernel(kn.GatherV2, strings=True)
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


@torch_kernel(kn.Concat, strings=True)
def concat(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return out(backend, torch.cat([values_of(backend, t) for t in inputs], dim=attrs["axis"]), inputs[0].dtype)


@torch_kernel(kn.Pack, strings=True)
def pack(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return out(backend, torch.stack([values_of(backend, t) for t in inputs], dim=attrs["axis"]), inputs[0].dtype)
