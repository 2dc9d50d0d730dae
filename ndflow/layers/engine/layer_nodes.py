"""A layer's place in the graph: its inbound nodes (one per symbolic call) and what they say (``input``,
``output``, ``output_shape``, ``get_input_at`` ...), as TF.js's ``Layer`` has them; a mixin of
:class:`~ndflow.layers.engine.base.Layer`."""

from __future__ import annotations

from typing import Any

from ..utils import normalize_shape_list, singleton_or_list, to_list
from .topology import Node

__all__ = ["LayerNodesMixin"]


class LayerNodesMixin:
    """The inbound-node bookkeeping of a layer (``name`` and ``inbound_nodes`` are the layer's)."""

    name: str
    inbound_nodes: list[Node]

    def get_node_at_index(self, node_index: int, attr_name: str) -> Node:
        """``inbound_nodes[node_index]``, with a clear error if there is none."""
        if not self.inbound_nodes:
            raise RuntimeError(f"The layer {self.name} has never been called and thus has no defined {attr_name}.")
        if len(self.inbound_nodes) <= node_index:
            raise ValueError(
                f"Asked to get {attr_name} at node {node_index}, but the layer has only "
                f"{len(self.inbound_nodes)} inbound nodes."
            )
        return self.inbound_nodes[node_index]

    def get_input_at(self, node_index: int) -> Any:
        """The input tensor(s) of the layer's ``node_index``-th call."""
        return singleton_or_list(self.get_node_at_index(node_index, "input").input_tensors)

    def get_output_at(self, node_index: int) -> Any:
        """The output tensor(s) of the layer's ``node_index``-th call."""
        return singleton_or_list(self.get_node_at_index(node_index, "output").output_tensors)

    @property
    def input(self) -> Any:
        """The input tensor(s), for a layer called exactly once."""
        if len(self.inbound_nodes) > 1:
            raise AttributeError(
                f"Layer {self.name} has multiple inbound nodes, hence the notion of 'layer input' is ill-defined. "
                "Use get_input_at(node_index) instead."
            )
        if not self.inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        return singleton_or_list(self.inbound_nodes[0].input_tensors)

    @property
    def output(self) -> Any:
        """The output tensor(s), for a layer called exactly once."""
        if not self.inbound_nodes:
            raise AttributeError(f"Layer {self.name} has no inbound nodes.")
        if len(self.inbound_nodes) > 1:
            raise AttributeError(
                f"Layer {self.name} has multiple inbound nodes, hence the notion of 'layer output' is "
                "ill-defined. Use get_output_at(node_index) instead."
            )
        return singleton_or_list(self.inbound_nodes[0].output_tensors)

    @property
    def output_shape(self) -> Any:
        """The output shape (a list of shapes for several outputs), if the same at every node."""
        if not self.inbound_nodes:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no defined output shape.")
        distinct = []
        for node in self.inbound_nodes:
            if node.output_shapes not in distinct:
                distinct.append(node.output_shapes)
        if len(distinct) != 1:
            raise AttributeError(
                f"The layer {self.name} has multiple inbound nodes with different output shapes. Hence the "
                "notion of 'output shape' is ill-defined for the layer."
            )
        shapes = self.inbound_nodes[0].output_shapes
        return shapes[0] if len(shapes) == 1 else list(shapes)

    def add_inbound_node(
        self,
        input_tensors: Any,
        output_tensors: Any,
        input_masks: Any,
        output_masks: Any,
        input_shapes: Any,
        output_shapes: Any,
        kwargs: dict[str, Any] | None = None,
    ) -> Node:
        """Record a call of this layer on symbolic tensors (a new inbound node)."""
        inputs = to_list(input_tensors)
        outputs = to_list(output_tensors)
        node = Node(
            self,
            [x.source_layer for x in inputs],
            [x.node_index for x in inputs],
            [x.tensor_index for x in inputs],
            inputs,
            outputs,
            to_list(input_masks),
            to_list(output_masks),
            normalize_shape_list(input_shapes),
            normalize_shape_list(output_shapes),
            kwargs,
        )
        for i, t in enumerate(outputs):
            t.source_layer = self
            t.node_index = len(self.inbound_nodes) - 1
            t.tensor_index = i
        return node
