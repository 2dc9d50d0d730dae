"""Metric functions of ``model.compile(metrics=...)``, as TF.js's ``tf.metrics`` (tfjs-layers ``metrics``).

A metric takes ``(y_true, y_pred)`` and returns a value per sample (or one scalar for a batch, as
``precision`` / ``recall`` / ``r2_score``); training averages it over each batch. String names are
TF.js's (``'binaryAccuracy'``, ``'categoricalAccuracy'``, ``'precision'``, ``'categoricalCrossentropy'``,
``'sparseCategoricalCrossentropy'``, ``'mse'``/``'MSE'``, ``'mae'``/``'MAE'``, ``'mape'``/``'MAPE'``,
``'cosine'``), their snake_case spellings, and ``'accuracy'``/``'acc'``/``'crossentropy'``/``'ce'``, which
``compile`` resolves per output as TF.js does. Beyond TF.js's string map (it has the functions but
not the names): ``'recall'``, ``'sparseCategoricalAccuracy'``, ``'binaryCrossentropy'``, ``'r2Score'``,
every loss name, and ``'topKCategoricalAccuracy'`` / ``'sparseTopKCategoricalAccuracy'`` (k=5, Keras's
definition; TF.js throws NotImplementedError for them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from . import losses
from .losses import (
    binary_crossentropy,
    categorical_crossentropy,
    cosine_proximity,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    sparse_categorical_crossentropy,
)
from .naming import to_camel_case

MetricFn = Callable[[Tensor, Tensor], Tensor]


def binary_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """Mean over the last axis of ``y_true == (y_pred > 0.5)``."""

    def run() -> Tensor:
        threshold = ops.mul(0.5, ops.ones_like(y_pred))
        thresholded = ops.cast(ops.greater(y_pred, threshold), y_true.dtype)
        return ops.mean(ops.equal(y_true, thresholded), -1)

    return tidy(run)


def categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``argmax(y_true) == argmax(y_pred)`` per sample, as float32."""
    return tidy(lambda: ops.cast(ops.equal(ops.arg_max(y_true, -1), ops.arg_max(y_pred, -1)), "float32"))


def _count(y_true: Tensor, y_pred: Tensor, true_value: int, pred_value: int) -> Tensor:
    return ops.cast(ops.sum(ops.logical_and(ops.equal(y_true, true_value), ops.equal(y_pred, pred_value))), "float32")


