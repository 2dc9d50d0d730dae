"""The ``trainingConfig`` of ``model.json``: what ``compile`` was given, as TF.js writes and reads it.

``get_training_config(model)`` -> ``{'loss': 'mean_squared_error' | [...] | {output: ...}, 'metrics': [...] |
{output: ...}, 'optimizer_config': {'class_name': 'Adam', 'config': {'learningRate': ...}}}`` (names in
snake_case, as TF.js's ``getTrainingConfig``; Keras's short loss names are written in full so that
TF.js can load them). ``load_training_config(model, config)`` compiles ``model`` from one.
"""

from __future__ import annotations

from typing import Any

from ...train import deserialize
from .. import losses as losses_module
from .. import metrics as metrics_module
from ..naming import to_camel_case, to_snake_case


def _loss_identifier(loss: Any) -> str:
    """The snake_case name of a loss (a known loss function is named too)."""
    if not isinstance(loss, str):
        name = metrics_module.get_loss_or_metric_name(loss)
        if name not in losses_module.LOSSES:
            raise ValueError("Serialization of non-string loss is not supported.")
        return to_snake_case(name)
    return to_snake_case(losses_module.canonical_loss_name(loss) or loss)


def get_training_config(model: Any) -> dict[str, Any]:
    """``{'loss', 'metrics', 'optimizer_config'}`` of a compiled model."""
    optimizer = model.optimizer
    if optimizer is None:
        raise RuntimeError("get_training_config: the model is not compiled")
    loss = model.loss
    if isinstance(loss, dict):
        loss_ids: Any = {k: _loss_identifier(v) for k, v in loss.items()}
    elif isinstance(loss, list | tuple):
        loss_ids = [_loss_identifier(v) for v in loss]
    else:
        loss_ids = _loss_identifier(loss)
    name = metrics_module.get_loss_or_metric_name
    metrics = model.metrics
    if isinstance(metrics, str) or callable(metrics):
        metric_ids: Any = [to_snake_case(name(metrics))]
    elif isinstance(metrics, list | tuple):
        metric_ids = [to_snake_case(name(m)) for m in metrics]
    else:  # TF.js writes {} when no metrics were given
        metric_ids = {k: to_snake_case(name(v)) for k, v in (metrics or {}).items()}
    return {
        "loss": loss_ids,
        "metrics": metric_ids,
        "optimizer_config": {"class_name": optimizer.get_class_name(), "config": optimizer.get_config()},
    }


def load_training_config(model: Any, training_config: dict[str, Any]) -> None:
    """Compile ``model`` with the loss, metrics and optimizer of a saved ``trainingConfig``."""
    for key in ("weighted_metrics", "loss_weights", "sample_weight_mode"):
        if training_config.get(key) is not None:
            raise NotImplementedError(f"Loading {key} is not supported yet.")
    opt_config = training_config["optimizer_config"]
    config = {to_camel_case(k): v for k, v in (opt_config.get("config") or {}).items()}
    optimizer = deserialize({"className": opt_config["class_name"], "config": config})
    loss = training_config.get("loss")
    if isinstance(loss, str):
        loss = to_camel_case(loss)
    elif isinstance(loss, list):
        loss = [to_camel_case(v) for v in loss]
    elif isinstance(loss, dict):
        loss = {k: to_camel_case(v) for k, v in loss.items()}
    metrics = training_config.get("metrics")
    if isinstance(metrics, list):
        metrics = [to_camel_case(m) for m in metrics]
    elif isinstance(metrics, dict):
        metrics = {k: to_camel_case(v) for k, v in metrics.items()} or None
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)


__all__ = ["get_training_config", "load_training_config"]
