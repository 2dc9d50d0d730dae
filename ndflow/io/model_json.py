"""``model.json``: parse and validate it, and turn it into ``ModelArtifacts`` and back (TF.js ``io_utils.ts``).

Accepted layouts, newest first:

- TF.js >= 1.0: ``{"format", "generatedBy", "convertedBy", "modelTopology", "weightsManifest", ...}``;
- older Keras-JSON files: ``{"modelTopology": {"keras_version", "model_config": ...}, "weightsManifest"}``
  with no ``format`` key (``format`` is then None);
- a bare topology: the Keras model JSON itself (``{"class_name", "config"}``) or a GraphDef (``{"node": ...}``),
  with no weights;
- a bare weights manifest (a JSON list of groups), as ``tensorflowjs_converter`` writes
  ``weights_manifest.json``: artifacts with weights and no topology.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .types import ModelArtifacts, WeightData, WeightsManifestGroup
from .weights import check_weight_size, check_weight_spec, get_weight_specs

#: The deepest nesting of arrays/objects read from a model.json (real TF.js models nest under 20 levels).
MAX_JSON_DEPTH = 512
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)

# Keys of model.json that carry over to ModelArtifacts as they are (besides modelTopology and weights).
_OPTIONAL_KEYS = {
    "trainingConfig": "training_config",
    "signature": "signature",
    "userDefinedMetadata": "user_defined_metadata",
    "modelInitializer": "model_initializer",
    "initializerSignature": "initializer_signature",
}


def is_graph_topology(topology: Any) -> bool:
    """Whether a topology is a TensorFlow GraphDef in JSON (``node``/``versions``/``library``), not Keras JSON."""
    return (
        isinstance(topology, Mapping)
        and "class_name" not in topology
        and "model_config" not in topology
        and ("node" in topology or "versions" in topology or "library" in topology)
    )


def is_graph_model(model_json: Mapping[str, Any]) -> bool:
    """Whether a model.json describes a graph model (``format: graph-model``, or a GraphDef topology)."""
    fmt = model_json.get("format")
    if fmt is not None:
        return fmt == "graph-model"
    return is_graph_topology(model_json.get("modelTopology"))


def check_weights_manifest(manifest: Any, source: str = "model.json") -> list[WeightsManifestGroup]:
    """Validate a weights manifest (a list of ``{paths: [str], weights: [spec]}``) and return it."""
    if not isinstance(manifest, list):
        raise ValueError(f"{source}: 'weightsManifest' must be a list of groups, got {type(manifest).__name__}")
    names: set[str] = set()
    for i, group in enumerate(manifest):
        where = f"{source}: weightsManifest[{i}]"
        if not isinstance(group, Mapping):
            raise ValueError(f"{where} must be an object with 'paths' and 'weights', got {group!r}")
        paths, weights = group.get("paths"), group.get("weights")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"{where}: 'paths' must be a list of file names, got {paths!r}")
        if not isinstance(weights, list):
            raise ValueError(f"{where}: 'weights' must be a list of weight specs, got {weights!r}")
        for j, spec in enumerate(weights):
            check_weight_spec(spec, f"{where}.weights[{j}]")
            check_weight_size(spec, f"{where}.weights[{j}]")
            if spec["name"] in names:
                raise ValueError(f"{source}: weight '{spec['name']}' appears twice in the weights manifest")
            names.add(spec["name"])
    return manifest


def normalize_model_json(obj: Any, source: str = "model.json") -> dict[str, Any]:
    """A parsed model.json in its TF.js >= 1.0 shape, whatever the layout; ValueError when it is none of them."""
    if isinstance(obj, list):  # a bare weights manifest
        return {"weightsManifest": check_weights_manifest(obj, source)}
    if not isinstance(obj, Mapping):
        raise ValueError(f"{source}: expected a JSON object (the model.json), got {type(obj).__name__}")
    model_json = dict(obj)
    if model_json.get("modelTopology") is None and model_json.get("weightsManifest") is None:
        if "class_name" in model_json or "model_config" in model_json or is_graph_topology(model_json):
            return {"modelTopology": model_json}  # a bare (Keras JSON or GraphDef) topology
        raise ValueError(
            f"{source} contains neither model topology nor manifest for weights "
            f"(keys: {sorted(model_json) or 'none'}); is this a TF.js model.json?"
        )
    topology = model_json.get("modelTopology")
    if topology is not None and not isinstance(topology, Mapping):
        raise ValueError(f"{source}: 'modelTopology' must be a JSON object, got {type(topology).__name__}")
    if model_json.get("weightsManifest") is not None:
        check_weights_manifest(model_json["weightsManifest"], source)
    elif is_graph_model(model_json):
        raise ValueError(f"{source}: a graph model needs a 'weightsManifest', and this model.json has none")
    return model_json


def parse_model_json(text: str | bytes | bytearray, source: str = "model.json") -> dict[str, Any]:
    """Parse and validate model.json text (see the module docstring for the layouts); ValueError when malformed."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{source} is not valid UTF-8 text: {exc}") from None
    obj = loads_bounded(text, source)
    return normalize_model_json(obj, source)


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of (valid) JSON text nest; brackets inside strings do not count."""
    stripped = _JSON_STRING.sub('""', text).encode("utf-8")
    b = np.frombuffer(stripped, dtype=np.uint8)
    steps = ((b == 0x5B) | (b == 0x7B)).astype(np.int32) - ((b == 0x5D) | (b == 0x7D)).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0))


def loads_bounded(text: str, source: str = "model.json", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted text: a ValueError naming ``source`` when it is malformed or its arrays and
    objects nest more than ``max_depth`` levels (never a RecursionError)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if source.endswith(".pb"):
            hint = " (.pb models are not supported since TF.js 1.0: convert the model to model.json)"
        raise ValueError(f"Failed to parse model JSON {source}: {exc}{hint}") from None
    except RecursionError:
        obj, depth = None, None
    else:
        depth = json_depth(text)
        if depth <= max_depth:
            return obj
    found = f" ({depth} levels)" if depth is not None else ""
    raise ValueError(f"{source}: the JSON nests too deeply{found}; at most {max_depth} levels are read")


def _json_safe(obj: Any) -> Any:
    """NaN and Infinity as null, as ``JSON.stringify`` writes them."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", None) == 0:  # numpy scalars
        return _json_safe(obj.item())
    return obj


