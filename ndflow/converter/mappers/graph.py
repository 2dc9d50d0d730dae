"""Graph ops (TF.js converter category ``graph``): placeholders, constants, identities, shapes, NoOp, Print.

``Identity``-like ops return a new tensor sharing the input's data (``clone``), except for kept
tensors (TensorArray/TensorList handles), which pass through unchanged so that they keep their id.
``FakeQuantWithMinMaxVars`` is an identity, as in TF.js.
"""

from __future__ import annotations

import logging
from typing import Any

from ... import ops
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.registry import op

_log = logging.getLogger("ndflow")


def pass_through(t: Tensor) -> Tensor:
    """``t`` itself when kept (a handle), else a clone sharing its data (TF.js ``cloneTensor``)."""
    return t if t.kept else ops.clone(t)


def _require(node: Node, inputs: list[Any], n: int) -> None:
    if len(inputs) < n or any(t is None for t in inputs[:n]):
        raise ValueError(f"graph model: node '{node.name}' ({node.op}) needs {n} input(s), got {len(inputs)}")


@op("Placeholder")
def placeholder(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Placeholders are fed before the run; reaching this mapper means one was not."""
    raise ValueError(f"graph model: the input '{node.name}' was not provided (feed it in execute/predict)")


@op("PlaceholderWithDefault")
def placeholder_with_default(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Not fed: its default input."""
    _require(node, inputs, 1)
    return pass_through(inputs[0])


@op("Const")
def const(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A Const node's value is the weight of the same name."""
    weight = ctx.get_weight(node.name)
    if weight is None:
        raise ValueError(f"graph model: Const node '{node.name}' has no weight in the weights manifest")
    return weight


@op("Identity", "StopGradient", "Snapshot", "FakeQuantWithMinMaxVars")
def identity(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The input, unchanged."""
    _require(node, inputs, 1)
    return pass_through(inputs[0])


@op("IdentityN")
def identity_n(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Each input, unchanged."""
    return [pass_through(t) for t in inputs]


def _out_type(node: Node) -> str:
    return node.dtype("out_type", "int32") or "int32"


@op("Shape")
def shape(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The input's shape as a 1-D int32 tensor."""
    _require(node, inputs, 1)
    return ops.tensor1d(list(inputs[0].shape), _out_type(node))


@op("ShapeN")
def shape_n(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Each input's shape (TF.js makes them float32; ndflow keeps TF's int32)."""
    return [ops.tensor1d(list(t.shape), _out_type(node)) for t in inputs]


@op("Size")
def size(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The input's number of elements, an int32 scalar."""
    _require(node, inputs, 1)
    return ops.scalar(inputs[0].size, _out_type(node))


@op("Rank")
def rank(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The input's rank, an int32 scalar."""
    _require(node, inputs, 1)
    return ops.scalar(inputs[0].rank, "int32")


@op("NoOp")
def no_op(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A scalar 1 (TF.js's stand-in value, so that control dependencies on it resolve)."""
    return ops.scalar(1)


@op("Print")
def print_op(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Log the message and the first ``summarize`` values of each data input; return the first input."""
    _require(node, inputs, 1)
    summarize = node.int("summarize", 3) or 3
    _log.warning("The graph has a tf.print() operation, usually used for debugging, which slows down performance.")
    _log.warning("%s", node.str("message", "") or "")
    for t in inputs[1:]:
        _log.warning("%s", t.data_sync()[:summarize].tolist())
    return pass_through(inputs[0])
