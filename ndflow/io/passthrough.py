"""In-memory handlers: ``from_memory`` (artifacts you hold) and ``with_save_handler`` (TF.js ``passthrough.ts``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from .types import ModelArtifacts, SaveResult, WeightData, model_artifacts_info

_ARTIFACT_KEYS = {"modelTopology", "weightSpecs", "model_topology", "weight_specs"}


class PassthroughLoader:
    """A load handler that returns the artifacts it was given."""

    def __init__(self, artifacts: ModelArtifacts) -> None:
        self.model_artifacts = artifacts

    def __repr__(self) -> str:
        return "PassthroughLoader()"

    def load(self) -> ModelArtifacts:
        """The artifacts given to ``from_memory``."""
        return self.model_artifacts


class PassthroughSaver:
    """A save handler that hands the artifacts to a function."""

    def __init__(self, save_handler: Callable[[ModelArtifacts], Any]) -> None:
        if not callable(save_handler):
            raise TypeError("with_save_handler: the save handler must be a function save_handler(artifacts)")
        self.save_handler = save_handler

    def __repr__(self) -> str:
        return f"PassthroughSaver({getattr(self.save_handler, '__name__', self.save_handler)!r})"

    def save(self, artifacts: ModelArtifacts) -> SaveResult:
        """Call the function with the artifacts; a SaveResult is made for it when it returns none."""
        if isinstance(artifacts, Mapping):
            artifacts = ModelArtifacts.from_dict(artifacts)
        result = self.save_handler(artifacts)
        return result if isinstance(result, SaveResult) else SaveResult(model_artifacts_info(artifacts))


def from_memory(
    model_artifacts: ModelArtifacts | Mapping[str, Any],
    weight_specs: list[Any] | None = None,
    weight_data: WeightData | None = None,
    training_config: Mapping[str, Any] | None = None,
) -> PassthroughLoader:
    """A load handler for artifacts in memory: a ModelArtifacts, a dict of them (camelCase or snake_case keys), or
    (deprecated, as in TF.js) a topology with separate weight specs, data and training config."""
    if weight_specs is None and weight_data is None and training_config is None:
        if isinstance(model_artifacts, ModelArtifacts):
            return PassthroughLoader(model_artifacts)
        if isinstance(model_artifacts, Mapping) and _ARTIFACT_KEYS & set(model_artifacts):
            return PassthroughLoader(ModelArtifacts.from_dict(model_artifacts))
    if not isinstance(model_artifacts, Mapping):
        raise TypeError(
            f"from_memory: expected ModelArtifacts or a topology dict, got {type(model_artifacts).__name__}"
        )
    warnings.warn(
        "Please call nf.io.from_memory() with only one argument, the ModelArtifacts; the multi-argument form "
        "(topology, weight_specs, weight_data, training_config) is deprecated, as in TF.js.",
        DeprecationWarning,
        stacklevel=2,
    )
    return PassthroughLoader(
        ModelArtifacts(
            model_topology=dict(model_artifacts),
            weight_specs=weight_specs,
            weight_data=weight_data,
            training_config=dict(training_config) if training_config is not None else None,
        )
    )


def with_save_handler(save_handler: Callable[[ModelArtifacts], Any]) -> PassthroughSaver:
    """A save handler that calls ``save_handler(artifacts)`` (TF.js ``io.withSaveHandler``)."""
    return PassthroughSaver(save_handler)


from_memory_sync = from_memory
with_save_handler_sync = with_save_handler
