"""A ``Container``'s TF.js model config: ``get_config`` / ``to_json`` (layers, their inbound nodes, the model's
inputs and outputs, node indices renumbered as TF.js does) and ``from_config`` (layers rebuilt and their nodes
replayed until every one has its inputs). Mixed into :class:`~ndflow.layers.engine.container.Container`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..serialization import deserialize_keras_object, to_json
from ..utils import singleton_or_list
from .base import Layer
from .topology import SymbolicTensor

logger = logging.getLogger("ndflow")

KERAS_VERSION = "tfjs-layers 4.22.0"
BACKEND = "tensor_flow.js"

if TYPE_CHECKING:
    from .container import Container


def deserialize_layer(
    config: dict[str, Any], custom_objects: dict[str, Any] | None = None, fast_weight_init: bool = False
) -> Layer:
    """A layer (or model) from its ``{'class_name', 'config'}``; unknown class names raise ``ValueError``."""
    if not isinstance(config, dict):
        raise ValueError(f"a layer's config must be an object with 'class_name' and 'config', got {config!r:.80}")
    layer = deserialize_keras_object(
        config, custom_objects=custom_objects, kind="layer", fast_weight_init=fast_weight_init
    )
    if not isinstance(layer, Layer):
        raise ValueError(f"{config.get('class_name')!r} is not a layer class")
    return layer


class ContainerConfigMixin:
    """Serialization of a container's graph (see the module docstring)."""

    # -- serialization ----------------------------------------------------------------------------
    def build_node_conversion_map(self) -> dict[str, int]:
        """Node keys of this graph mapped to their index among the nodes that get serialized."""
        conversion: dict[str, int] = {}
        for layer in self.layers:
            kept = 1 if isinstance(layer, ContainerConfigMixin) else 0
            for original_index in range(len(layer.inbound_nodes)):
                key = Layer.node_key(layer, original_index)
                if key in self.container_nodes:
                    conversion[key] = kept
                    kept += 1
        return conversion

    def get_config(self) -> dict[str, Any]:
        """``{'name', 'layers': [{name, class_name, config, inbound_nodes}], 'input_layers', 'output_layers'}``."""
        conversion = self.build_node_conversion_map()
        layer_configs = []
        for layer in self.layers:
            inbound_nodes = []
            for original_index, node in enumerate(layer.inbound_nodes):
                if Layer.node_key(layer, original_index) not in self.container_nodes:
                    continue
                kwargs = {}
                if node.call_args:
                    try:
                        to_json(node.call_args)
                        kwargs = dict(node.call_args)
                    except TypeError:
                        logger.warning(
                            "Layer %s was passed non-serializable keyword arguments: %s. They will not be included "
                            "in the serialized model (and thus will be missing at deserialization time).",
                            layer.name,
                            node.call_args,
                        )
                if node.inbound_layers:
                    inbound_nodes.append(
                        [
                            [inbound.name, conversion.get(Layer.node_key(inbound, node_index), 0), tensor_index, kwargs]
                            for inbound, node_index, tensor_index in zip(
                                node.inbound_layers, node.node_indices, node.tensor_indices, strict=True
                            )
                        ]
                    )
            layer_configs.append(
                {
                    "name": layer.name,
                    "class_name": layer.get_class_name(),
                    "config": layer.get_config(),
                    "inbound_nodes": inbound_nodes,
                }
            )

        def locate(layers: list[Layer], node_indices: list[int], tensor_indices: list[int]) -> list[list[Any]]:
            located = []
            for layer, node_index, tensor_index in zip(layers, node_indices, tensor_indices, strict=True):
                key = Layer.node_key(layer, node_index)
                if key in self.container_nodes:
                    located.append([layer.name, conversion.get(key, 0), tensor_index])
            return located

        return {
            "name": self.name,
            "layers": layer_configs,
            "input_layers": locate(self.input_layers, self.input_layers_node_indices, self.input_layers_tensor_indices),
            "output_layers": locate(
                self.output_layers, self.output_layers_node_indices, self.output_layers_tensor_indices
            ),
        }

    def updated_config(self) -> dict[str, Any]:
        """``{'class_name', 'config', 'keras_version', 'backend'}``: the model topology of ``model.json``."""
        return {
            "class_name": self.get_class_name(),
            "config": self.get_config(),
            "keras_version": KERAS_VERSION,
            "backend": BACKEND,
        }

    def to_json(self, unused: Any = None, return_string: bool = True) -> str | dict[str, Any]:
        """The model topology as TF.js's ``model.toJSON()``: a JSON string, or the dict if not ``return_string``."""
        config = self.updated_config()
        return to_json(config) if return_string else config

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, fast_weight_init: bool = False
    ) -> Container:
        """Rebuild a model from its config: create every layer, then replay the calls in dependency order."""
        created: dict[str, Layer] = {}
        unprocessed: dict[str, list[list[Any]]] = {}

        def add_unprocessed(layer: Layer, node_data: list[Any]) -> None:
            unprocessed.setdefault(layer.name, []).append(node_data)

        def process_node(layer: Layer, node_data: list[Any]) -> bool:
            input_tensors = []
            kwargs: dict[str, Any] = {}
            for input_data in node_data:
                if not isinstance(input_data, list | tuple) or len(input_data) < 3:
                    raise ValueError(f"Corrupted configuration of layer {layer.name}: bad inbound node {input_data!r}")
                inbound_name, inbound_node_index, inbound_tensor_index = input_data[:3]
                kwargs = dict(input_data[3]) if len(input_data) > 3 and input_data[3] is not None else {}
                inbound = created.get(inbound_name)
                if inbound is None or len(inbound.inbound_nodes) <= inbound_node_index:
                    add_unprocessed(layer, node_data)
                    return False
                input_tensors.append(inbound.inbound_nodes[inbound_node_index].output_tensors[inbound_tensor_index])
            if input_tensors:
                layer.apply(singleton_or_list(input_tensors), kwargs)
            return True

        layers_config = config.get("layers")
        if not isinstance(layers_config, list):
            raise ValueError(f"model config must have a 'layers' list, got {type(layers_config).__name__}")
        for layer_data in layers_config:
            layer = deserialize_layer(layer_data, custom_objects, fast_weight_init)
            layer.set_fast_weight_init_during_build(fast_weight_init)
            created[layer_data.get("name", layer.name)] = layer
            for node_data in layer_data.get("inbound_nodes", []):
                if not isinstance(node_data, list):
                    raise ValueError(f"Corrupted configuration, expected array for node data: {node_data!r}")
                add_unprocessed(layer, node_data)
        while unprocessed:
            progressed = False
            for layer_data in layers_config:
                layer = created[layer_data.get("name", "")]
                pending = unprocessed.pop(layer.name, None)
                for node_data in pending or ():
                    progressed = process_node(layer, node_data) or progressed
            if not progressed:
                missing = sorted(
                    {str(d[0]) for nodes in unprocessed.values() for n in nodes for d in n if d[0] not in created}
                )
                raise ValueError(
                    f"Corrupted configuration: the inputs of layer(s) {sorted(unprocessed)} can never be computed"
                    + (f" (unknown layer(s) {missing})" if missing else "")
                )

        def tensors(entries: Any, what: str) -> list[SymbolicTensor]:
            if entries and isinstance(entries[0], str):
                entries = [entries]
            found = []
            for layer_name, node_index, tensor_index in (e[:3] for e in entries):
                if layer_name not in created:
                    raise ValueError(f"Corrupted configuration: {what} names unknown layer {layer_name!r}")
                found.append(created[layer_name].inbound_nodes[node_index].output_tensors[tensor_index])
            return found

        inputs = tensors(config.get("input_layers", []), "input_layers")
        outputs = tensors(config.get("output_layers", []), "output_layers")
        return cls(inputs=inputs, outputs=outputs, name=config.get("name"))
