"""Saving and loading layers models in the TF.js format: ``model.save(url)``, ``nf.load_layers_model(url)``.

``model.save`` writes what TF.js's ``LayersModel.save`` writes (``format: 'layers-model'``, ``generatedBy``,
``convertedBy: null``, the Keras topology of ``model.to_json``, the weights; with ``include_optimizer`` on a
compiled model also ``trainingConfig`` and the optimizer's weights in the ``'optimizer'`` group), through any
``nf.io`` save handler or URL (a path / ``file://`` writes ``model.json`` and 4 MiB ``group1-shard*`` files).
Beyond TF.js, ``quantization_dtype`` stores the model's float32 weights quantized as ``tensorflowjs_converter``
does. ``load_layers_model`` reads every layout TF.js reads (current, the older one without ``format`` whose
``modelTopology`` holds ``model_config``, a bare topology) from a path, ``file://``, ``http(s)://``, an IO handler
or artifacts in memory, compiles the model from ``trainingConfig`` and restores the optimizer's weights.

Both follow ndflow's rule for TF.js's Promise-returning APIs (ndflow/core/awaitable.py): ``model.save(url)``
returns the ``SaveResult`` and ``load_layers_model(url)`` the model, each also awaitable (``await`` gives it
back), so ``await model.save(url)`` and ``model = await nf.load_layers_model(url)`` port unchanged;
``load_layers_model_async`` is a coroutine that reads the artifacts off the event loop (a worker thread, or the
handler's own coroutine) before building the model. ``save`` takes TF.js's config dict
(``{'includeOptimizer': True}``) in place of its keyword arguments.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from ...core.awaitable import finish, is_pending
from ...core.engine import ENGINE
from ...core.globals import dispose, next_frame
from ...io import (
    ModelArtifacts,
    SaveResult,
    concatenate_buffers,
    decode_weights,
    encode_weights,
    from_memory,
    get_load_handlers,
    http,
    resolve_save_handler,
)
from ...io.model_json import is_graph_topology
from .container import deserialize_layer
from .layer_weights import expected_weight_shapes
from .models import LayersModel

#: ``format`` of a layers model's model.json.
LAYERS_MODEL_FORMAT_NAME = "layers-model"
#: The tfjs-layers version whose format ndflow writes.
TFJS_LAYERS_VERSION = "4.22.0"
#: ``generatedBy`` as TF.js 4.22 writes it (models load in TF.js as its own).
GENERATED_BY = f"TensorFlow.js tfjs-layers v{TFJS_LAYERS_VERSION}"
#: Weight group of the optimizer's weights.
OPTIMIZER_WEIGHT_GROUP = "optimizer"
#: userDefinedMetadata above this size (bytes of JSON) is warned about, as in TF.js.
MAX_USER_DEFINED_METADATA_BYTES = 1024 * 1024

_logger = logging.getLogger("ndflow")


def check_user_defined_metadata(metadata: Any, model_name: str, check_size: bool = False) -> None:
    """Raise unless ``metadata`` is a JSON-serializable dict; warn when it is over 1 MiB (TF.js behaviour)."""
    if not isinstance(metadata, Mapping):
        raise TypeError(f"User-defined metadata is expected to be a JSON object, but is not (model {model_name!r}).")
    try:
        text = json.dumps(metadata)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"User-defined metadata of model {model_name!r} is not JSON-serializable: {exc}") from None
    if check_size and len(text) > MAX_USER_DEFINED_METADATA_BYTES:
        _logger.warning(
            "User-defined metadata of model %r is too large in size (length=%d when serialized). It is not "
            "recommended to store such large objects in user-defined metadata. Please make sure its serialized "
            "length is <= %d.",
            model_name,
            len(text),
            MAX_USER_DEFINED_METADATA_BYTES,
        )


def set_user_defined_metadata(self: LayersModel, user_defined_metadata: Mapping[str, Any]) -> None:
    """Metadata saved with the model (``userDefinedMetadata`` of model.json)."""
    check_user_defined_metadata(user_defined_metadata, self.name)
    self.user_defined_metadata = dict(user_defined_metadata)


def get_user_defined_metadata(self: LayersModel) -> dict[str, Any] | None:
    """The metadata set with ``set_user_defined_metadata`` or loaded with the model (None when there is none)."""
    return getattr(self, "user_defined_metadata", None)


def _save(
    self: LayersModel,
    handler_or_url: Any,
    include_optimizer: bool = False,
    quantization_dtype: Any = None,
    trainable_only: bool = False,
) -> SaveResult:
    """``LayersModel.save`` (``training_api.py``, where each argument is described): the artifacts written
    through the handler of ``handler_or_url``; the handler's ``SaveResult``."""
    handler = _save_handler(handler_or_url)
    named = self.get_named_weights(trainable_only=trainable_only)
    data, specs = encode_weights(named, quantize=quantization_dtype)
    artifacts = ModelArtifacts(
        model_topology=self.to_json(None, return_string=False),
        format=LAYERS_MODEL_FORMAT_NAME,
        generated_by=GENERATED_BY,
        converted_by=None,
    )
    optimizer = getattr(self, "optimizer", None)
    if include_optimizer and optimizer is not None:
        artifacts.training_config = self.get_training_config()
        opt_weights = optimizer.get_weights()
        try:
            opt_data, opt_specs = encode_weights(opt_weights, group=OPTIMIZER_WEIGHT_GROUP)
        finally:
            dispose([w["tensor"] for w in opt_weights])
        specs = specs + opt_specs
        data = concatenate_buffers([data, opt_data])
    metadata = get_user_defined_metadata(self)
    if metadata is not None:
        check_user_defined_metadata(metadata, self.name, check_size=True)
        artifacts.user_defined_metadata = metadata
    artifacts.weight_data = data
    artifacts.weight_specs = specs
    return finish(handler.save(artifacts), "LayersModel.save")


