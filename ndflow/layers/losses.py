"""Loss functions of ``model.compile(loss=...)``, by TF.js's string names (tfjs-layers ``losses``).

Each loss takes ``(y_true, y_pred)`` and returns one value per sample (the mean or sum over the
last axis), as TF.js's: ``'meanSquaredError'``, ``'meanAbsoluteError'``, ``'meanAbsolutePercentageError'``,
``'meanSquaredLogarithmicError'``, ``'squaredHinge'``, ``'hinge'``, ``'categoricalHinge'``, ``'logcosh'``,
``'categoricalCrossentropy'``, ``'sparseCategoricalCrossentropy'``, ``'binaryCrossentropy'``,
``'kullbackLeiblerDivergence'``, ``'poisson'``, ``'cosineProximity'``. ``get`` also accepts the
snake_case spellings (``'mean_squared_error'``) and, beyond TF.js, Keras's short names (``'mse'``,
``'mae'``, ``'mape'``, ``'msle'``, ``'kld'``, ``'cosine'``), which TF.js's ``compile`` rejects.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import ops
from ..core.tensor import Tensor
from .backend import epsilon
from .naming import to_camel_case
from .utils import tidy

LossFn = Callable[[Tensor, Tensor], Tensor]
_MAX_VALUE = math.inf  # TF.js clips at Number.MAX_VALUE: no upper bound


def l2_normalize(x: Tensor, axis: int | None = None) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``."""

    def run() -> Tensor:
        v = x if x.dtype == "float32" else ops.cast(x, "float32")
        square_sum = ops.sum(ops.square(v), axis, True)
        norm = ops.sqrt(ops.maximum(square_sum, ops.fill(square_sum.shape, epsilon())))
        return ops.div(v, norm)

    return tidy(run)


def mean_squared_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean((y_pred - y_true) ** 2, -1)``."""
    return tidy(lambda: ops.mean(ops.square(ops.sub(y_pred, y_true)), -1))


def mean_absolute_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(|y_pred - y_true|, -1)``."""
    return tidy(lambda: ops.mean(ops.abs(ops.sub(y_pred, y_true)), -1))


def mean_absolute_percentage_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|, -1)``."""

    def run() -> Tensor:
        diff = ops.sub(y_true, y_pred)
        clipped_true = ops.clip_by_value(ops.abs(y_true), epsilon(), _MAX_VALUE)
        return ops.mul(100, ops.mean(ops.abs(ops.div(diff, clipped_true)), -1))

    return tidy(run)


def mean_squared_logarithmic_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean((log(1 + y_pred) - log(1 + y_true)) ** 2, -1)`` (both clipped below at epsilon)."""

    def run() -> Tensor:
        first = ops.log(ops.add(1, ops.clip_by_value(y_pred, epsilon(), _MAX_VALUE)))
        second = ops.log(ops.add(1, ops.clip_by_value(y_true, epsilon(), _MAX_VALUE)))
        return ops.mean(ops.square(ops.sub(first, second)), -1)

    return tidy(run)


