"""The graph of layers: ``SymbolicTensor`` (a placeholder with a shape), ``Node`` (one call of a
layer on symbolic inputs) and ``InputSpec`` (what a layer accepts).

``inputs[i] == inbound_layers[i].inbound_nodes[node_indices[i]].output_tensors[tensor_indices[i]]``
for every node, as in Keras and TF.js: a node sits in its layer's ``inbound_nodes`` and in the
``outbound_nodes`` of each layer that fed it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..naming import get_scoped_tensor_name, get_unique_tensor_name
from ..utils import Shape, normalize_shape

if TYPE_CHECKING:
    from .base import Layer

_next_tensor_id = itertools.count().__next__
_next_node_id = itertools.count().__next__


class InputSpec:
    """The rank, dtype and shape a layer expects of one input (None anywhere: anything goes)."""

    def __init__(
        self,
        dtype: str | None = None,
        shape: Sequence[int | None] | None = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict[int, int] | None = None,
    ) -> None:
        self.dtype = dtype
        self.shape = None if shape is None else normalize_shape(shape, "InputSpec shape")
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})

    def __repr__(self) -> str:
        fields = ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes")
        parts = [f"{f}={getattr(self, f)!r}" for f in fields if getattr(self, f) not in (None, {})]
        return f"InputSpec({', '.join(parts)})"


class SymbolicTensor:
    """A placeholder for a tensor whose shape (and dtype) is known but whose values are not."""

    def __init__(
        self,
        dtype: str,
        shape: Sequence[int | None],
        source_layer: Layer,
        inputs: Sequence[SymbolicTensor],
        call_args: dict[str, Any] | None,
        name: str | None = None,
        output_tensor_index: int | None = None,
    ) -> None:
        self.dtype = dtype
        self.shape: Shape = tuple(shape)
        self.source_layer = source_layer
        self.inputs = list(inputs)
        self.call_args = dict(call_args or {})
        self.output_tensor_index = output_tensor_index
        self.id = _next_tensor_id()
        self.original_name: str | None = None
        self.name: str | None = None
        if name is not None:
            self.original_name = get_scoped_tensor_name(name)
            self.name = get_unique_tensor_name(self.original_name)
        self.node_index: int | None = None
        self.tensor_index: int | None = None

    @property
    def rank(self) -> int:
        """The number of axes."""
        return len(self.shape)

    def __repr__(self) -> str:
        shape = [None if d is None else d for d in self.shape]
        return f"SymbolicTensor(name={self.name!r}, shape={shape}, dtype={self.dtype})"

    __hash__ = object.__hash__


class Node:
    """One call of ``outbound_layer`` on (symbolic) inputs coming from ``inbound_layers``."""

    def __init__(
        self,
        outbound_layer: Layer,
        inbound_layers: Sequence[Layer],
        node_indices: Sequence[int],
        tensor_indices: Sequence[int],
        input_tensors: Sequence[SymbolicTensor],
        output_tensors: Sequence[SymbolicTensor],
        input_masks: Sequence[Any],
        output_masks: Sequence[Any],
        input_shapes: Sequence[Shape],
        output_shapes: Sequence[Shape],
        call_args: dict[str, Any] | None = None,
    ) -> None:
        self.call_args = call_args
        self.id = _next_node_id()
        self.outbound_layer = outbound_layer
        self.inbound_layers = list(inbound_layers)
        self.node_indices = list(node_indices)
        self.tensor_indices = list(tensor_indices)
        self.input_tensors = list(input_tensors)
        self.output_tensors = list(output_tensors)
        self.input_masks = list(input_masks)
        self.output_masks = list(output_masks)
        self.input_shapes = [tuple(s) for s in input_shapes]
        self.output_shapes = [tuple(s) for s in output_shapes]
        for layer in self.inbound_layers:
            if layer is not None:
                layer.outbound_nodes.append(self)
        outbound_layer.inbound_nodes.append(self)

    def get_config(self) -> dict[str, Any]:
        """The names and indices that locate this node's inputs."""
        return {
            "outbound_layer": self.outbound_layer.name if self.outbound_layer is not None else None,
            "inbound_layers": [layer.name if layer is not None else None for layer in self.inbound_layers],
            "node_indices": list(self.node_indices),
            "tensor_indices": list(self.tensor_indices),
        }

    def __repr__(self) -> str:
        inbound = [layer.name for layer in self.inbound_layers]
        return f"<Node {self.id} of {self.outbound_layer.name} from {inbound}>"


def get_source_inputs(
    tensor: SymbolicTensor, layer: Layer | None = None, node_index: int | None = None
) -> list[SymbolicTensor]:
    """The input tensors (of input layers) that ``tensor`` is computed from."""
    if layer is None or (node_index is not None and node_index > 0):
        layer = tensor.source_layer
        node_index = tensor.node_index
    if not layer.inbound_nodes:
        return [tensor]
    node = layer.inbound_nodes[node_index]
    if not node.inbound_layers:
        return list(node.input_tensors)
    sources: list[SymbolicTensor] = []
    for x, inbound_layer, inbound_index in zip(node.input_tensors, node.inbound_layers, node.node_indices, strict=True):
        for source in get_source_inputs(x, inbound_layer, inbound_index):
            if all(source is not s for s in sources):
                sources.append(source)
    return sources


__all__ = ["InputSpec", "Node", "SymbolicTensor", "get_source_inputs"]
