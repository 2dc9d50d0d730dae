"""``nf.losses``: the loss functions of ``tf.losses``, composites of other ops as in TF.js.

Each loss computes element-wise losses and reduces them with :func:`compute_weighted_loss`:
``weights`` (a scalar or a tensor broadcastable to the losses) multiply them, then ``reduction``
(:class:`Reduction`, default ``SUM_BY_NONZERO_WEIGHTS``) sums, averages or keeps them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import get_kernel
from ..core.tensor import Tensor
from ..core.types import TensorLike
from ._custom_grad import custom_grad
from .activation import relu
from .arithmetic import add, div, minimum, mul, squared_difference, sub
from .convert import broadcast_shape, normalize_axes
from .creation import clone, ones, scalar
from .logical import not_equal
from .reduction import max as reduce_max
from .reduction import mean, sum
from .shape import cast
from .sparse_dense import _convert
from .unary import abs, exp, log, neg, square


class Reduction(enum.IntEnum):
    """How a loss reduces its weighted element-wise losses (TF.js's ``tf.Reduction``)."""

    NONE = 0
    MEAN = 1
    SUM = 2
    SUM_BY_NONZERO_WEIGHTS = 3


_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


def _reduction(reduction: Any, op: str) -> Reduction:
    if isinstance(reduction, Reduction):
        return reduction
    if isinstance(reduction, int) and not isinstance(reduction, bool) and reduction in Reduction._value2member_map_:
        return Reduction(reduction)
    names = ", ".join(f"Reduction.{r.name}" for r in Reduction)
    raise ValueError(f"{op}: unknown reduction {reduction!r} (expected one of {names})")


def _loss(op: str, build: Callable[[], Tensor]) -> Tensor:
    """Run ``build`` in a scope (its temporaries are disposed); the result is always a new tensor."""

    def run() -> Tensor:
        result = build()
        return result if result.scope_id == ENGINE.active_scope.id else clone(result)

    return ENGINE.tidy(op, run, (), {})


def _weights(weights: Any, op: str) -> Tensor | None:
    return None if weights is None else _convert(weights, "weights", op)


def _pair(labels: Any, predictions: Any, op: str, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    a = _convert(labels, names[0], op)
    b = _convert(predictions, names[1], op)
    if a.shape != b.shape:
        raise ValueError(
            f"{op}: the shapes of '{names[0]}' {list(a.shape)} and '{names[1]}' {list(b.shape)} must match"
        )
    return a, b


def _weighted(losses: Tensor, weights: Tensor | None, reduction: Reduction, op: str) -> Tensor:
    """TF.js's ``computeWeightedLoss`` on tensors, inside a scope."""
    if weights is not None:
        broadcast_shape(losses.shape, weights.shape, op)
    weighted = losses if weights is None else mul(losses, weights)
    if reduction == Reduction.NONE:
        return weighted
    if reduction == Reduction.SUM:
        return sum(weighted)
    if reduction == Reduction.MEAN:
        if weights is None:
            return mean(weighted)
        result = div(sum(weighted), sum(weights))
        factor = losses.size / weights.size if weights.size else 0
        return div(result, scalar(factor)) if factor > 1 else result
    if weights is None:  # SUM_BY_NONZERO_WEIGHTS
        return div(sum(weighted), scalar(losses.size))
    nonzero = cast(sum(not_equal(mul(weights, ones(list(losses.shape))), scalar(0))), "float32")
    return div(sum(weighted), nonzero)


def compute_weighted_loss(losses: TensorLike, weights: TensorLike | None = None, reduction: Any = _DEFAULT) -> Tensor:
    """``losses`` times ``weights``, reduced as ``reduction`` says."""
    op = "compute_weighted_loss"
    how = _reduction(reduction, op)
    return _loss(op, lambda: _weighted(_convert(losses, "losses", op), _weights(weights, op), how, op))


def absolute_difference(
    labels: TensorLike, predictions: TensorLike, weights: TensorLike | None = None, reduction: Any = _DEFAULT
) -> Tensor:
    """|labels - predictions|, weighted and reduced."""
    op = "absolute_difference"
    how = _reduction(reduction, op)

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        return _weighted(abs(sub(a, b)), _weights(weights, op), how, op)

    return _loss(op, build)


def mean_squared_error(
    labels: TensorLike, predictions: TensorLike, weights: TensorLike | None = None, reduction: Any = _DEFAULT
) -> Tensor:
    """(labels - predictions) ** 2, weighted and reduced."""
    op = "mean_squared_error"
    how = _reduction(reduction, op)

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        return _weighted(squared_difference(a, b), _weights(weights, op), how, op)

    return _loss(op, build)


def cosine_distance(
    labels: TensorLike,
    predictions: TensorLike,
    axis: int | Sequence[int] | None,
    weights: TensorLike | None = None,
    reduction: Any = _DEFAULT,
) -> Tensor:
    """1 - sum(labels * predictions) along ``axis`` (kept as size 1); for unit vectors, the cosine
    distance. Weighted and reduced."""
    op = "cosine_distance"
    how = _reduction(reduction, op)

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        axes = normalize_axes(axis, a.rank, op)
        return _weighted(sub(scalar(1), sum(mul(a, b), axes, True)), _weights(weights, op), how, op)

    return _loss(op, build)


def hinge_loss(
    labels: TensorLike, predictions: TensorLike, weights: TensorLike | None = None, reduction: Any = _DEFAULT
) -> Tensor:
    """max(0, 1 - y * predictions) with labels in {0, 1} mapped to y in {-1, 1}; weighted and reduced."""
    op = "hinge_loss"
    how = _reduction(reduction, op)

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        one = scalar(1)
        signs = sub(mul(scalar(2), a), one)
        return _weighted(relu(sub(one, mul(signs, b))), _weights(weights, op), how, op)

    return _loss(op, build)


def huber_loss(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike | None = None,
    delta: float = 1.0,
    reduction: Any = _DEFAULT,
) -> Tensor:
    """Quadratic for errors up to ``delta``, linear beyond; weighted and reduced."""
    op = "huber_loss"
    how = _reduction(reduction, op)
    _check_number(delta, op, "delta")

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        d = scalar(delta)
        error = abs(sub(b, a))
        quadratic = minimum(error, d)
        linear = sub(error, quadratic)
        losses = add(mul(scalar(0.5), square(quadratic)), mul(d, linear))
        return _weighted(losses, _weights(weights, op), how, op)

    return _loss(op, build)


def log_loss(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike | None = None,
    epsilon: float = 1e-7,
    reduction: Any = _DEFAULT,
) -> Tensor:
    """Binary cross-entropy of probabilities: -y log(p + eps) - (1 - y) log(1 - p + eps); weighted
    and reduced."""
    op = "log_loss"
    how = _reduction(reduction, op)
    _check_number(epsilon, op, "epsilon")

    def build() -> Tensor:
        a, b = _pair(labels, predictions, op, ("labels", "predictions"))
        one, eps = scalar(1), scalar(epsilon)
        l1 = neg(mul(a, log(add(b, eps))))
        l2 = mul(sub(one, a), log(add(sub(one, b), eps)))
        return _weighted(sub(l1, l2), _weights(weights, op), how, op)

    return _loss(op, build)


def _log1p(x: Tensor) -> Tensor:
    """log(1 + x): the Log1p kernel where the backend has one, else log(add(1, x))."""
    if get_kernel(kn.Log1p, ENGINE.get_backend()) is not None:
        return ENGINE.run_kernel(kn.Log1p, (x,), None)
    return log(add(scalar(1), x))


def sigmoid_cross_entropy(
    multi_class_labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike | None = None,
    label_smoothing: float = 0,
    reduction: Any = _DEFAULT,
) -> Tensor:
    """Cross-entropy of sigmoid(logits) against labels in [0, 1] (smoothed towards 1/2), computed
    stably as max(x, 0) - x z + log(1 + exp(-|x|)); weighted and reduced."""
    op = "sigmoid_cross_entropy"
    how = _reduction(reduction, op)
    _check_number(label_smoothing, op, "label_smoothing")

    def build() -> Tensor:
        z, x = _pair(multi_class_labels, logits, op, ("multi_class_labels", "logits"))
        if label_smoothing > 0:
            s = scalar(label_smoothing)
            z = add(mul(z, sub(scalar(1), s)), mul(scalar(0.5), s))
        losses = add(sub(relu(x), mul(x, z)), _log1p(exp(neg(abs(x)))))
        return _weighted(losses, _weights(weights, op), how, op)

    return _loss(op, build)


def _softmax_cross_entropy_with_logits(labels: Tensor, logits: Tensor) -> Tensor:
    """-sum(labels * log_softmax(logits)) over the last axis (log-sum-exp with the max subtracted).

    Its gradient is TF.js's custom one, ``dy * (softmax - labels)`` for the logits (a handful of
    kernels, not the chain rule through max / exp / log / sum); for the labels the exact ``-dy * log_softmax``
    (TF.js gives ``dy * (labels - softmax)`` there, which is not the derivative)."""
    dim = logits.rank - 1

    def forward(labels: Tensor, logits: Tensor, save: Callable) -> tuple:
        x = logits if logits.dtype == "float32" else cast(logits, "float32")
        top = reduce_max(x, dim, True)
        log_result = sub(x, add(top, log(sum(exp(sub(x, top)), dim, True))))
        save([labels, log_result])

        def grad(dy: Tensor, saved: list) -> list:
            lab, logp = saved
            d = dy.reshape([*dy.shape, 1])
            return [mul(d, neg(logp)), mul(d, sub(exp(logp), lab))]

        return sum(neg(mul(log_result, labels)), dim), grad

    return custom_grad(forward)(labels, logits)


def softmax_cross_entropy(
    onehot_labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike | None = None,
    label_smoothing: float = 0,
    reduction: Any = _DEFAULT,
) -> Tensor:
    """Cross-entropy of softmax(logits) (last axis) against one-hot labels, smoothed towards
    1 / num_classes; one loss per row, weighted and reduced."""
    op = "softmax_cross_entropy"
    how = _reduction(reduction, op)
    _check_number(label_smoothing, op, "label_smoothing")

    def build() -> Tensor:
        labels, x = _pair(onehot_labels, logits, op, ("onehot_labels", "logits"))
        if x.rank == 0:
            raise ValueError(f"{op}: arguments 'onehot_labels' and 'logits' must have rank >= 1, got scalars")
        if label_smoothing > 0:
            s = scalar(label_smoothing)
            classes = scalar(x.shape[-1])  # TF.js takes shape[1]: the same for the usual [batch, classes]
            labels = add(mul(labels, sub(scalar(1), s)), div(s, classes))
        return _weighted(_softmax_cross_entropy_with_logits(labels, x), _weights(weights, op), how, op)

    return _loss(op, build)


def _check_number(value: Any, op: str, arg: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {type(value).__name__}")


__all__ = [
    "Reduction", "absolute_difference", "compute_weighted_loss", "cosine_distance", "hinge_loss", "huber_loss",
    "log_loss", "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
]  # fmt: skip