def squared_hinge(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(max(0, 1 - y_true * y_pred) ** 2, -1)``."""
    return tidy(lambda: ops.mean(ops.square(ops.maximum(0, ops.sub(1, ops.mul(y_true, y_pred)))), -1))


def hinge(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(max(0, 1 - y_true * y_pred), -1)``."""
    return tidy(lambda: ops.mean(ops.maximum(0, ops.sub(1, ops.mul(y_true, y_pred))), -1))


def categorical_hinge(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``max(0, 1 + max((1 - y_true) * y_pred) - sum(y_true * y_pred))`` over the last axis."""

    def run() -> Tensor:
        pos = ops.sum(ops.mul(y_true, y_pred), -1)
        neg = ops.max(ops.mul(ops.sub(1, y_true), y_pred), -1)
        return ops.maximum(0, ops.add(1, ops.sub(neg, pos)))

    return tidy(run)


def logcosh(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(log(cosh(y_pred - y_true)), -1)``, computed as ``d + softplus(-2d) - log(2)``."""

    def run() -> Tensor:
        diff = ops.sub(y_pred, y_true)
        result = ops.sub(ops.add(diff, ops.softplus(ops.mul(-2, diff))), math.log(2))
        return ops.mean(result, -1)

    return tidy(run)


def categorical_crossentropy(target: Tensor, output: Tensor, from_logits: bool = False) -> Tensor:
    """``-sum(target * log(output), -1)``, ``output`` normalized to sum to 1 (or softmaxed ``from_logits``)."""

    def run() -> Tensor:
        out = output
        if from_logits:
            out = ops.softmax(out)
        else:
            out = ops.div(out, ops.sum(out, out.rank - 1, True))
        out = ops.clip_by_value(out, epsilon(), 1 - epsilon())
        labels = target if target.dtype == "float32" else ops.cast(target, "float32")
        return ops.neg(ops.sum(ops.mul(labels, ops.log(out)), out.rank - 1))

    return tidy(run)


def sparse_categorical_crossentropy(target: Tensor, output: Tensor, from_logits: bool = False) -> Tensor:
    """``categorical_crossentropy`` with integer class ``target``s (any shape holding one index per sample)."""

    def run() -> Tensor:
        flat = ops.reshape(target, [target.size])
        indices = ops.cast(flat if flat.dtype == "int32" else ops.floor(ops.cast(flat, "float32")), "int32")
        out = ops.clip_by_value(output, epsilon(), 1 - epsilon())
        one_hot = ops.reshape(ops.one_hot(indices, out.shape[-1]), list(out.shape))
        return categorical_crossentropy(one_hot, out, from_logits)

    return tidy(run)


def sigmoid_cross_entropy_with_logits(labels: Tensor, logits: Tensor) -> Tensor:
    """``max(x, 0) - x * z + log(1 + exp(-|x|))`` for logits ``x`` and labels ``z`` of the same shape."""
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(
            f"logits and labels must have the same shape, but got shapes {list(labels.shape)} and {list(logits.shape)}"
        )

    def run() -> Tensor:
        return ops.add(ops.sub(ops.relu(logits), ops.mul(logits, labels)), ops.log1p(ops.exp(ops.neg(ops.abs(logits)))))

    return tidy(run)


def binary_crossentropy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean`` over the last axis of the sigmoid cross-entropy of the logits of clipped ``y_pred``."""

    def run() -> Tensor:
        y = ops.clip_by_value(y_pred, epsilon(), 1 - epsilon())
        y = ops.log(ops.div(y, ops.sub(1, y)))
        return ops.mean(sigmoid_cross_entropy_with_logits(y_true, y), -1)

    return tidy(run)


def kullback_leibler_divergence(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``sum(y_true * log(y_true / y_pred), -1)`` (both clipped to [epsilon, 1] inside the log)."""

    def run() -> Tensor:
        clipped_true = ops.clip_by_value(y_true, epsilon(), 1)
        clipped_pred = ops.clip_by_value(y_pred, epsilon(), 1)
        return ops.sum(ops.mul(y_true, ops.log(ops.div(clipped_true, clipped_pred))), -1)

    return tidy(run)


def poisson(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(y_pred - y_true * log(y_pred + epsilon), -1)``."""

    def run() -> Tensor:
        log_pred = ops.log(ops.add(epsilon(), y_pred))
        return ops.mean(ops.sub(y_pred, ops.mul(y_true, log_pred)), -1)

    return tidy(run)


def cosine_proximity(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), -1)``."""

    def run() -> Tensor:
        return ops.neg(ops.sum(ops.mul(l2_normalize(y_true, -1), l2_normalize(y_pred, -1)), -1))

    return tidy(run)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine = cosine_proximity

#: The losses ``compile`` knows, by TF.js name (the order of TF.js's ``lossesMap``).
LOSSES: dict[str, LossFn] = {
    "meanSquaredError": mean_squared_error,
    "meanAbsoluteError": mean_absolute_error,
    "meanAbsolutePercentageError": mean_absolute_percentage_error,
    "meanSquaredLogarithmicError": mean_squared_logarithmic_error,
    "squaredHinge": squared_hinge,
    "hinge": hinge,
    "categoricalHinge": categorical_hinge,
    "logcosh": logcosh,
    "categoricalCrossentropy": categorical_crossentropy,
    "sparseCategoricalCrossentropy": sparse_categorical_crossentropy,
    "binaryCrossentropy": binary_crossentropy,
    "kullbackLeiblerDivergence": kullback_leibler_divergence,
    "poisson": poisson,
    "cosineProximity": cosine_proximity,
}
#: Keras's short names (beyond TF.js, whose ``compile`` only takes the names above).
LOSS_ALIASES: dict[str, str] = {
    "mse": "meanSquaredError", "MSE": "meanSquaredError", "mae": "meanAbsoluteError", "MAE": "meanAbsoluteError",
    "mape": "meanAbsolutePercentageError", "MAPE": "meanAbsolutePercentageError",
    "msle": "meanSquaredLogarithmicError", "MSLE": "meanSquaredLogarithmicError",
    "kld": "kullbackLeiblerDivergence", "KLD": "kullbackLeiblerDivergence", "cosine": "cosineProximity",
}  # fmt: skip


def canonical_loss_name(name: str) -> str | None:
    """TF.js's name of a loss given by any accepted spelling (``'mean_squared_error'``, ``'mse'``), else None."""
    if name in LOSSES:
        return name
    if name in LOSS_ALIASES:
        return LOSS_ALIASES[name]
    camel = to_camel_case(name)
    return camel if camel in LOSSES else None


def get(identifier: str | LossFn) -> LossFn:
    """The loss function for a name (any accepted spelling) or a callable ``(y_true, y_pred) -> Tensor``."""
    if isinstance(identifier, str):
        name = canonical_loss_name(identifier)
        if name is not None:
            return LOSSES[name]
        message = f"Unknown loss {identifier!r}; known losses: {', '.join(LOSSES)}"
        if "softmaxcrossentropy" in identifier.lower():
            message += ". Use 'categoricalCrossentropy' as the string name for nf.losses.softmax_cross_entropy"
        raise ValueError(message)
    if callable(identifier):
        return identifier
    raise TypeError(f"a loss must be a string name or a function (y_true, y_pred), got {type(identifier).__name__}")


__all__ = [
    "LOSSES", "LOSS_ALIASES", "binary_crossentropy", "canonical_loss_name", "categorical_crossentropy",
    "categorical_hinge", "cosine", "cosine_proximity", "get", "hinge", "kld", "kullback_leibler_divergence",
    "l2_normalize", "logcosh", "mae", "mape", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_error", "mean_squared_logarithmic_error", "mse", "msle", "poisson",
    "sigmoid_cross_entropy_with_logits", "sparse_categorical_crossentropy", "squared_hinge",
]  # fmt: skip
