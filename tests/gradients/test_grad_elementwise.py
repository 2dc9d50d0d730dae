"""Gradients of the element-wise, activation, reduction, scan and segment kernels
(``ndflow/gradients/elementwise.py``, ``activation.py``, ``scan.py``), checked two ways: against
TF.js 4.22's own gradients (``tests/fixtures/grad_elementwise.json``, from
``gen_grad_elementwise.py``) and against central finite differences in float64, at each fixture
case's inputs (kinks left out) and for the higher-order gradients TF.js cannot take.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_cases import _get, _substitute, _wrt_paths, check_finite_differences, check_grad_case
from oracle_cases import _build, _check_output, case_ids, load_cases, resolve_op

import ndflow as nf

_CUMSUM_AXIS = "TF.js's Cumsum gradient transposes its result when the axis is not the last one (wrong shape, or "
"wrong values for a square tensor); ndflow runs the reversed scan on the axis itself"

# Where ndflow's gradient deliberately differs from TF.js 4.22 (checked by finite differences).
BEYOND_TFJS = {
    "prelu__alpha_bigger": "alpha broadcasts x: TF.js keeps dx in the output's shape and throws; ndflow sums it back",
    "prod__negative_axis": "TF.js's Prod gradient transposes with the negative axis and throws; ndflow normalizes it",
    "unsorted_segment_sum__id_too_large": "ids >= num_segments are dropped by the op: TF.js's gradient gathers "
    "them and throws, ndflow gives them 0",
    **{
        f"cumsum__rank{r}_axis{a}{e}{v}": _CUMSUM_AXIS
        for r, a in ((2, 0), (3, 1))
        for e in ("", "_exclusive")
        for v in ("", "_reverse")
    },
    "cumsum__square_axis0": _CUMSUM_AXIS,
    **{
        f"cumprod__rank{r}_axis{a}{e}{v}": "TF.js has no Cumprod gradient; ndflow's is exact with zeros too"
        for r, a in ((1, 0), (2, 1), (2, 0))
        for e in ("", "_exclusive")
        for v in ("", "_reverse")
    },
    "cumprod__zeros": "TF.js has no Cumprod gradient; ndflow's needs no division, so zeros are exact",
    "cumprod__zeros_reverse_exclusive": "TF.js has no Cumprod gradient; ndflow's needs no division",
}
# Cases at a kink or a jump, or piecewise constant: checked against TF.js only, no finite differences.
NOT_SMOOTH = {
    "sign__basic",
    "step__basic",
    "clip_by_value__at_bounds",
    "elu__zero",
    "selu__zero",
    "leaky_relu__zero",
    "relu6__edges",
    "erf__zero",
    "is_nan__basic",
    "is_inf__basic",
    "is_finite__basic",
    "arg_min__rows",
    "arg_min__axis0",
}
# Kernels that compute in float32 whatever the storage (so finite differences need a larger step).
FLOAT32_KERNELS = ("add_n", "leaky_relu", "prelu", "cumsum", "cumprod", "unsorted_segment_sum", "softplus")

ALL = load_cases("grad_elementwise")
CASES = [c for c in ALL if not c["id"].startswith("fn__") and c["id"] not in BEYOND_TFJS]
FN_CASES = [c for c in ALL if c["id"].startswith("fn__")]
BEYOND_CASES = [c for c in ALL if c["id"] in BEYOND_TFJS]
SMOOTH_CASES = [c for c in ALL if not c["id"].startswith("fn__") and c["id"] not in NOT_SMOOTH]


def test_beyond_and_not_smooth_name_fixture_cases():
    ids = {c["id"] for c in ALL}
    assert set(BEYOND_TFJS) <= ids and NOT_SMOOTH <= ids
    for c in BEYOND_CASES:  # the fixture records TF.js's failure (or its differing gradient)
        assert "grad_error" in c or "grads" in c


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
            return out[0] if isinstance(out, list | tuple) else out

        check_finite_differences(f, arrays, None if dy is None else _array(dy), eps=eps)
    finally:
        nf.dispose(created)


@pytest.mark.parametrize("case", SMOOTH_CASES, ids=case_ids(SMOOTH_CASES))
def test_gradient_by_finite_differences(case):
    eps = 1e-3 if case["id"].startswith(FLOAT32_KERNELS) else 1e-5
    check_case_by_finite_differences(case, eps)


def test_piecewise_constant_gradients_are_zero():
    x = nf.tensor([-2.5, -0.5, 0.0, 0.4, 1.5, 3.0])
    for f in (nf.ceil, nf.floor, nf.round, nf.sign, nf.step, nf.is_nan, nf.is_inf, nf.is_finite):
        g = nf.grad(f)(x)
        assert g.dtype == "float32" and g.shape == x.shape and not np.any(g.numpy()), f.__name__
        g.dispose()
    x.dispose()


def test_add_n_gradients_are_distinct_tensors():
    a, b = nf.tensor([1.0, 2.0]), nf.tensor([3.0, 4.0])
    ga, gb = nf.grads(lambda p, q: nf.add_n([p, q, p]))([a, b])
    np.testing.assert_allclose(ga.numpy(), [2, 2])
    np.testing.assert_allclose(gb.numpy(), [1, 1])
    assert ga is not gb
    nf.dispose([a, b, ga, gb])


# ----------------------------------------------------------------------------- beyond TF.js


@pytest.mark.parametrize("case", BEYOND_CASES, ids=case_ids(BEYOND_CASES))
def test_beyond_tfjs_by_finite_differences(case, backend):
    eps = 1e-3 if case["id"].startswith(FLOAT32_KERNELS) else 1e-5
    check_case_by_finite_differences(case, eps)


def test_cumprod_gradient_with_zeros_matches_numpy():
    """Exact values where x holds zeros (one, two, adjacent), every exclusive/reverse combination."""
    rng = np.random.default_rng(3)
    x = np.array([[1.5, 0.0, 2.0, -1.0, 0.0, 0.5, 3.0], [0.0, 0.0, 2.0, 1.0, -2.0, 0.5, 1.0]])
    dy = rng.standard_normal(x.shape)
    for exclusive in (False, True):
        for reverse in (False, True):
            want = np.zeros_like(x)
            for row in range(2):
                for k in range(7):  # d/dx_k of sum(dy * cumprod(x)), term by term
                    for i in range(7):
                        idx = range(i) if exclusive else range(i + 1)
                        if reverse:
                            idx = range(i + 1, 7) if exclusive else range(i, 7)
                        if k in idx:
                            want[row, k] += dy[row, i] * np.prod([x[row, j] for j in idx if j != k])
            xt, dyt = nf.tensor(x), nf.tensor(dy)
            g = nf.grad(lambda t, e=exclusive, r=reverse: nf.cumprod(t, 1, e, r))(xt, dyt)
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)
            nf.dispose([xt, dyt, g])


def test_unsorted_segment_sum_with_2d_ids_by_finite_differences():
    """Segment ids of rank 2 (TF.js's op refuses them; ndflow's takes any prefix of x's shape)."""
    rng = np.random.default_rng(4)
    ids = nf.tensor([[0, 2], [2, -1]], dtype="int32")
    check_finite_differences(lambda x: nf.unsorted_segment_sum(x, ids, 3), [rng.standard_normal((2, 2, 3))], eps=1e-3)
    ids.dispose()


def test_complex_abs_gradient_is_the_real_part_derivative():
    """Beyond TF.js (which gives dy * sign(re z)): dy * re(z) / |z|, the derivative along re(z)."""
    re = np.array([0.6, -1.2, 0.0, 2.0])
    im = np.array([0.8, 0.5, -1.0, 0.0])
    r, i = nf.tensor(re), nf.tensor(im)
    z = nf.complex(r, i)
    g = nf.grad(lambda t: nf.norm(t, 1))(z)  # norm ord 1: sum(|z|) through ComplexAbs
    assert g.dtype == "float32" and g.shape == (4,)
    eps = 1e-3
    numeric = (np.abs((re + eps) + 1j * im) - np.abs((re - eps) + 1j * im)) / (2 * eps)
    np.testing.assert_allclose(g.numpy(), numeric, atol=1e-4)
    nf.dispose([r, i, z, g])


# ----------------------------------------------------------------------------- higher order


def _grad2(f):
    return lambda x: nf.grad(nf.grad(f))(x)


def _grad2_atan2(x, y):
    da, db = nf.grads(lambda a, b: nf.grad(lambda t: nf.atan2(t, b).sum())(a))([x, y])
    da.dispose()
    return db


FN = {
    "fn__grad2_sin": _grad2(nf.sin),
    "fn__grad2_tan": _grad2(nf.tan),
    "fn__grad2_atan": _grad2(nf.atan),
    "fn__grad2_asinh": _grad2(nf.asinh),
    "fn__grad2_acos": _grad2(nf.acos),
    "fn__grad2_erf": _grad2(nf.erf),
    "fn__grad2_reciprocal": _grad2(nf.reciprocal),
    "fn__grad2_log1p": _grad2(nf.log1p),
    "fn__grad2_softplus": _grad2(nf.softplus),
    "fn__grad2_atan2": _grad2_atan2,
    "fn__grad2_cumsum": _grad2(lambda x: nf.cumsum(x).square().sum()),
}


def test_every_fn_case_is_mapped():
    assert {c["id"] for c in FN_CASES} == set(FN)


@pytest.mark.parametrize("case", FN_CASES, ids=case_ids(FN_CASES))
def test_higher_order_matches_tfjs(case, backend):
    created: list = []
    out = None
    try:
        args = _build(case["args"], created)
        out = FN[case["id"]](*args)
        _check_output(case["id"], 0, out, case["outputs"][0])
    finally:
        nf.dispose(created + ([out] if out is not None else []))


@pytest.mark.parametrize("name", sorted(FN))
def test_higher_order_by_finite_differences(name):
    case = next(c for c in FN_CASES if c["id"] == name)
    arrays = [_array(a) for a in case["args"]]
    check_finite_differences(FN[name], arrays, eps=1e-3 if ("cumsum" in name or "softplus" in name) else 1e-5)


# Second-order gradients that TF.js cannot take: its EluGrad kernel has no gradient ("Cannot
# compute gradient of y=f(x)"), selu's uses greater() (no gradient registered), and prod's uses
# cumprod (no gradient). ndflow writes them with differentiable ops.
SECOND_BEYOND = {
    "elu": (lambda x: nf.grad(nf.elu)(x), np.array([-1.5, -0.3, 0.4, 2.0])),
    "selu": (lambda x: nf.grad(nf.selu)(x), np.array([-1.5, -0.3, 0.4, 2.0])),
    "prod": (lambda x: nf.grad(lambda t: nf.prod(t).square())(x), np.array([0.7, 1.3, -0.9, 1.1])),
    "prod_axis_with_zero": (
        lambda x: nf.grad(lambda t: nf.prod(t, 1).square().sum())(x),
        np.array([[0.7, 0.0, 2.0], [1.5, -0.5, 0.3]]),
    ),
    "cumprod": (
        lambda x: nf.grad(lambda t: nf.cumprod(t, 0, False, True).square().sum())(x),
        np.array([0.7, 0.0, -0.9, 1.1, 1.2]),
    ),
    "prelu": (
        lambda x: nf.grads(lambda a, b: nf.prelu(a, b).square().sum())([x, nf.scalar(0.3)])[0],
        np.array([-1.5, -0.3, 0.4, 2.0]),
    ),
    "atan2_wrt_both": (lambda x: nf.grad(lambda t: nf.atan2(t, nf.square(t) + 1).sum())(x), np.array([-1.5, 0.4, 2.0])),
    "unsorted_segment_sum": (
        lambda x: nf.grad(
            lambda t: nf.unsorted_segment_sum(t.square(), nf.tensor([1, 0, 1], dtype="int32"), 2).square().sum()
        )(x),
        np.array([0.5, -1.0, 2.0]),
    ),
}


@pytest.mark.parametrize("name", sorted(SECOND_BEYOND))
def test_second_order_beyond_tfjs(name):
    fn, x = SECOND_BEYOND[name]
    eps = 1e-3 if name.startswith(("cumprod", "prod", "prelu", "unsorted")) else 1e-5
    check_finite_differences(lambda t: nf.tidy(lambda: fn(t)), [x], eps=eps)