def _save_handler(handler_or_url: Any) -> Any:
    if isinstance(handler_or_url, str | os.PathLike):
        return resolve_save_handler(handler_or_url)
    if not callable(getattr(handler_or_url, "save", None)):
        raise ValueError(
            "LayersModel.save() cannot proceed because the IOHandler provided does not have the `save` attribute "
            f"defined (got {type(handler_or_url).__name__})."
        )
    return handler_or_url


def _load_handler(path_or_handler: Any, options: dict[str, Any]) -> Any:
    if isinstance(path_or_handler, ModelArtifacts) or (
        isinstance(path_or_handler, Mapping) and not callable(getattr(path_or_handler, "load", None))
    ):
        return from_memory(path_or_handler)
    if isinstance(path_or_handler, str | os.PathLike):
        url = os.fspath(path_or_handler)
        handlers = get_load_handlers(url, options)
        if not handlers:  # as TF.js: no router claims it, so it is taken as a (relative) http path
            return http(url, **{k: v for k, v in options.items() if k != "strict"})
        if len(handlers) > 1:
            raise ValueError(f"Found more than one ({len(handlers)}) load handlers for URL '{url}'")
        return handlers[0]
    if not callable(getattr(path_or_handler, "load", None)):
        raise ValueError(
            "Cannot proceed with model loading because the IOHandler provided does not have the `load` method "
            f"implemented (got {type(path_or_handler).__name__})."
        )
    return path_or_handler


