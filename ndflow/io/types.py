"""The data that model IO moves around: ``ModelArtifacts``, weight specs, save results (TF.js ``io/types.ts``)."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..core.awaitable import Resolved

# Bytes per value of each dtype a weight can be stored as (quantized dtypes included).
DTYPE_VALUE_SIZE_MAP: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "int32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
}

# dtypes a weight spec may declare (what the decoded tensor holds).
WEIGHT_DTYPES = ("float32", "int32", "bool", "string", "complex64")
# dtypes a weight may be stored as when the spec has a ``quantization`` field.
QUANTIZATION_DTYPES = ("uint8", "uint16", "float16")

# A weight spec as it appears in ``weightsManifest[i].weights``:
# ``{"name": str, "shape": [int, ...], "dtype": str, "group"?: str,
#    "quantization"?: {"dtype": "uint8"|"uint16"|"float16", "min"?: float, "scale"?: float, "original_dtype"?: str}}``
WeightSpec = dict[str, Any]
# One group of the manifest: ``{"paths": [str, ...], "weights": [WeightSpec, ...]}``.
WeightsManifestGroup = dict[str, Any]
# One ``bytes``-like buffer, or a list of them that are read as their concatenation (TF.js ``WeightData``).
WeightData = bytes | bytearray | memoryview | list[bytes | bytearray | memoryview]

# camelCase keys of model.json / TF.js ModelArtifacts <-> snake_case attributes.
_FIELDS = {
    "modelTopology": "model_topology",
    "trainingConfig": "training_config",
    "weightSpecs": "weight_specs",
    "weightData": "weight_data",
    "format": "format",
    "generatedBy": "generated_by",
    "convertedBy": "converted_by",
    "signature": "signature",
    "userDefinedMetadata": "user_defined_metadata",
    "modelInitializer": "model_initializer",
    "initializerSignature": "initializer_signature",
}
_SNAKE = set(_FIELDS.values())


@dataclass
class ModelArtifacts:
    """Topology, weights and metadata of a model as an IO handler loads or saves them (TF.js ``ModelArtifacts``)."""

    model_topology: dict[str, Any] | bytes | None = None
    training_config: dict[str, Any] | None = None
    weight_specs: list[WeightSpec] | None = None
    weight_data: WeightData | None = None
    format: str | None = None
    generated_by: str | None = None
    converted_by: str | None = None
    signature: dict[str, Any] | None = None
    user_defined_metadata: dict[str, Any] | None = None
    model_initializer: dict[str, Any] | None = None
    initializer_signature: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelArtifacts:
        """Artifacts from a dict with TF.js's camelCase keys (``modelTopology``) or snake_case ones."""
        kwargs: dict[str, Any] = {}
        for key, value in d.items():
            attr = _FIELDS.get(key, key if key in _SNAKE else None)
            if attr is None:
                continue  # unknown keys (weightsManifest, getWeightStream, ...) are not artifacts
            kwargs[attr] = value
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The artifacts as a dict with TF.js's camelCase keys, leaving out fields that are None."""
        return {k: getattr(self, a) for k, a in _FIELDS.items() if getattr(self, a) is not None}

    def weight_data_bytes(self) -> bytes:
        """``weight_data`` as one ``bytes`` (shards joined); empty when there is none."""
        return concatenate_buffers(self.weight_data)


@dataclass
class ModelArtifactsInfo:
    """What a save wrote, in bytes (TF.js ``ModelArtifactsInfo``)."""

    date_saved: datetime.datetime
    model_topology_type: str = "JSON"
    model_topology_bytes: int = 0
    weight_specs_bytes: int = 0
    weight_data_bytes: int = 0


@dataclass
class SaveResult(Resolved):
    """The result of ``handler.save(artifacts)`` (TF.js ``SaveResult``); ``await`` gives it back (a finished
    result, ndflow/core/awaitable.py), so ported ``await model.save(url)`` works."""

    model_artifacts_info: ModelArtifactsInfo
    responses: list[Any] | None = None
    errors: list[Any] | None = field(default=None)


@runtime_checkable
class LoadHandler(Protocol):
    """Anything with ``load() -> ModelArtifacts``."""

    def load(self) -> ModelArtifacts: ...


@runtime_checkable
class SaveHandler(Protocol):
    """Anything with ``save(artifacts) -> SaveResult``."""

    def save(self, artifacts: ModelArtifacts) -> SaveResult: ...


@runtime_checkable
class IOHandler(LoadHandler, SaveHandler, Protocol):
    """A handler that both loads and saves (TF.js ``IOHandler``; one-sided handlers are Load/SaveHandlers)."""


def concatenate_buffers(buffers: WeightData | None) -> bytes:
    """One ``bytes`` from a buffer or a list of buffers (TF.js ``concatenateArrayBuffers``)."""
    if buffers is None:
        return b""
    if isinstance(buffers, bytes):
        return buffers
    if isinstance(buffers, bytearray | memoryview):
        return bytes(buffers)
    if isinstance(buffers, list | tuple):
        return b"".join(bytes(b) if not isinstance(b, bytes) else b for b in buffers)
    raise TypeError(f"weight data must be bytes or a list of bytes, got {type(buffers).__name__}")


def buffers_byte_length(buffers: WeightData | None) -> int:
    """Total byte length of a buffer or a list of buffers, without joining them."""
    if buffers is None:
        return 0
    if isinstance(buffers, list | tuple):
        return sum(memoryview(b).nbytes for b in buffers)
    return memoryview(buffers).nbytes


def model_artifacts_info(artifacts: ModelArtifacts) -> ModelArtifactsInfo:
    """Byte counts of the artifacts' parts (TF.js ``getModelArtifactsInfoForJSON``)."""
    if isinstance(artifacts.model_topology, bytes | bytearray):
        raise ValueError("Expected JSON model topology, received bytes.")

    def json_bytes(obj: Any) -> int:
        return 0 if obj is None else len(json.dumps(obj, separators=(",", ":")).encode("utf-8"))

    return ModelArtifactsInfo(
        date_saved=datetime.datetime.now(datetime.UTC),
        model_topology_type="JSON",
        model_topology_bytes=json_bytes(artifacts.model_topology),
        weight_specs_bytes=json_bytes(artifacts.weight_specs),
        weight_data_bytes=buffers_byte_length(artifacts.weight_data),
    )
