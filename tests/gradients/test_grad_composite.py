"""Gradients of composite ops, end to end: every ``nf.losses`` function (with and without weights,
each reduction), ``log_sum_exp``, ``norm``, ``euclidean_norm``, ``moments``, ``log_sigmoid`` and
``moving_average``, checked against TF.js 4.22's gradients (``tests/fixtures/grad_composite.json``,
from ``gen_grad_composite.py``) and by central finite differences in float64 at each case's inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_cases import _get, _substitute, _wrt_paths, check_finite_differences, check_grad_case
from oracle_cases import _build, _check_output, case_ids, load_cases, resolve_op

import ndflow as nf

_NOT_EQUAL = (
    "SUM_BY_NONZERO_WEIGHTS divides by the count of non-zero weights, made with not_equal: TF.js has no "
    "NotEqual gradient and throws; ndflow treats the count as the piecewise constant it is"
)
_SOFTMAX_LABELS = (
    "TF.js's softmaxCrossEntropyWithLogits (a customGrad) gives the labels dy * (labels - softmax(logits)); "
    "the labels' gradient is -dy * log_softmax(logits), which ndflow gives (checked by finite differences)"
)
# Where ndflow's gradient deliberately differs from TF.js 4.22 (checked by finite differences).
BEYOND_TFJS = {
    **{
        f"{loss}__weights_sum_nz": _NOT_EQUAL
        for loss in (
            "absolute_difference",
            "mean_squared_error",
            "hinge_loss",
            "huber_loss",
            "log_loss",
            "sigmoid_cross_entropy",
            "softmax_cross_entropy",
            "cosine_distance",
            "compute_weighted_loss",
        )
    },
    "compute_weighted_loss__none": "without weights and reduction the losses come back unchanged: TF.js returns "
    "the input itself and its gradient throws ('y does not depend on x'); ndflow returns a copy, gradient dy",
    **{
        f"softmax_cross_entropy__{what}": _SOFTMAX_LABELS
        for what in ("none", "mean", "sum", "sum_nz", "weights_none", "weights_mean", "weights_sum")
    },
    "softmax_cross_entropy__full_weights_with_zero": _SOFTMAX_LABELS,
    "norm__complex": "through ComplexAbs: TF.js's gradient is dy * sign(re z); ndflow's is dy * re(z) / |z|, the "
    "derivative along the real part (a float32 gradient cannot hold the imaginary one)",
}
# Kernels computing in float32 whatever the storage: finite differences need a larger step.
FLOAT32_KERNELS = ("sigmoid_cross_entropy", "log_sigmoid", "log_loss", "hinge_loss")

ALL = load_cases("grad_composite")
CASES = [c for c in ALL if not c["id"].startswith("fn__") and c["id"] not in BEYOND_TFJS]
FN_CASES = [c for c in ALL if c["id"].startswith("fn__")]
FD_CASES = [c for c in ALL if not c["id"].startswith("fn__") and c["id"] != "norm__complex"]


def test_beyond_names_fixture_cases():
    ids = {c["id"] for c in ALL}
    assert set(BEYOND_TFJS) <= ids


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_gradient_matches_tfjs(case, backend):
    check_grad_case(case)


def _array(spec: dict) -> np.ndarray:
    t = spec["tensor"]
    return np.asarray([float(v) for v in t["values"]], np.float64).reshape(t["shape"])


def check_case_by_finite_differences(case: dict, eps: float = 1e-5) -> None:
    """The fixture case's op, differentiated by ndflow, against finite differences at its inputs."""
    _, op = resolve_op(case)
    paths = _wrt_paths(case["grad"]["wrt"])
    arrays = [_array(_get(case["args"], p)) for p in paths]
    dy = case["grad"].get("dy")
    created: list = []
    try:
        args = _build(case["args"], created)

        def f(*values):
            call_args = [list(a) if isinstance(a, list) else a for a in args]
            for p, v in zip(paths, values, strict=True):
                _substitute(call_args, p, v)
            out = op(*call_args)
            if isinstance(out, list | tuple):
                nf.dispose(list(out[1:]))
                out = out[0]
            return out

        check_finite_differences(f, arrays, None if dy is None else _array(dy), eps=eps)
    finally:
        nf.dispose(created)


