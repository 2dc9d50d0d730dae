"""Transformation ops (TF.js converter category ``transformation``): casts, reshapes, padding, and
moving data between space, depth and batch."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ...ops.shape import infer_shape
from ...ops.spatial import check_pairs, pad_checked
from ..load.graph import Node
from ._util import attr_num, data_format, fail, ints, lower_str, mapper, nested, num


@mapper("Cast")
def cast(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x`` as ``DstT`` (64-bit and narrow types map to TF.js's int32/float32; ``Truncate`` changes
    nothing there: float to int always truncates toward zero)."""
    dtype = node.dtype("DstT")
    if dtype is None:
        raise fail(node, "missing the 'DstT' attribute")
    return nf.cast(inputs[0], dtype)


@mapper("ExpandDims")
def expand_dims(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A size-1 axis inserted at ``axis`` (the second input)."""
    x, axis = inputs
    return nf.expand_dims(x, int(num(axis)))


@mapper("Squeeze")
def squeeze(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Size-1 axes removed: those in ``squeeze_dims`` (or ``axis``), or all of them if it is empty."""
    dims = node.ints("squeeze_dims") or node.ints("axis") or None
    return nf.squeeze(inputs[0], dims)


@mapper("Reshape")
def reshape(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x`` with the shape given by the second input (one entry may be -1), resolved once per input
    shape and shape tensor (memoized on the node)."""
    x, shape = inputs
    if type(x) is not Tensor:
        return nf.reshape(x, ints(shape))
    key = ("reshape", "shape")
    got = node._memo.get(key)
    if got is None or got[0] != (x.shape, shape.id):
        got = node._memo[key] = ((x.shape, shape.id), infer_shape(ints(shape), x.size))
    return ENGINE.run_kernel("Reshape", (x,), {"shape": got[1]})


@mapper("EnsureShape")
def ensure_shape(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x`` after checking it against the ``shape`` attribute (TF; -1 is any size) or, as TF.js
    reads it, a second input."""
    shape = node.shape("shape") if node.has("shape") else (ints(inputs[1]) if len(inputs) > 1 else None)
    if shape is None:
        return inputs[0]
    return nf.ensure_shape(inputs[0], [None if d < 0 else d for d in shape])


def _pad_pairs(node: Node, paddings: Tensor) -> tuple[tuple[int, int], ...]:
    """The checked pairs of the ``paddings`` input, read once per tensor (memoized on the node: a model's
    paddings are constants)."""
    key = ("pad", "pairs")
    got = node._memo.get(key)
    if got is None or got[0] != paddings.id:
        got = node._memo[key] = (paddings.id, check_pairs(nested(paddings)))
    return got[1]


@mapper("Pad")
def pad(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Constant padding with ``paddings`` (``[rank, 2]``); the value is 0 (TF.js reads an optional
    ``constant_value`` attribute)."""
    x, paddings = inputs
    return pad_checked(x, _pad_pairs(node, paddings), attr_num(node, "constant_value", 0))


@mapper("PadV2")
def pad_v2(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Constant padding with the value given by the third input."""
    x, paddings, value = inputs
    return pad_checked(x, _pad_pairs(node, paddings), num(value))


@mapper("MirrorPad")
def mirror_pad(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``REFLECT`` or ``SYMMETRIC`` padding."""
    x, paddings = inputs
    return nf.mirror_pad(x, nested(paddings), lower_str(node, "mode", "reflect"))


@mapper("SpaceToBatchND")
def space_to_batch_nd(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Spatial blocks moved into the batch: inputs ``(x, block_shape, paddings)``."""
    x, block, paddings = inputs
    return nf.space_to_batch_nd(x, ints(block), nested(paddings))


@mapper("BatchToSpaceND")
def batch_to_space_nd(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The inverse of SpaceToBatchND: inputs ``(x, block_shape, crops)``."""
    x, block, crops = inputs
    return nf.batch_to_space_nd(x, ints(block), nested(crops))


@mapper("DepthToSpace")
def depth_to_space(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Depth moved into ``block_size`` x ``block_size`` spatial blocks (NHWC or NCHW)."""
    return nf.depth_to_space(inputs[0], int(attr_num(node, "block_size", 1)), data_format(node))


@mapper("BroadcastTo")
def broadcast_to(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x`` broadcast to the shape given by the second input."""
    x, shape = inputs
    return nf.broadcast_to(x, ints(shape))


@mapper("BroadcastArgs")
def broadcast_args(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The broadcast shape of two shapes (1-D int tensors)."""
    return nf.broadcast_args(inputs[0], inputs[1])