def _topology(artifacts: ModelArtifacts) -> dict[str, Any]:
    """The Keras model config of loaded artifacts, whatever the layout; ValueError when there is none."""
    topology = artifacts.model_topology
    if topology is None:
        raise ValueError("load_layers_model: the model.json has no modelTopology, so no model can be built from it")
    if not isinstance(topology, Mapping):
        raise ValueError(
            "load_layers_model: modelTopology must be a JSON object (a Keras model config), "
            f"got {type(topology).__name__}"
        )
    if artifacts.format == "graph-model" or is_graph_topology(topology):
        raise ValueError(
            "load_layers_model: this is a graph model (a TensorFlow GraphDef), not a layers model; "
            "load it with nf.load_graph_model()"
        )
    if topology.get("model_config") is not None:  # the older layout: {keras_version, backend, model_config}
        topology = topology["model_config"]
    if not isinstance(topology, Mapping) or "class_name" not in topology:
        raise ValueError(
            "load_layers_model: modelTopology is not a Keras model config ({'class_name', 'config'}); "
            f"keys: {sorted(topology) if isinstance(topology, Mapping) else type(topology).__name__}"
        )
    return dict(topology)


def load_layers_model(
    path_or_handler: Any,
    options: Mapping[str, Any] | None = None,
    *,
    strict: bool | None = None,
    custom_objects: Mapping[str, Any] | None = None,
    **load_options: Any,
) -> LayersModel:
    """Load a layers model saved by TF.js or ndflow (TF.js ``tf.loadLayersModel``); returns the model, which is
    also awaitable (``model = await nf.load_layers_model(url)`` ports unchanged).

    Args:
        path_or_handler: a path or URL of ``model.json`` (``file://``, ``http(s)://``, or a registered router's
            scheme), an IO handler (anything with ``load()``), or artifacts in memory (``ModelArtifacts`` / a
            ``model.json`` dict).
        options: TF.js's ``LoadOptions`` as a dict (the same entries as the keywords below).
        strict: every weight of the model must be in the file and match (default True).
        custom_objects: ``{class name: class}`` for custom layers.
        load_options: the handler's options: ``on_progress``, ``request_init``, ``fetch_func``,
            ``weight_path_prefix``, ...

    A ``trainingConfig`` in the file compiles the model, and saved optimizer weights are restored into its
    optimizer.

    Example::

        model = nf.load_layers_model('file://./my-model/model.json')
        model.predict(nf.ones([1, 4]))
    """
    handler, strict, custom_objects = _prepare_load(path_or_handler, options, strict, custom_objects, load_options)
    return _build_model(finish(handler.load(), "load_layers_model"), bool(strict), custom_objects)


async def load_layers_model_async(
    path_or_handler: Any,
    options: Mapping[str, Any] | None = None,
    *,
    strict: bool | None = None,
    custom_objects: Mapping[str, Any] | None = None,
    **load_options: Any,
) -> LayersModel:
    """:func:`load_layers_model` as a coroutine: the handler's ``load`` runs in a worker thread (or is awaited when
    it is a coroutine), so the event loop keeps running while files are read or downloaded; then the model is
    built. Same arguments and result as :func:`load_layers_model`.

    Example::

        model = await nf.load_layers_model_async('https://example.com/model/model.json')
    """
    handler, strict, custom_objects = _prepare_load(path_or_handler, options, strict, custom_objects, load_options)
    load = handler.load
    artifacts = await load() if inspect.iscoroutinefunction(load) else await asyncio.to_thread(load)
    if is_pending(artifacts):
        artifacts = await artifacts
    await next_frame()
    return _build_model(artifacts, bool(strict), custom_objects)


def _prepare_load(
    path_or_handler: Any,
    options: Mapping[str, Any] | None,
    strict: bool | None,
    custom_objects: Mapping[str, Any] | None,
    load_options: dict[str, Any],
) -> tuple[Any, bool, dict[str, Any]]:
    """The load handler, ``strict`` and the custom objects of a ``load_layers_model`` call."""
    opts = {**dict(options or {}), **load_options}
    if strict is None:
        strict = opts.pop("strict", True)
    else:
        opts.pop("strict", None)
    custom = dict(custom_objects or opts.pop("custom_objects", None) or {})
    return _load_handler(path_or_handler, opts), bool(strict), custom


