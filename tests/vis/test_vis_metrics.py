"""nf.vis.metrics against numpy, with tfjs-vis's examples and return types, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow import vis

RNG = np.random.default_rng(1)


def _numpy_confusion(labels, predictions, n, weights=None):
    out = np.zeros((n, n))
    np.add.at(out, (labels, predictions), 1 if weights is None else weights)
    return out


def test_tfjs_vis_examples():
    labels, predictions = [0, 0, 1, 2, 2, 2], [0, 0, 0, 2, 1, 1]
    assert vis.metrics.accuracy(labels, predictions) == 0.5
    assert vis.metrics.per_class_accuracy(labels, predictions) == [
        {"accuracy": 1.0, "count": 2}, {"accuracy": 0.0, "count": 1}, {"accuracy": pytest.approx(1 / 3), "count": 3},
    ]  # fmt: skip
    labels, predictions = nf.tensor([1, 2, 4]), nf.tensor([2, 2, 4])
    result = vis.metrics.confusion_matrix(labels, predictions)
    nf.dispose([labels, predictions])
    assert result == [[0] * 5, [0, 0, 1, 0, 0], [0, 0, 1, 0, 0], [0] * 5, [0, 0, 0, 0, 1]]
    assert all(isinstance(v, int) for row in result for v in row)


@pytest.mark.parametrize("seed", range(3))
def test_against_numpy(seed):
    rng = np.random.default_rng(seed)
    n = 7
    labels, predictions = rng.integers(0, n, 200), rng.integers(0, n, 200)
    weights = rng.random(200).astype(np.float32)
    lab_t, pred_t, w_t = nf.tensor(labels, dtype="int32"), nf.tensor(predictions, dtype="int32"), nf.tensor(weights)
    try:
        assert vis.metrics.accuracy(lab_t, pred_t) == pytest.approx(np.mean(labels == predictions))
        assert np.array_equal(vis.metrics.confusion_matrix(lab_t, pred_t, n), _numpy_confusion(labels, predictions, n))
        weighted = vis.metrics.confusion_matrix(lab_t, pred_t, n, w_t)
        assert np.allclose(weighted, _numpy_confusion(labels, predictions, n, weights), atol=1e-4)
        per_class = vis.metrics.per_class_accuracy(lab_t, pred_t, n + 2)  # classes with no label: accuracy 0
        counts = np.bincount(labels, minlength=n + 2)
        rights = np.bincount(labels[labels == predictions], minlength=n + 2)
        assert [c["count"] for c in per_class] == counts.tolist()
        expected = np.divide(rights, counts, out=np.zeros(n + 2), where=counts > 0)
        assert np.allclose([c["accuracy"] for c in per_class], expected)
        assert not lab_t.is_disposed  # the caller's tensors stay
    finally:
        nf.dispose([lab_t, pred_t, w_t])


def test_accuracy_of_one_hot_rows_and_floats():
    labels = np.eye(3)[[0, 1, 2, 1]]
    predictions = np.eye(3)[[0, 1, 1, 1]]
    assert vis.metrics.accuracy(labels, predictions) == pytest.approx(np.mean(labels == predictions))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: vis.metrics.accuracy([1, 2, 3], [1, 2]), r"accuracy: labels and predictions must have the same shape"),
        (lambda: vis.metrics.accuracy([], []), "are empty"),
        (
            lambda: vis.metrics.confusion_matrix([[1]], [[1]]),
            r"confusion_matrix: labels must be a 1D tensor, got shape \[1, 1\]",
        ),
        (lambda: vis.metrics.confusion_matrix([1, 2], [1]), "must be the same length, got 2 and 1"),
        (lambda: vis.metrics.confusion_matrix([1, 2], [1, 2], weights=[1.0]), "weights must be as long"),
        (lambda: vis.metrics.confusion_matrix([0, 5], [0, 0], num_classes=3), "class index 5 is out of range"),
        (lambda: vis.metrics.confusion_matrix([0, -1], [0, 0]), "class indices must be >= 0"),
        (lambda: vis.metrics.per_class_accuracy([0, 1], [0, 1], num_classes=0), "num_classes must be a positive int"),
        (lambda: vis.metrics.per_class_accuracy(["a"], ["b"]), "expected a tensor or an array of numbers"),
    ],
)
def test_errors_are_clear_and_leak_nothing(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_a_disposed_tensor_is_an_error():
    t = nf.tensor([1, 2])
    t.dispose()
    with pytest.raises(ValueError, match="labels is a disposed tensor"):
        vis.metrics.accuracy(t, [1, 2])