@pytest.mark.parametrize("case", FD_CASES, ids=case_ids(FD_CASES))
def test_gradient_by_finite_differences(case):
    """Every case (those beyond TF.js included) at its fixture inputs, away from kinks."""
    check_case_by_finite_differences(case, 1e-3 if case["id"].startswith(FLOAT32_KERNELS) else 1e-5)


def test_complex_norm_gradient_is_the_real_part_derivative():
    case = next(c for c in ALL if c["id"] == "norm__complex")
    values = np.asarray(case["args"][0]["tensor"]["values"], np.float64)
    z_np = values[0::2] + 1j * values[1::2]
    dy = _array(case["grad"]["dy"])
    created: list = []
    g = None
    try:
        z, dy_t = _build(case["args"][0], created), _build(case["grad"]["dy"], created)
        g = nf.grad(lambda t: nf.norm(t, 1))(z, dy_t)
        np.testing.assert_allclose(g.numpy(), dy * z_np.real / np.abs(z_np), rtol=1e-5)
    finally:
        nf.dispose(created + ([g] if g is not None else []))


def test_sum_by_nonzero_weights_count_is_constant():
    """The gradient with respect to a zero weight is its loss over the non-zero count (no jump term)."""
    labels, preds = nf.tensor([0.0, 1.0, 2.0]), nf.tensor([1.0, 1.5, 0.0])
    w = nf.tensor([1.0, 0.0, 2.0])
    (gw,) = nf.grads(lambda t: nf.losses.mean_squared_error(labels, preds, t))([w])
    np.testing.assert_allclose(gw.numpy(), np.array([1.0, 0.25, 4.0]) / 2, rtol=1e-6)
    nf.dispose([labels, preds, w, gw])


# ----------------------------------------------------------------------------- fn cases


def _moments_both(x):
    m = nf.moments(x, [0, 2], True)
    return nf.add(m.mean, m.variance.mul(3))


FN = {
    "fn__moments_variance": lambda x: nf.moments(x, 1).variance,
    "fn__moments_variance_all": lambda x: nf.moments(x).variance,
    "fn__moments_both_keep_dims": _moments_both,
    "fn__grad2_mean_squared_error": lambda x, y: nf.grad(lambda p: nf.losses.mean_squared_error(y, p.square()))(x),
    "fn__grad2_huber": lambda x, y: nf.grad(lambda p: nf.losses.huber_loss(y, p.mul(p), None, 0.7))(x),
}


def test_every_fn_case_is_mapped():
    assert {c["id"] for c in FN_CASES} == set(FN)


@pytest.mark.parametrize("case", FN_CASES, ids=case_ids(FN_CASES))
def test_fn_case_matches_tfjs(case, backend):
    fn = FN[case["id"]]
    created: list = []
    results: list = []
    try:
        args = _build(case["args"], created)
        results.append(nf.tidy(lambda: fn(*args)))
        _check_output(case["id"], 0, results[0], case["outputs"][0])
        if "grad" in case:
            paths = _wrt_paths(case["grad"]["wrt"])
            dy = _build(case["grad"]["dy"], created)
            results += nf.grads(fn)([_get(args, p) for p in paths], dy)
            for k, exp in enumerate(case["grads"]):
                _check_output(f"{case['id']} gradient", k, results[1 + k], exp)
    finally:
        nf.dispose(created + results)


@pytest.mark.parametrize("case", FN_CASES, ids=case_ids(FN_CASES))
def test_fn_case_by_finite_differences(case):
    fn = FN[case["id"]]
    check_finite_differences(lambda *xs: nf.tidy(lambda: fn(*xs)), [_array(a) for a in case["args"]])