def _build_model(artifacts: Any, strict: bool, custom_objects: dict[str, Any]) -> LayersModel:
    """The model (compiled, weights loaded) of loaded artifacts."""
    if isinstance(artifacts, Mapping):
        artifacts = ModelArtifacts.from_dict(artifacts)
    topology = _topology(artifacts)
    has_weights = artifacts.weight_data is not None
    if has_weights and artifacts.weight_specs is None:
        raise ValueError(
            "LayersModel artifacts contains weight data, but not weight specs. Therefore loading of weights "
            "cannot proceed."
        )
    fast_weight_init = has_weights and bool(strict)
    before = {id(v) for v in ENGINE.variables.values()}
    model_specs = [s for s in artifacts.weight_specs or [] if s.get("group") != OPTIMIZER_WEIGHT_GROUP]
    try:
        with expected_weight_shapes(model_specs if has_weights else []):  # config vs manifest before allocating
            model = deserialize_layer(topology, custom_objects, fast_weight_init)
    except BaseException:  # free the weights of the layers built before the failing one (e.g. an unknown class)
        for v in [v for v in ENGINE.variables.values() if id(v) not in before]:
            ENGINE.dispose_variable(v)
        raise
    if not isinstance(model, LayersModel):
        if model.built:
            model.dispose()
        raise ValueError(
            f"load_layers_model: the topology describes a {topology.get('class_name')!r} layer, not a model "
            "(Sequential / Model)"
        )
    try:
        if artifacts.training_config is not None:
            model.load_training_config(artifacts.training_config)
            _own_optimizer(model)
        if artifacts.user_defined_metadata is not None:
            set_user_defined_metadata(model, artifacts.user_defined_metadata)
        if has_weights:
            _load_weights(model, artifacts, bool(strict))
    except BaseException:
        _dispose_model(model)
        raise
    return model


def _load_weights(model: LayersModel, artifacts: ModelArtifacts, strict: bool) -> None:
    """Decode the weights; model weights go to ``model.load_weights``, the 'optimizer' group to its optimizer."""
    specs = list(artifacts.weight_specs or [])
    tensors = decode_weights(artifacts.weight_data, specs)
    try:
        model_weights = {s["name"]: tensors[s["name"]] for s in specs if s.get("group") != OPTIMIZER_WEIGHT_GROUP}
        optimizer_weights = [
            {"name": s["name"], "tensor": tensors[s["name"]]} for s in specs if s.get("group") == OPTIMIZER_WEIGHT_GROUP
        ]
        model.load_weights(model_weights, strict)
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None and optimizer_weights:
            optimizer.set_weights(optimizer_weights)
    finally:
        dispose(list(tensors.values()))


def _own_optimizer(model: LayersModel) -> None:
    """The optimizer made from trainingConfig belongs to the model: ``model.dispose()`` frees its slots (beyond
    TF.js, where a loaded model's optimizer outlives it)."""
    model.is_optimizer_owned = True
    inner = getattr(model, "model", None)
    if isinstance(inner, LayersModel) and inner is not model:
        inner.is_optimizer_owned = True


def _dispose_model(model: LayersModel) -> None:
    """Free what a half-loaded model holds (its weights and its optimizer's slots)."""
    optimizer = getattr(model, "optimizer", None)
    try:
        model.dispose()
        if optimizer is not None:
            optimizer.dispose()
    except Exception:  # noqa: BLE001 - cleaning up after the real error, which is re-raised
        pass


#: ``model.save`` as a function of the model (TF.js's method; ``save_model(model, url)``).
save_model = LayersModel.save


def _install() -> None:
    """Attach the user-defined metadata accessors to ``LayersModel`` (TF.js methods)."""
    if not hasattr(LayersModel, "set_user_defined_metadata"):
        LayersModel.set_user_defined_metadata = set_user_defined_metadata  # type: ignore[attr-defined]
        LayersModel.get_user_defined_metadata = get_user_defined_metadata  # type: ignore[attr-defined]


_install()

__all__ = ["GENERATED_BY", "LAYERS_MODEL_FORMAT_NAME", "load_layers_model", "load_layers_model_async", "save_model"]
