"""``compile`` for ``LayersModel``: the optimizer (a name or an ``nf.train`` optimizer), the loss per output and
the metrics, resolved as TF.js does (``'accuracy'`` / ``'crossentropy'`` by the output's shape and loss).
Mixed into :class:`~ndflow.layers.engine.training.TrainingMixin`."""

from __future__ import annotations

import logging
from typing import Any

from ...train import Optimizer
from .. import losses as losses_module
from .. import metrics as metrics_module
from ..optimizers import get_optimizer

logger = logging.getLogger("ndflow")


class CompileMixin:
    """``compile`` and what it resolves; the attributes it sets are read by training."""

    def compile(self, optimizer: str | Optimizer, loss: Any = None, metrics: Any = None) -> None:
        """Set the optimizer (a name or an ``nf.train`` optimizer), the loss(es) and the metrics."""
        if isinstance(optimizer, str):
            try:
                opt = get_optimizer(optimizer)
            except ValueError as exc:
                raise ValueError(f"compile: optimizer: {exc}") from None
            owned = True
        elif isinstance(optimizer, Optimizer):
            opt, owned = optimizer, False
        else:
            raise ValueError(
                "compile: optimizer must be a name ('sgd', 'adam', ...) or an nf.train optimizer, "
                f"got {type(optimizer).__name__}"
            )
        names = list(self.output_names)
        if isinstance(loss, dict):
            unknown = [k for k in loss if k not in names]
            if unknown:
                raise ValueError(f"compile: unknown entry in loss dictionary: {unknown}. Only expected keys: {names}")
            missing = [name for name in names if loss.get(name) is None]
            if missing:
                raise ValueError(f"compile: loss: output(s) {missing} are missing from the loss dictionary")
            specs = [loss[name] for name in names]
        elif isinstance(loss, list | tuple):
            if len(loss) != len(names):
                raise ValueError(
                    "compile: when passing a list as loss, it should have one entry per model output. The model "
                    f"has {len(names)} output(s), but you passed loss={list(loss)}"
                )
            specs = list(loss)
        elif loss is None:
            raise ValueError(f"compile: loss is required (a name, a function, or one per output of {names})")
        else:
            specs = [loss] * len(names)
        try:
            loss_functions = [losses_module.get(spec) for spec in specs]
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"compile: loss: {exc}") from None
        if self.is_optimizer_owned and self.optimizer_ is not None and self.optimizer_ is not opt:
            self.optimizer_.dispose()  # beyond TF.js: a re-compile frees the slots of the optimizer it made
        self.optimizer_, self.is_optimizer_owned = opt, owned
        self.loss = loss
        self.loss_functions = loss_functions
        self.feed_output_names = names
        self.feed_output_shapes = list(self.internal_output_shapes)
        self.feed_loss_fns = list(loss_functions)
        self.metrics = metrics
        self.metrics_names = ["loss"]
        self.metrics_tensors = []
        if len(self.outputs) > 1:
            for i, fn in enumerate(loss_functions):
                self.metrics_tensors.append((fn, i))
                self.metrics_names.append(f"{names[i]}_loss")
        for i, output_metrics in enumerate(self._collect_metrics(metrics, names)):
            for metric in output_metrics:
                name, fn = self._resolve_metric(metric, i)
                if len(names) > 1:
                    name = f"{names[i]}_{name}"
                self.metrics_names.append(name)
                self.metrics_tensors.append((fn, i))
        self.collected_trainable_weights = self.trainable_weights

    @staticmethod
    def _collect_metrics(metrics: Any, output_names: list[str]) -> list[list[Any]]:
        if metrics is None or (isinstance(metrics, list | tuple) and not metrics):
            return [[] for _ in output_names]
        if isinstance(metrics, str) or callable(metrics):
            return [[metrics] for _ in output_names]
        if isinstance(metrics, list | tuple):
            return [list(metrics) for _ in output_names]
        if isinstance(metrics, dict):
            unknown = [k for k in metrics if k not in output_names]
            if unknown:
                raise ValueError(f"compile: metrics: unknown output name(s) {unknown}; outputs are {output_names}")
            nested = [metrics.get(name, []) for name in output_names]
            return [list(m) if isinstance(m, list | tuple) else [m] for m in nested]
        raise TypeError(f"compile: metrics must be a name, a function, a list or a dict, got {type(metrics).__name__}")

    def _resolve_metric(self, metric: Any, output_index: int) -> tuple[str, Any]:
        """``(name, function)`` of one metric of one output (accuracy / crossentropy resolved as TF.js)."""
        if isinstance(metric, str) and metric in (*metrics_module.ACCURACY_NAMES, *metrics_module.CROSSENTROPY_NAMES):
            accuracy = metric in metrics_module.ACCURACY_NAMES
            shape = self.internal_output_shapes[output_index]
            loss = self.loss_functions[output_index]
            if shape[-1] == 1 or loss is losses_module.binary_crossentropy:
                fn = metrics_module.binary_accuracy if accuracy else losses_module.binary_crossentropy
            elif loss is losses_module.sparse_categorical_crossentropy:
                fn = (
                    metrics_module.sparse_categorical_accuracy
                    if accuracy
                    else losses_module.sparse_categorical_crossentropy
                )
            else:
                fn = metrics_module.categorical_accuracy if accuracy else losses_module.categorical_crossentropy
            return ("acc" if accuracy else "ce"), fn
        try:
            fn = metrics_module.get(metric)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"compile: metrics: {exc}") from None
        return metrics_module.get_loss_or_metric_name(metric), fn

    def check_trainable_weights_consistency(self) -> None:
        """Warn if the trainable weights changed since ``compile``."""
        if self.collected_trainable_weights is None:
            return
        if len(self.trainable_weights) != len(self.collected_trainable_weights):
            logger.warning(
                "Discrepancy between trainable weights and collected trainable weights. Did you set "
                "model.trainable without calling model.compile() afterwards?"
            )