def dumps_model_json(model_json: Mapping[str, Any]) -> str:
    """model.json text as TF.js writes it (``JSON.stringify``: compact, NaN/Infinity as null)."""
    return json.dumps(_json_safe(model_json), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def model_json_for_artifacts(
    artifacts: ModelArtifacts, manifest: Sequence[WeightsManifestGroup] | None
) -> dict[str, Any]:
    """The model.json object for artifacts and a weights manifest (TF.js ``getModelJSONForModelArtifacts``;
    ``weightsManifest`` is left out when ``manifest`` is None)."""
    if isinstance(artifacts.model_topology, bytes | bytearray):
        raise ValueError("saving a model topology in binary form is not supported; it must be a JSON object")
    result: dict[str, Any] = {
        "modelTopology": artifacts.model_topology,
        "format": artifacts.format,
        "generatedBy": artifacts.generated_by,
        "convertedBy": artifacts.converted_by,
    }
    if manifest is not None:
        result["weightsManifest"] = list(manifest)
    for key in ("signature", "userDefinedMetadata", "modelInitializer", "initializerSignature", "trainingConfig"):
        value = getattr(artifacts, _OPTIONAL_KEYS[key])
        if value is not None:
            result[key] = value
    return result


def artifacts_for_model_json(
    model_json: Mapping[str, Any], weight_specs: list[Any] | None = None, weight_data: WeightData | None = None
) -> ModelArtifacts:
    """ModelArtifacts for a parsed model.json and its loaded weights (TF.js ``getModelArtifactsForJSONSync``)."""
    artifacts = ModelArtifacts(
        model_topology=model_json.get("modelTopology"),
        format=model_json.get("format"),
        generated_by=model_json.get("generatedBy"),
        converted_by=model_json.get("convertedBy"),
    )
    for key, attr in _OPTIONAL_KEYS.items():
        if model_json.get(key) is not None:
            setattr(artifacts, attr, model_json[key])
    if model_json.get("weightsManifest") is not None:
        if weight_specs is None:
            weight_specs = get_weight_specs(model_json["weightsManifest"])
        if weight_data is None:
            raise ValueError("model.json has a weightsManifest but no weight data was loaded")
        artifacts.weight_specs = list(weight_specs)
        artifacts.weight_data = weight_data
    return artifacts
