"""``model_from_json``: a model from its JSON topology, as TF.js's ``tf.models.modelFromJSON``.

``nf.models.model_from_json(model.to_json())`` rebuilds a model (fresh weights) from:

- a JSON string or dict of a Keras model config (``{'class_name': 'Sequential', 'config': ...}``),
- the older layout ``{'keras_version', 'backend', 'model_config'}``,
- or TF.js's ``{'modelTopology': <either of those>, 'weightsManifest': [...], 'pathPrefix': ...}``; with a
  ``weightsManifest`` the weights are read from ``pathPrefix`` (a folder or URL) and set on the model.

The result is a ``LayersModel``, the same object ``await`` gives in ported code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.globals import dispose
from ..io import load_weights
from .engine.container import deserialize_layer
from .engine.models import LayersModel

_OWNER = "model_from_json"


def _as_dict(json_or_dict: Any) -> dict[str, Any]:
    if isinstance(json_or_dict, str | bytes):
        try:
            value = json.loads(json_or_dict)
        except json.JSONDecodeError as e:
            raise ValueError(f"{_OWNER}: the string is not valid JSON ({e})") from None
    else:
        value = json_or_dict
    if not isinstance(value, Mapping):
        raise TypeError(f"{_OWNER}: expected a model JSON string or dict, got {type(value).__name__}")
    return dict(value)


def model_from_json(json_or_dict: Any, custom_objects: Mapping[str, Any] | None = None) -> LayersModel:
    """A ``LayersModel`` from a JSON model topology (string or dict), with weights when a manifest is given.

    ``custom_objects`` maps class names to classes for custom layers (or register them with
    ``nf.serialization.register_class``). Example: ``m2 = nf.models.model_from_json(m.to_json())``.
    """
    config = _as_dict(json_or_dict)
    if "modelTopology" not in config:
        config = {"modelTopology": config}
    topology = config["modelTopology"]
    if isinstance(topology, str | bytes):
        topology = _as_dict(topology)
    if isinstance(topology, Mapping) and topology.get("model_config") is not None:
        topology = topology["model_config"]
    if not isinstance(topology, Mapping) or "class_name" not in topology:
        got = sorted(topology) if isinstance(topology, Mapping) else type(topology).__name__
        raise ValueError(f"{_OWNER}: expected a Keras model config ({{'class_name', 'config'}}), got {got}")
    model = deserialize_layer(dict(topology), dict(custom_objects or {}))
    if not isinstance(model, LayersModel):
        if model.built:
            model.dispose()
        raise ValueError(f"{_OWNER}: the topology describes a {topology['class_name']!r} layer, not a model")
    manifest = config.get("weightsManifest")
    if manifest is not None:
        try:
            tensors = load_weights(manifest, str(config.get("pathPrefix") or ""))
            try:
                model.load_weights(tensors)
            finally:
                dispose(list(tensors.values()))
        except BaseException:
            model.dispose()
            raise
    return model


__all__ = ["model_from_json"]
