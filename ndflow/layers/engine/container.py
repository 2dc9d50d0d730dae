"""``Container``: a directed acyclic graph of layers, the topology behind every model.

Built from symbolic ``inputs`` and ``outputs``: it walks the graph back from the outputs, orders
layers and nodes by depth, checks that every tensor can be computed from the inputs and that
layer names are unique, then behaves as one layer (``call`` runs the graph eagerly). It also
serializes itself to the Keras ``{'name', 'layers', 'input_layers', 'output_layers'}`` config
and rebuilds itself from one (``from_config``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from ...core.tensor import Tensor
from ..naming import get_uid
from ..utils import Shape, normalize_shape_list, shape_str, singleton_or_list, tidy, to_list
from ..variables import LayerVariable, batch_set_value
from .base import DisposeResult, Layer
from .compiled_inference import release_compiled
from .container_config import ContainerConfigMixin, deserialize_layer  # noqa: F401  (re-exported)
from .executor import FeedDict, execute
from .inputs import InputLayer
from .topology import Node, SymbolicTensor

logger = logging.getLogger("ndflow")

KERAS_VERSION = "tfjs-layers 4.22.0"
BACKEND = "tensor_flow.js"


class Container(ContainerConfigMixin, Layer):
    """A graph of layers from ``inputs`` to ``outputs`` (symbolic tensors), usable as a layer."""

    class_name = "Container"

    def __init__(
        self,
        inputs: SymbolicTensor | Sequence[SymbolicTensor],
        outputs: SymbolicTensor | Sequence[SymbolicTensor],
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.container_nodes: set[str] = set()
        self.name = name if name is not None else get_uid(self.get_class_name().lower())
        self.supports_masking = False
        self._trainable = True
        self.inputs: list[SymbolicTensor] = to_list(inputs)
        self.outputs: list[SymbolicTensor] = to_list(outputs)
        for what, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            for t in tensors:
                if not isinstance(t, SymbolicTensor):
                    raise TypeError(f"{self.name}: model {what} must be SymbolicTensors, got {type(t).__name__}")
        if len({id(x) for x in self.inputs}) != len(self.inputs):
            raise ValueError(
                "The list of inputs passed to the model is redundant. All inputs should only appear once. Found: "
                f"{[x.name for x in self.inputs]}"
            )
        if len({id(x) for x in self.outputs}) != len(self.outputs):
            logger.warning(
                "The list of outputs passed to the model is redundant. All outputs should only appear once. Found: %s",
                [x.name for x in self.outputs],
            )
        self.output_layers = [x.source_layer for x in self.outputs]
        self.output_layers_node_indices = [x.node_index for x in self.outputs]
        self.output_layers_tensor_indices = [x.tensor_index for x in self.outputs]
        self.input_layers: list[Layer] = []
        self.input_layers_node_indices: list[int] = []
        self.input_layers_tensor_indices: list[int] = []
        for x in self.inputs:
            if x.node_index != 0 or x.tensor_index != 0:
                raise ValueError(f"model input {x.name} must come straight from an InputLayer (nf.input())")
            self.input_layers.append(x.source_layer)
            self.input_layers_node_indices.append(x.node_index)
            self.input_layers_tensor_indices.append(x.tensor_index)
        self.input_names: list[str] = []
        self.output_names: list[str] = [layer.name for layer in self.output_layers]
        self.feed_input_shapes: list[Shape] = []
        self.feed_input_names: list[str] = []
        self.feed_output_names: list[str] = []
        for i, layer in enumerate(self.input_layers):
            if not isinstance(layer, InputLayer):
                raise TypeError(
                    "Input layers to a LayersModel must be InputLayer objects (made by nf.input()). "
                    f"Input {i} (0-based) originates from layer type {layer.get_class_name()}."
                )
            self.input_names.append(layer.name)
            self.feed_input_shapes.append(layer.batch_input_shape)
            self.feed_input_names.append(layer.name)
        self.internal_input_shapes = [x.shape for x in self.inputs]
        self.internal_output_shapes = [x.shape for x in self.outputs]
        self.layers: list[Layer] = []
        self.nodes_by_depth: dict[int, list[Node]] = {}
        self.layers_by_depth: dict[int, list[Layer]] = {}
        self._build_graph()
        self.outbound_nodes = []
        self.inbound_nodes = []
        Node(
            self, [], [], [], self.inputs, self.outputs, [None] * len(self.inputs), [None] * len(self.outputs),
            [x.shape for x in self.inputs], [x.shape for x in self.outputs],
        )  # fmt: skip
        self.built = True
        self._ref_count = 1

    # -- graph ------------------------------------------------------------------------------------
    def _build_graph(self) -> None:
        """Order the graph's nodes and layers by depth and validate it (TF.js's map of the graph)."""
        layer_indices: dict[int, int] = {}
        nodes_in_decreasing_depth: list[Node] = []
        finished: set[int] = set()
        in_progress: set[int] = set()

        def enter(tensor: SymbolicTensor, layer: Layer, node_index: int) -> list | None:
            node = layer.inbound_nodes[node_index]
            if id(node) in in_progress:
                raise RuntimeError(f'The tensor {tensor.name} at layer "{layer.name}" is part of a cycle.')
            if id(node) in finished:
                return None
            self.container_nodes.add(Layer.node_key(layer, node_index))
            layer_indices.setdefault(layer.id, len(layer_indices))
            in_progress.add(id(node))
            return [node, 0]

        for output in self.outputs:
            frame = enter(output, output.source_layer, output.node_index)
            stack = [frame] if frame is not None else []
            while stack:
                node, i = stack[-1]
                if i < len(node.inbound_layers):
                    stack[-1][1] += 1
                    child = enter(node.input_tensors[i], node.inbound_layers[i], node.node_indices[i])
                    if child is not None:
                        stack.append(child)
                    continue
                stack.pop()
                finished.add(id(node))
                in_progress.discard(id(node))
                nodes_in_decreasing_depth.append(node)

        nodes_depths: dict[int, int] = {}
        node_by_id: dict[int, Node] = {}
        layers_depths: dict[int, int] = {}
        layer_by_id: dict[int, Layer] = {}
        for node in reversed(nodes_in_decreasing_depth):
            node_by_id[node.id] = node
            depth = max(nodes_depths.setdefault(node.id, 0), layers_depths.get(node.outbound_layer.id, 0))
            layers_depths[node.outbound_layer.id] = depth
            layer_by_id[node.outbound_layer.id] = node.outbound_layer
            nodes_depths[node.id] = depth
            for inbound_layer, index in zip(node.inbound_layers, node.node_indices, strict=True):
                inbound_node = inbound_layer.inbound_nodes[index]
                nodes_depths[inbound_node.id] = max(depth + 1, nodes_depths.get(inbound_node.id, 0))
                node_by_id[inbound_node.id] = inbound_node
        # JavaScript walks integer-keyed objects in ascending key order: nodes and layers by id.
        for node_id in sorted(nodes_depths):
            self.nodes_by_depth.setdefault(nodes_depths[node_id], []).append(node_by_id[node_id])
        for layer_id in sorted(layers_depths):
            self.layers_by_depth.setdefault(layers_depths[layer_id], []).append(layer_by_id[layer_id])
        for depth in sorted(self.layers_by_depth, reverse=True):
            self.layers.extend(sorted(self.layers_by_depth[depth], key=lambda layer: layer_indices[layer.id]))
        self.nodes_by_depth = {d: self.nodes_by_depth[d] for d in sorted(self.nodes_by_depth)}

        computable = {id(x) for x in self.inputs}
        completed: list[str] = []
        for depth in sorted(self.nodes_by_depth, reverse=True):
            for node in self.nodes_by_depth[depth]:
                layer = node.outbound_layer
                for x in node.input_tensors:
                    if id(x) not in computable:
                        raise RuntimeError(
                            f'Graph disconnected: cannot obtain value for tensor {x.name} at layer "{layer.name}". '
                            f"The following previous layers were accessed without issue: {completed}"
                        )
                computable.update(id(x) for x in node.output_tensors)
                completed.append(layer.name)

        names = [layer.name for layer in self.layers]
        for name in names:
            if names.count(name) != 1:
                raise RuntimeError(
                    f'The name "{name}" is used {names.count(name)} times in the model. All layer names should be '
                    f"unique. Layer names: {json.dumps(names)}"
                )

    @property
    def internal_container_refs(self) -> list[Container]:
        """The models used as layers of this one."""
        return [layer for layer in self.layers if isinstance(layer, Container)]

    # -- memory -----------------------------------------------------------------------------------
    def assert_not_disposed(self) -> None:
        """Raise if the model was disposed."""
        if self._ref_count == 0:
            raise RuntimeError(f"Container '{self.name}' is already disposed.")

    def dispose(self) -> DisposeResult:
        """Drop one reference; at zero, release every layer (freeing the weights no one else holds)."""
        self.assert_not_disposed()
        return self._release(1)

    def _release(self, count: int) -> DisposeResult:
        if not self._ref_count:
            return DisposeResult(self._ref_count or 0, 0)
        self._ref_count = max(0, self._ref_count - count)
        freed = 0
        if self._ref_count == 0:
            release_compiled(self)
            release_compiled(getattr(self, "model", None))  # a Sequential's internal model
            for layer in self.layers:
                freed += layer._release(self._node_count(layer)).num_disposed_variables
            for container in self.internal_container_refs:  # as TF.js: nested models are released fully
                freed += container._release(1).num_disposed_variables
        return DisposeResult(self._ref_count, freed)

    def _node_count(self, layer: Layer) -> int:
        """How many of ``layer``'s nodes belong to this graph (the references it holds)."""
        keys = (Layer.node_key(layer, i) for i in range(len(layer.inbound_nodes)))
        return max(1, sum(1 for key in keys if key in self.container_nodes))

    # -- weights ----------------------------------------------------------------------------------
    @property
    def trainable(self) -> bool:
        """Whether the model's weights are trained (setting it sets every layer's weights)."""
        return self._trainable

    @trainable.setter
    def trainable(self, trainable: bool) -> None:
        for layer in getattr(self, "layers", []):
            for w in layer._trainable_weights:
                w.trainable = trainable
        self._trainable = bool(trainable)

    @property
    def trainable_weights(self) -> list[LayerVariable]:
        """The trainable weights of every layer, in layer order."""
        if self._trainable_weights:
            raise ValueError(
                "Container instance unexpectedly contains _trainable_weights. The trainable weights of a "
                "Container are a union of the trainable weights of its constituent Layers."
            )
        if not self.trainable:
            return []
        return [w for layer in self.layers for w in layer.trainable_weights]

    @property
    def non_trainable_weights(self) -> list[LayerVariable]:
        """The non-trainable weights of every layer (all weights when the model is frozen)."""
        weights = [w for layer in self.layers for w in layer.non_trainable_weights]
        if not self.trainable:
            return [w for layer in self.layers for w in layer.trainable_weights] + weights
        return weights

    def load_weights(self, weights: dict[str, Any], strict: bool = True) -> None:
        """Assign weights by their original names (``dense_Dense1/kernel``), as in saved models."""
        name_to_weight: dict[str, LayerVariable] = {}
        total = 0
        keras_v3 = _is_keras_saved_model_format(weights)
        if keras_v3:
            weights = _parse_keras_v3_weights(weights)
        for layer in self.layers:
            for index, weight in enumerate(layer.weights):
                name = "/".join(weight.name.split("/")[:-1]) + f"/{index}" if keras_v3 else weight.original_name
                if name in name_to_weight:
                    raise ValueError(f"Duplicate weight name: {name}")
                name_to_weight[name] = weight
                total += 1
        pairs = []
        for name, value in weights.items():
            validated = name
            if name not in name_to_weight:  # TF 2.2+ puts the cell name in: layer/cell/weight
                tokens = name.split("/")
                validated = "/".join(tokens[:-2] + tokens[-1:])
            if validated in name_to_weight:
                pairs.append((name_to_weight.pop(validated), value))
            elif strict:
                raise ValueError(f"Provided weight data has no target variable: {name}")
        if strict and name_to_weight:
            raise ValueError(f"{len(name_to_weight)} of {total} weights are not set: {list(name_to_weight)}")
        batch_set_value(pairs)

    # -- execution --------------------------------------------------------------------------------
    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """Run the graph on ``inputs`` (one tensor per model input)."""
        inputs = to_list(inputs)
        if len(inputs) != len(self.inputs):
            raise ValueError(
                f"{self.name}: the model has {len(self.inputs)} input(s) but {len(inputs)} tensor(s) were given"
            )

        masks = to_list(kwargs.pop("mask", None))
        masks = masks if len(masks) == len(inputs) else [None] * len(inputs)

        def run() -> Any:
            feed_dict = FeedDict()
            for key, value, mask in zip(self.inputs, inputs, masks, strict=True):
                feed_dict.add(key, value, mask)
            return execute(self.outputs, feed_dict, kwargs)

        return tidy(run)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """None: models do not propagate masks to their callers."""
        return None

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape(s) for the given input shape(s), walking the graph by depth."""
        input_shapes = normalize_shape_list(input_shape)
        if len(input_shapes) != len(self.input_layers):
            raise ValueError(
                f"Invalid input_shape argument {shape_str(input_shape)}: model has {len(self.input_layers)} "
                "tensor inputs."
            )
        shapes: dict[str, Shape] = {}
        for layer, shape in zip(self.input_layers, input_shapes, strict=True):
            shapes[f"{layer.name}_0_0"] = tuple(shape)
        input_layer_ids = {layer.id for layer in self.input_layers}
        depths = sorted(self.nodes_by_depth, reverse=True)
        if len(depths) > 1:
            for depth in depths:
                for node in self.nodes_by_depth[depth]:
                    layer = node.outbound_layer
                    if layer.id in input_layer_ids:
                        continue
                    node_input_shapes = [
                        shapes[f"{inbound.name}_{node_index}_{tensor_index}"]
                        for inbound, node_index, tensor_index in zip(
                            node.inbound_layers, node.node_indices, node.tensor_indices, strict=True
                        )
                    ]
                    output_shapes = normalize_shape_list(
                        layer.compute_output_shape(singleton_or_list(node_input_shapes))
                    )
                    node_index = next(i for i, n in enumerate(layer.inbound_nodes) if n is node)
                    for j, shape in enumerate(output_shapes):
                        shapes[f"{layer.name}_{node_index}_{j}"] = shape
        result = []
        for layer, node_index, tensor_index in zip(
            self.output_layers, self.output_layers_node_indices, self.output_layers_tensor_indices, strict=True
        ):
            result.append(shapes[f"{layer.name}_{node_index}_{tensor_index}"])
        return singleton_or_list(result)

    # -- layers -----------------------------------------------------------------------------------
    def get_layer(self, name: str | int | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index (in ``layers`` order)."""
        if index is None and isinstance(name, int) and not isinstance(name, bool):
            name, index = None, name
        if index is not None:
            if not -len(self.layers) <= index < len(self.layers):
                raise ValueError(
                    f"Was asked to retrieve layer at index {index}, but model only has {len(self.layers)} layer(s)."
                )
            return self.layers[index]
        if name is None:
            raise ValueError("Provide either a layer name or layer index")
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Layers: {[layer.name for layer in self.layers]}")

    def calculate_losses(self) -> list[Tensor]:
        """The current values of every layer's losses (regularization penalties)."""

        def run() -> list[Tensor]:
            losses: list[Tensor] = []
            for layer in self.layers:
                for node_index in range(len(layer.inbound_nodes)):
                    if Layer.node_key(layer, node_index) in self.container_nodes:
                        losses.extend(layer.calculate_losses())
            return losses

        return tidy(run)

    @property
    def stateful(self) -> bool:
        """Whether any layer is stateful."""
        return any(layer.stateful for layer in self.layers)

    def reset_states(self) -> None:
        """Reset the state of every stateful layer."""
        for layer in self.layers:
            if layer.stateful:
                layer.reset_states()


def _is_keras_saved_model_format(weights: dict[str, Any]) -> bool:
    """Whether weight names end in an index (Keras v3: ``dense/0``)."""
    if not weights:
        return False
    last = next(iter(weights)).split("/")[-1]
    return last.isdigit()


def _parse_keras_v3_weights(weights: dict[str, Any]) -> dict[str, Any]:
    """Keras v3 names without the ``vars`` / ``layer_checkpoint_dependencies`` parts and leading ``_``."""
    parsed = {}
    for key, value in weights.items():
        parts = [p[1:] if p.startswith("_") else p for p in key.split("/")]
        parsed["/".join(p for p in parts if p not in ("vars", "layer_checkpoint_dependencies"))] = value
    return parsed


__all__ = ["BACKEND", "KERAS_VERSION", "Container", "deserialize_layer"]
