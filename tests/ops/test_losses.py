"""``nf.losses`` against reference results of real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/losses_sparse_string.json`` (ops ``losses.*``); regenerate them
with ``python tests/fixtures/gen_losses_sparse_string.py``. Reductions are passed as TF.js's
numbers (``Reduction.NONE`` is 0 ... ``SUM_BY_NONZERO_WEIGHTS`` 3), which ``nf.losses.Reduction``
(an ``IntEnum``) accepts.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import case_ids, load_cases, run_case

import ndflow as nf

R = nf.losses.Reduction

# Cases where ndflow deliberately differs from TF.js 4.22; each is checked below against numpy.
BEYOND_TFJS = {
    "softmax_cross_entropy__smoothing_rank1": "TF.js takes the class count from shape[1], undefined for rank-1 "
    "labels, and throws; ndflow smooths with the size of the class (last) axis",
    "softmax_cross_entropy__smoothing_rank3": "TF.js smooths rank-3 labels with shape[1] as the class count; "
    "ndflow with the size of the class (last) axis, the axis the softmax runs along",
    "absolute_difference__bool_sum": "TF.js subtracts bools into a uint8 buffer (-1 becomes 255, the sum 256); "
    "ndflow's sub of bools is int32, so |labels - predictions| sums to 2",
    "compute_weighted_loss__empty_mean": "MEAN without weights is nf.mean of the losses: for an empty tensor ndflow's "
    "mean gives NaN (0 / 0), TF.js's mean gives 0",
}
CASES = [c for c in load_cases("losses_sparse_string", BEYOND_TFJS) if c["op"].startswith("losses.")]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_loss_matches_tfjs(case, backend):
    run_case(case)


def _values(t):
    v = t.numpy()
    t.dispose()
    return v


def _softmax_ce(labels, logits, smoothing):
    classes = labels.shape[-1]
    labels = labels * (1 - smoothing) + smoothing / classes
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -(labels * log_softmax).sum(axis=-1)


def test_beyond_tfjs_softmax_cross_entropy_smoothing_rank1(backend):
    labels, logits = np.array([0, 1, 0], np.float32), np.array([1, 2, 3], np.float32)
    got = _values(nf.losses.softmax_cross_entropy(labels.tolist(), logits.tolist(), None, 0.1))
    np.testing.assert_allclose(got, _softmax_ce(labels, logits, 0.1), atol=1e-5)


def test_beyond_tfjs_softmax_cross_entropy_smoothing_rank3(backend):
    rng = np.random.default_rng(3)
    labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, (2, 2))]
    logits = rng.uniform(-3, 3, (2, 2, 3)).astype(np.float32)
    got = _values(nf.losses.softmax_cross_entropy(labels, logits, None, 0.2, R.NONE))
    np.testing.assert_allclose(got, _softmax_ce(labels, logits, 0.2), atol=1e-5)


def test_beyond_tfjs_absolute_difference_of_bools(backend):
    a, b = nf.tensor([True, False, True]), nf.tensor([True, True, False])
    y = nf.losses.absolute_difference(a, b, None, R.SUM)
    assert y.dtype == "int32" and y.numpy() == 2
    nf.dispose([a, b, y])


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # numpy's, from the Mean kernel
def test_beyond_tfjs_empty_mean_is_nf_mean(backend):
    x = nf.tensor([], [0])
    y, m = nf.losses.compute_weighted_loss(x, None, R.MEAN), nf.mean(x)
    np.testing.assert_array_equal(y.numpy(), m.numpy())
    nf.dispose([x, y, m])


# ----------------------------------------------------------------------------- Reduction and API


def test_reduction_is_tfjs_enum():
    assert [(r.name, int(r)) for r in R] == [("NONE", 0), ("MEAN", 1), ("SUM", 2), ("SUM_BY_NONZERO_WEIGHTS", 3)]
    assert "Reduction" in nf.losses.__all__


@pytest.mark.parametrize("bad", [4, -1, "mean", 1.0, True, None])
def test_unknown_reduction_raises(bad, backend):
    with pytest.raises(ValueError, match="mean_squared_error: unknown reduction"):
        nf.losses.mean_squared_error([1.0], [2.0], None, bad)


def test_default_reduction_is_sum_by_nonzero_weights(backend):
    labels, preds, w = [[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [2.0, 0.0]]
    a = nf.losses.mean_squared_error(labels, preds, w)
    b = nf.losses.mean_squared_error(labels, preds, w, R.SUM_BY_NONZERO_WEIGHTS)
    assert a.numpy() == b.numpy() == pytest.approx((1 + 2 * 9) / 2)
    nf.dispose([a, b])


def test_keyword_arguments(backend):
    y = nf.losses.huber_loss([0.0, 3.0], [0.5, 0.0], delta=1.0, reduction=R.NONE)
    np.testing.assert_allclose(y.numpy(), [0.125, 2.5])
    z = nf.losses.log_loss([1.0], [0.5], epsilon=0.0, reduction=R.SUM)
    assert z.numpy() == pytest.approx(np.log(2))
    nf.dispose([y, z])


def test_none_without_weights_returns_a_new_tensor(backend):
    x = nf.tensor([1.0, 2.0])
    y = nf.losses.compute_weighted_loss(x, None, R.NONE)
    assert y is not x
    x.dispose()
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    y.dispose()


def test_losses_leave_no_temporaries(backend):
    before = nf.memory().num_tensors
    ops = [
        lambda: nf.losses.absolute_difference([[1, 2]], [[3.0, 4]], [[1, 0]]),
        lambda: nf.losses.cosine_distance([[1.0, 0]], [[0.0, 1]], 1, 2.0, R.MEAN),
        lambda: nf.losses.hinge_loss([1, 0], [0.3, -2.0]),
        lambda: nf.losses.huber_loss([1, 0], [0.3, -2.0], [2, 3]),
        lambda: nf.losses.log_loss([1, 0], [0.3, 0.2], None, 1e-7, R.SUM),
        lambda: nf.losses.mean_squared_error([1, 0], [0.3, -2.0], 0.5),
        lambda: nf.losses.sigmoid_cross_entropy([1, 0], [0.3, -2.0], None, 0.2),
        lambda: nf.losses.softmax_cross_entropy([[1, 0]], [[0.3, -2.0]], [3.0], 0.1, R.MEAN),
        lambda: nf.losses.compute_weighted_loss([1.0, 2.0], [0.0, 1.0], R.MEAN),
    ]
    for make in ops:
        make().dispose()
    assert nf.memory().num_tensors == before


def test_errors_leave_no_temporaries(backend):
    before = nf.memory().num_tensors
    with pytest.raises(ValueError, match="cosine_distance"):
        nf.losses.cosine_distance([[1.0, 0], [0, 1]], [[0.0, 1], [1, 0]], 1, [[1.0], [2], [3]])
    with pytest.raises(ValueError, match="log_loss: the shapes"):
        nf.losses.log_loss([1.0, 0], [0.5])
    assert nf.memory().num_tensors == before


def test_argument_type_errors(backend):
    with pytest.raises(TypeError, match="huber_loss: argument 'delta'"):
        nf.losses.huber_loss([1.0], [2.0], None, "1")
    with pytest.raises(TypeError, match="softmax_cross_entropy: argument 'label_smoothing'"):
        nf.losses.softmax_cross_entropy([[1.0, 0]], [[2.0, 1]], None, None)
    with pytest.raises(TypeError, match="absolute_difference: argument 'weights' must be a numeric tensor"):
        nf.losses.absolute_difference([1.0], [2.0], ["a"])


def test_sigmoid_cross_entropy_matches_numpy_on_large_logits(backend):
    x = np.array([-80, -20, -1, 0, 1, 20, 80], np.float32)
    z = np.array([0, 1, 0, 1, 1, 0, 1], np.float32)
    got = _values(nf.losses.sigmoid_cross_entropy(z.tolist(), x.tolist(), None, 0, R.NONE))
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(got, want, atol=1e-5)
