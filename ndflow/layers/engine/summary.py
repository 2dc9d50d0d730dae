"""``print_summary``: the layer table of ``model.summary()``, character for character as TF.js prints it."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..utils import count_params_in_weights, shape_to_json

if TYPE_CHECKING:
    from .container import Container


def _json(value: Any) -> str:
    return json.dumps(shape_to_json(value), separators=(",", ":"))


def print_summary(
    model: Container,
    line_length: int | None = None,
    positions: Sequence[float] | None = None,
    print_fn: Callable[[str], Any] = print,
) -> None:
    """Print the table of layers, shapes and parameter counts of ``model`` through ``print_fn``."""
    sequential_like = is_model_sequential_like(model)
    headers = ["Layer (type)", "Input Shape", "Output shape", "Param #"]
    if sequential_like:
        line_length = line_length or 90
        positions = list(positions or [0.32, 0.61, 0.89, 1])
    else:
        line_length = line_length or 115
        positions = list(positions or [0.24, 0.48, 0.70, 0.80, 1])
    if positions[-1] <= 1:
        positions = [math.floor(line_length * p) for p in positions]
    columns = [int(p) for p in positions]
    relevant_nodes = None
    if not sequential_like:
        headers.append("Receives inputs")
        relevant_nodes = [node for depth in model.nodes_by_depth for node in model.nodes_by_depth[depth]]
    print_fn("_" * line_length)
    _print_row(headers, columns, print_fn)
    print_fn("=" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        if sequential_like:
            _print_layer(layer, columns, print_fn)
        else:
            _print_layer_with_connections(layer, columns, relevant_nodes, print_fn)
        print_fn(("=" if i == len(layers) - 1 else "_") * line_length)
    collected = getattr(model, "collected_trainable_weights", None)
    trainable = count_params_in_weights(collected if collected is not None else model.trainable_weights)
    non_trainable = count_params_in_weights(model.non_trainable_weights)
    print_fn(f"Total params: {trainable + non_trainable}")
    print_fn(f"Trainable params: {trainable}")
    print_fn(f"Non-trainable params: {non_trainable}")
    print_fn("_" * line_length)


def is_model_sequential_like(model: Container) -> bool:
    """Whether every depth of the graph has one single-input node and no layer is shared."""
    nodes = []
    for depth in model.nodes_by_depth:
        depth_nodes = model.nodes_by_depth[depth]
        if len(depth_nodes) > 1 or (len(depth_nodes) == 1 and len(depth_nodes[0].inbound_layers) > 1):
            return False
        nodes.extend(depth_nodes)
    for layer in model.layers:
        if sum(1 for node in layer.inbound_nodes if any(node is n for n in nodes)) > 1:
            return False
    return True


def _print_row(fields: Sequence[str], positions: Sequence[int], print_fn: Callable[[str], Any]) -> None:
    line = ""
    for i, field in enumerate(fields):
        if i > 0:
            line = line[:-1] + " "
        line += field
        line = line[: positions[i]]
        line += " " * (positions[i] - len(line))
    print_fn(line)


def _shapes(layer: Any) -> tuple[str, str]:
    try:
        input_shape = ",".join(_json(node.input_shapes) for node in layer.inbound_nodes)
    except Exception:  # noqa: BLE001 - TF.js prints 'multiple' whatever went wrong
        input_shape = "multiple"
    try:
        output_shape = _json(layer.output_shape)
    except Exception:  # noqa: BLE001
        output_shape = "multiple"
    return input_shape, output_shape


def _print_layer(layer: Any, positions: Sequence[int], print_fn: Callable[[str], Any]) -> None:
    input_shape, output_shape = _shapes(layer)
    fields = [f"{layer.name} ({layer.get_class_name()})", input_shape, output_shape, str(layer.count_params())]
    _print_row(fields, positions, print_fn)


def _print_layer_with_connections(
    layer: Any, positions: Sequence[int], relevant_nodes: list[Any] | None, print_fn: Callable[[str], Any]
) -> None:
    input_shape, output_shape = _shapes(layer)
    connections = []
    for node in layer.inbound_nodes:
        if relevant_nodes and all(node is not n for n in relevant_nodes):
            continue
        for inbound, node_index, tensor_index in zip(
            node.inbound_layers, node.node_indices, node.tensor_indices, strict=True
        ):
            connections.append(f"{inbound.name}[{node_index}][{tensor_index}]")
    fields = [
        f"{layer.name} ({layer.get_class_name()})",
        input_shape,
        output_shape,
        str(layer.count_params()),
        connections[0] if connections else "",
    ]
    _print_row(fields, positions, print_fn)
    for connection in connections[1:]:
        _print_row(["", "", "", "", connection], positions, print_fn)


__all__ = ["is_model_sequential_like", "print_summary"]
