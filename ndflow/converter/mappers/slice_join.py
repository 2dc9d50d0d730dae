"""Slicing and joining ops (TF.js converter category ``slice_join``): concat, gather, slices, stack,
split, tile, scatter."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, fail, ints, mapper, num


@mapper("ConcatV2")
def concat_v2(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Concatenate inputs ``[:N]`` along the axis given by the last input."""
    n = int(attr_num(node, "N", len(inputs) - 1))
    return nf.concat(list(inputs[:-1][:n]), int(num(inputs[-1])))


@mapper("Concat")
def concat(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Concatenate inputs ``[1:N+1]`` along the axis given by the first input."""
    n = int(attr_num(node, "N", len(inputs) - 1))
    return nf.concat(list(inputs[1:][:n]), int(num(inputs[0])))


@mapper("GatherV2")
def gather_v2(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Slices of ``params`` at ``indices`` along ``axis`` (third input), with ``batch_dims``."""
    x, indices, axis = inputs
    batch_dims = int(attr_num(node, "batch_dims", 0))
    if batch_dims < 0:
        batch_dims += indices.rank
    return nf.gather(x, _int32(indices), int(num(axis)), batch_dims)


@mapper("Gather")
def gather(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Rows of ``params`` at ``indices``."""
    return nf.gather(inputs[0], _int32(inputs[1]), 0)


def _int32(t: Tensor) -> Tensor:
    """``t`` as int32 (TF.js casts gather indices)."""
    return t if t.dtype == "int32" else nf.cast(t, "int32")


@mapper("Reverse")
def reverse(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Reverse the axes flagged true in the boolean ``dims`` input."""
    x, dims = inputs
    return nf.reverse(x, [i for i, flag in enumerate(dims.data_sync()) if flag])


@mapper("ReverseV2")
def reverse_v2(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Reverse the axes listed in the second input."""
    x, axis = inputs
    return nf.reverse(x, ints(axis))


@mapper("Slice")
def slice_(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The block at ``begin`` of extent ``size`` (-1: to the end)."""
    x, begin, size = inputs
    return nf.slice(x, ints(begin), ints(size))


@mapper("StridedSlice")
def strided_slice(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Python-style strided slicing with begin/end/ellipsis/new-axis/shrink-axis masks."""
    x, begin, end, strides = inputs
    masks = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    begin_m, end_m, ellipsis_m, new_axis_m, shrink_m = (int(attr_num(node, m, 0)) for m in masks)
    return nf.strided_slice(x, ints(begin), ints(end), ints(strides), begin_m, end_m, ellipsis_m, new_axis_m, shrink_m)


@mapper("Pack")
def pack(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Stack the inputs along a new ``axis``. As in TF.js, inputs whose shape differs from the
    first's only by size-1 axes are reshaped to it."""
    first = inputs[0].shape
    squeezed = [d for d in first if d != 1]
    tensors = []
    for t in inputs:
        if t.shape != first:
            if [d for d in t.shape if d != 1] != squeezed:
                raise fail(node, f"input shapes differ: {list(first)} and {list(t.shape)}")
            t = nf.reshape(t, list(first))
        tensors.append(t)
    return nf.stack(tensors, int(attr_num(node, "axis", 0)))


@mapper("Unpack")
def unpack(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """One output per slice along ``axis``."""
    return list(nf.unstack(inputs[0], int(attr_num(node, "axis", 0))))


@mapper("Tile")
def tile(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Repeat the input ``multiples`` times along each axis."""
    x, reps = inputs
    return nf.tile(x, ints(reps))


@mapper("Split")
def split(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """``num_split`` equal parts along the axis given by the first input (the value is the second)."""
    axis, x = inputs
    return list(nf.split(x, int(attr_num(node, "num_split", 1)), int(num(axis))))


@mapper("SplitV")
def split_v(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Parts of the given sizes (one may be -1) along ``axis``: inputs ``(value, size_splits, axis)``."""
    x, sizes, axis = inputs
    return list(nf.split(x, ints(sizes), int(num(axis))))


@mapper("ScatterNd")
def scatter_nd(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at ``indices``."""
    indices, updates, shape = inputs
    return nf.scatter_nd(indices, updates, ints(shape))


@mapper("GatherNd")
def gather_nd(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Slices of ``params`` addressed by the last axis of ``indices``."""
    return nf.gather_nd(inputs[0], inputs[1])


@mapper("SparseToDense")
def sparse_to_dense(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A dense tensor of ``output_shape`` from sparse ``(indices, values)``, elsewhere ``default_value``."""
    indices, shape, values, default = inputs
    if default.dtype != values.dtype:
        default = nf.cast(default, values.dtype)
    return nf.sparse_to_dense(indices, values, ints(shape), default)


@mapper("TensorScatterUpdate")
def tensor_scatter_update(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A copy of ``tensor`` with ``updates`` written at ``indices``."""
    tensor, indices, updates = inputs
    return nf.tensor_scatter_update(tensor, indices, updates)