def precision(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``tp / (tp + fp)`` over the batch (0 when nothing is predicted positive); predictions must be 0 or 1."""

    def run() -> Tensor:
        tp = _count(y_true, y_pred, 1, 1)
        denominator = ops.add(tp, _count(y_true, y_pred, 0, 1))
        return ops.cast(ops.where(ops.greater(denominator, 0), ops.div(tp, denominator), 0), "float32")

    return tidy(run)


def recall(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``tp / (tp + fn)`` over the batch (0 when there is no positive); predictions must be 0 or 1."""

    def run() -> Tensor:
        tp = _count(y_true, y_pred, 1, 1)
        denominator = ops.add(tp, _count(y_true, y_pred, 1, 0))
        return ops.cast(ops.where(ops.greater(denominator, 0), ops.div(tp, denominator), 0), "float32")

    return tidy(run)


def sparse_categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``y_true == argmax(y_pred)`` per sample (``y_true`` holds class indices), as float32."""

    def run() -> Tensor:
        labels = ops.squeeze(y_true, [y_true.rank - 1]) if y_true.rank == y_pred.rank else y_true
        predicted = ops.arg_max(y_pred, -1)
        if predicted.dtype != labels.dtype:
            predicted = ops.cast(predicted, labels.dtype)
        return ops.cast(ops.equal(labels, predicted), "float32")

    return tidy(run)


def _in_top_k(y_pred: Tensor, labels: Tensor, k: int) -> Tensor:
    """Whether the score of each sample's label is among its ``k`` largest (ties count as in), as float32."""
    classes = y_pred.shape[-1]
    if k >= classes:
        return ops.ones(list(y_pred.shape[:-1]), "float32")
    target = ops.sum(ops.mul(y_pred, ops.one_hot(labels, classes, 1, 0, "float32")), -1)
    kth = ops.squeeze(ops.slice(ops.topk(y_pred, k).values, [0] * (y_pred.rank - 1) + [k - 1]), [y_pred.rank - 1])
    return ops.cast(ops.greater_equal(target, kth), "float32")


def top_k_categorical_accuracy(y_true: Tensor, y_pred: Tensor, k: int = 5) -> Tensor:
    """Whether the true class (``argmax(y_true)``) is among the ``k`` highest scores (Keras's definition)."""
    return tidy(lambda: _in_top_k(y_pred, ops.arg_max(y_true, -1), k))


def sparse_top_k_categorical_accuracy(y_true: Tensor, y_pred: Tensor, k: int = 5) -> Tensor:
    """Whether the class index ``y_true`` is among the ``k`` highest scores (Keras's definition)."""

    def run() -> Tensor:
        labels = ops.squeeze(y_true, [y_true.rank - 1]) if y_true.rank == y_pred.rank else y_true
        return _in_top_k(y_pred, ops.cast(labels, "int32"), k)

    return tidy(run)


def r2_score(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """The coefficient of determination ``1 - SS_res / SS_tot`` over the whole batch (a scalar)."""

    def run() -> Tensor:
        residuals = ops.sum(ops.square(ops.sub(y_true, y_pred)))
        total = ops.sum(ops.square(ops.sub(y_true, ops.mean(y_true))))
        return ops.sub(ops.scalar(1), ops.div(residuals, total))

    return tidy(run)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
cosine = cosine_proximity

#: TF.js's ``metricsMap`` (the names its ``compile`` accepts), in its order.
METRICS: dict[str, MetricFn] = {
    "binaryAccuracy": binary_accuracy,
    "categoricalAccuracy": categorical_accuracy,
    "precision": precision,
    "categoricalCrossentropy": categorical_crossentropy,
    "sparseCategoricalCrossentropy": sparse_categorical_crossentropy,
    "mse": mean_squared_error,
    "MSE": mean_squared_error,
    "mae": mean_absolute_error,
    "MAE": mean_absolute_error,
    "mape": mean_absolute_percentage_error,
    "MAPE": mean_absolute_percentage_error,
    "cosine": cosine_proximity,
}
#: Names accepted beyond TF.js's map (TF.js has the functions, as ``tf.metrics.*``, not the names).
EXTRA_METRICS: dict[str, MetricFn] = {
    "recall": recall,
    "sparseCategoricalAccuracy": sparse_categorical_accuracy,
    "binaryCrossentropy": binary_crossentropy,
    "r2Score": r2_score,
    "topKCategoricalAccuracy": top_k_categorical_accuracy,
    "sparseTopKCategoricalAccuracy": sparse_top_k_categorical_accuracy,
}
#: Resolved per output by ``compile`` (binary / categorical / sparse, from the output shape and the loss).
ACCURACY_NAMES = ("accuracy", "acc")
CROSSENTROPY_NAMES = ("crossentropy", "ce")


def find_metric(name: str) -> MetricFn | None:
    """The metric for a name in any accepted spelling (a loss name too), else None."""
    for candidate in (name, to_camel_case(name)):
        if candidate in METRICS:
            return METRICS[candidate]
        if candidate in EXTRA_METRICS:
            return EXTRA_METRICS[candidate]
    loss_name = losses.canonical_loss_name(name)
    return losses.LOSSES[loss_name] if loss_name is not None else None


def get(identifier: str | MetricFn) -> MetricFn:
    """The metric function for a name or a callable ``(y_true, y_pred) -> Tensor``."""
    if isinstance(identifier, str):
        fn = find_metric(identifier)
        if fn is None:
            known = ", ".join([*METRICS, *EXTRA_METRICS, *ACCURACY_NAMES, *CROSSENTROPY_NAMES])
            raise ValueError(f"Unknown metric {identifier!r}; known metrics: {known} (and every loss name)")
        return fn
    if callable(identifier):
        return identifier
    raise TypeError(f"a metric must be a string name or a function (y_true, y_pred), got {type(identifier).__name__}")


def get_loss_or_metric_name(fn: str | Callable[..., Any]) -> str:
    """The name of a loss or metric: a string as given, a known function by its TF.js name, else ``__name__``."""
    if isinstance(fn, str):
        return fn
    for table in (losses.LOSSES, METRICS, EXTRA_METRICS):
        for name, known in table.items():
            if known is fn:
                return name
    return getattr(fn, "__name__", None) or type(fn).__name__


__all__ = [
    "ACCURACY_NAMES", "CROSSENTROPY_NAMES", "EXTRA_METRICS", "MAE", "MAPE", "METRICS", "MSE", "binary_accuracy",
    "binary_crossentropy", "categorical_accuracy", "categorical_crossentropy", "cosine", "cosine_proximity",
    "find_metric", "get", "get_loss_or_metric_name", "mae", "mape", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mse", "precision", "r2_score", "recall",
    "sparse_categorical_accuracy", "sparse_categorical_crossentropy", "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
]  # fmt: skip
