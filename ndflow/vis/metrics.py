"""tfjs-vis's ``metrics``: ``accuracy``, ``confusion_matrix`` and ``per_class_accuracy`` of class predictions.

They compute with ndflow ops and return plain Python numbers and lists, as tfjs-vis's resolve to; the tensors
made on the way are freed. ``labels`` and ``predictions`` are tensors or anything ``nf.tensor`` takes. tfjs-vis's
functions are ``async``; these return the value (no need to ``await``). Values need no matplotlib.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor

__all__ = ["accuracy", "confusion_matrix", "per_class_accuracy", "tensor_stats"]


def _as_tensor(value: Any, what: str, arg: str) -> tuple[Tensor, bool]:
    """``value`` as a tensor, and whether it was made here (to dispose)."""
    if isinstance(value, Tensor):
        if value.is_disposed:
            raise ValueError(f"nf.vis.metrics.{what}: {arg} is a disposed tensor")
        if value.dtype == "string":
            raise TypeError(f"nf.vis.metrics.{what}: {arg}: expected a tensor of numbers, got a string tensor")
        return value, False
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"nf.vis.metrics.{what}: {arg}: expected a tensor or an array of numbers, got {value!r:.60}")
    return ops.tensor(array), True


def accuracy(labels: Any, predictions: Any) -> float:
    """The fraction of places where ``predictions`` equal ``labels`` (the same shape)."""
    (lab, own_l), (pred, own_p) = (
        _as_tensor(labels, "accuracy", "labels"),
        _as_tensor(predictions, "accuracy", "predictions"),
    )
    try:
        if tuple(lab.shape) != tuple(pred.shape):
            raise ValueError(
                f"nf.vis.metrics.accuracy: labels and predictions must have the same shape, got {list(lab.shape)} "
                f"and {list(pred.shape)}"
            )
        if lab.size == 0:
            raise ValueError("nf.vis.metrics.accuracy: labels and predictions are empty")
        mean = tidy(lambda: ops.mean(ops.cast(ops.equal(lab, pred), "float32")))
        value = float(mean.data_sync()[0])
        mean.dispose()
        return value
    finally:
        for t, own in ((lab, own_l), (pred, own_p)):
            if own:
                t.dispose()


def _class_inputs(
    what: str, labels: Any, predictions: Any, num_classes: int | None, weights: Any = None
) -> tuple[list[Tensor], Tensor, Tensor, Tensor | None, int]:
    """Checked rank-1 int32 labels and predictions (and float weights), the number of classes, the tensors to free."""
    made: list[Tensor] = []
    try:
        lab, own = _as_tensor(labels, what, "labels")
        made += [lab] if own else []
        pred, own = _as_tensor(predictions, what, "predictions")
        made += [pred] if own else []
        for arg, t in (("labels", lab), ("predictions", pred)):
            if t.rank != 1:
                raise ValueError(f"nf.vis.metrics.{what}: {arg} must be a 1D tensor, got shape {list(t.shape)}")
        if lab.size != pred.size:
            raise ValueError(
                f"nf.vis.metrics.{what}: labels and predictions must be the same length, got {lab.size} and {pred.size}"
            )
        w = None
        if weights is not None:
            w, own = _as_tensor(weights, what, "weights")
            made += [w] if own else []
            if w.size != pred.size:
                raise ValueError(
                    f"nf.vis.metrics.{what}: weights must be as long as predictions ({pred.size}), got {w.size}"
                )
        lab_i, pred_i = ops.cast(lab, "int32"), ops.cast(pred, "int32")
        made += [lab_i, pred_i]
        w_f = None
        if w is not None:
            w_f = tidy(lambda: ops.cast(ops.reshape(w, [-1]), "float32"))
            made.append(w_f)
        low = min(lab_i.data_sync(), default=0), min(pred_i.data_sync(), default=0)
        if min(low) < 0:
            raise ValueError(f"nf.vis.metrics.{what}: class indices must be >= 0, got {min(low)}")
        if num_classes is None:
            if lab.size == 0:
                raise ValueError(f"nf.vis.metrics.{what}: labels are empty and num_classes is not given")
            top = tidy(lambda: ops.maximum(ops.max(lab_i), ops.max(pred_i)))
            num_classes = int(top.data_sync()[0]) + 1
            top.dispose()
        else:
            if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer) or num_classes < 1:
                raise ValueError(f"nf.vis.metrics.{what}: num_classes must be a positive int, got {num_classes!r}")
            num_classes = int(num_classes)
            high = max(max(lab_i.data_sync(), default=0), max(pred_i.data_sync(), default=0))
            if high >= num_classes:
                raise ValueError(
                    f"nf.vis.metrics.{what}: class index {high} is out of range for num_classes={num_classes}"
                )
        return made, lab_i, pred_i, w_f, num_classes
    except BaseException:
        for t in made:
            t.dispose()
        raise


def confusion_matrix(
    labels: Any, predictions: Any, num_classes: int | None = None, weights: Any = None
) -> list[list[float]]:
    """``result[label][prediction]``: how many times (or the summed ``weights`` of the times) class ``label`` was
    predicted as ``prediction``. ``num_classes`` defaults to the highest class seen plus one."""
    made, lab, pred, w, n = _class_inputs("confusion_matrix", labels, predictions, num_classes, weights)
    try:

        def counts() -> Tensor:
            predicted = ops.one_hot(pred, n, 1, 0, "float32")
            if w is not None:
                predicted = ops.mul(predicted, ops.expand_dims(w, 1))
            return ops.mat_mul(ops.one_hot(lab, n, 1, 0, "float32"), predicted, True, False)

        matrix = tidy(counts)
        values = np.asarray(matrix.data_sync(), dtype=np.float64).reshape(n, n)
        matrix.dispose()
    finally:
        for t in made:
            t.dispose()
    if w is None:
        return [[int(round(v)) for v in row] for row in values]
    return [[float(v) for v in row] for row in values]


def per_class_accuracy(labels: Any, predictions: Any, num_classes: int | None = None) -> list[dict[str, float]]:
    """One ``{'accuracy', 'count'}`` per class: the fraction of that class's labels predicted right (0 for a class
    with no label) and how many labels it has."""
    made, lab, pred, _, n = _class_inputs("per_class_accuracy", labels, predictions, num_classes)
    try:

        def per_class() -> tuple[Tensor, Tensor]:
            hot = ops.one_hot(lab, n, 1, 0, "float32")
            right = ops.cast(ops.equal(lab, pred), "float32")
            return ops.sum(hot, 0), ops.sum(ops.mul(hot, ops.expand_dims(right, 1)), 0)

        count_t, right_t = tidy(per_class)
        counts, rights = count_t.data_sync(), right_t.data_sync()
        count_t.dispose()
        right_t.dispose()
    finally:
        for t in made:
            t.dispose()
    return [
        {"accuracy": 0.0 if c == 0 else float(r) / float(c), "count": int(c)}
        for c, r in zip(counts, rights, strict=True)
    ]


def tensor_stats(tensor: Tensor) -> dict[str, float]:
    """tfjs-vis's summary of a tensor's values: ``num_vals``, ``min``, ``max``, ``num_zeros``, ``num_nans``,
    ``num_infs`` (min and max are NaN when every value is)."""
    if not isinstance(tensor, Tensor) or tensor.is_disposed:
        raise TypeError(f"nf.vis: expected a live tensor, got {type(tensor).__name__}")
    values = np.asarray(tensor.data_sync(), dtype=np.float64).ravel()
    nans = int(np.isnan(values).sum())
    infs = int(np.isinf(values).sum())
    if values.size == 0:
        return {"num_vals": 0, "num_zeros": 0, "num_nans": 0, "num_infs": 0, "min": float("nan"), "max": float("nan")}
    stats = tidy(lambda: [ops.min(tensor), ops.max(tensor), ops.sum(ops.cast(ops.equal(tensor, 0), "int32"))])
    low, high, zeros = (float(t.data_sync()[0]) for t in stats)
    for t in stats:
        t.dispose()
    if nans == values.size:
        low = high = float("nan")
    return {"num_vals": int(values.size), "num_zeros": int(zeros), "num_nans": nans, "num_infs": infs,
            "min": low, "max": high}  # fmt: skip
