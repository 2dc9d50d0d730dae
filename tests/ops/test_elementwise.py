"""Element-wise math, activations and logic against real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/elementwise.json``; regenerate them with
``python tests/fixtures/gen_elementwise.py`` (needs Node and ``../shared/oracle``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from oracle_cases import _build, _check_output, case_ids, load_cases, run_case

import ndflow as nf
from ndflow.core.engine import ENGINE

# Where ndflow deliberately differs from TF.js 4.22: none in this family so far.
BEYOND_TFJS: dict[str, str] = {}
CASES = load_cases("elementwise", BEYOND_TFJS)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_elementwise_matches_tfjs(case, backend):
    run_case(case)


GRAD_CASES = [c for c in CASES if "grads" in c]


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_ids(GRAD_CASES))
def test_elu_grad_kernel_matches_tfjs_gradient(case, backend):
    """TF.js's gradient of elu is the kernel EluGrad(dy, y) with y = elu(x)."""
    created: list = []
    (x,) = _build(case["args"], created)
    dy = _build(case["grad"]["dy"], created)
    y = nf.elu(x)
    dx = ENGINE.run_kernel("EluGrad", (dy, y), None)
    try:
        _check_output(case["id"], 0, dx, case["grads"][0])
    finally:
        nf.dispose([*created, y, dx])


def test_elu_grad_kernel_reads_shared_buffers(backend):
    y = nf.tensor([[-0.5, 0.0], [1.0, -0.9]])
    flat = nf.tensor([1.0, 2.0, 3.0, 4.0])
    dy = nf.reshape(flat, [2, 2])
    dx = ENGINE.run_kernel("EluGrad", (dy, y), None)
    np.testing.assert_allclose(dx.numpy(), [[0.5, 2.0], [3.0, 0.4]], atol=1e-6)
    assert dx.dtype == "float32"
    nf.dispose([y, flat, dy, dx])


CHAINED = [
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "ceil", "floor",
    "round", "sign", "reciprocal", "expm1", "log1p", "erf", "is_nan", "is_inf", "is_finite", "elu", "selu",
    "relu6", "softplus", "log_sigmoid",
]  # fmt: skip


@pytest.mark.parametrize("name", CHAINED)
def test_chained_unary_method(backend, name):
    x = nf.tensor([0.25, 0.75])
    a, b = getattr(x, name)(), getattr(nf, name)(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    nf.dispose([x, a, b])


def test_chained_methods_with_arguments(backend):
    x = nf.tensor([-1.0, 0.5, 2.0])
    b = nf.tensor([True, False, True])
    results = [
        x.step(0.5), x.clip_by_value(0, 1), x.leaky_relu(0.1), x.prelu(0.5), x.atan2(x),
        x.div_no_nan(x), b.logical_and(b), b.logical_or(b), b.logical_xor(b), b.logical_not(),
    ]  # fmt: skip
    np.testing.assert_allclose(results[0].numpy(), [0.5, 1, 1])
    np.testing.assert_allclose(results[1].numpy(), [0, 0.5, 1])
    np.testing.assert_allclose(results[2].numpy(), [-0.1, 0.5, 2], rtol=1e-6)
    np.testing.assert_array_equal(results[-1].numpy(), [False, True, False])
    nf.dispose([x, b, *results])
    for name in ("add_n", "bitwise_and"):  # not methods in TF.js's chain API
        assert not hasattr(nf.Tensor, name)


def test_round_is_bankers_rounding(backend):
    v = np.arange(-5.5, 6, 1, dtype=np.float32)
    x = nf.tensor(v)
    y = nf.round(x)
    np.testing.assert_array_equal(y.numpy(), np.rint(v))
    nf.dispose([x, y])


def test_erf_accuracy_against_series(backend):
    """erf is TF.js's Abramowitz-Stegun approximation: within 2e-7 of the true function."""
    v = np.linspace(-4, 4, 801, dtype=np.float32)
    x = nf.tensor(v)
    y = nf.erf(x)
    true = np.array([math.erf(float(t)) for t in v])  # a reference, not the kernel: a loop is fine
    assert np.max(np.abs(y.numpy() - true)) < 2e-7
    nf.dispose([x, y])


def test_clip_by_value_equal_bounds_fills_nan_too(backend):
    x = nf.tensor([1.0, float("nan")])
    y = nf.clip_by_value(x, 3, 3)
    np.testing.assert_array_equal(y.numpy(), [3, 3])
    nf.dispose([x, y])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: nf.step(x, "a"), "step: argument 'alpha' must be a number"),
        (lambda x: nf.leaky_relu(x, None), "leaky_relu: argument 'alpha' must be a number"),
        (lambda x: nf.clip_by_value(x, "0", 1), "clip_by_value: argument 'clip_value_min' must be a number"),
        (lambda x: nf.clip_by_value(x, 0, True), "clip_by_value: argument 'clip_value_max' must be a number"),
        (lambda x: nf.add_n(x), "add_n: argument 'tensors' must be a list"),
        (lambda x: nf.erf([True]), "erf: argument 'x' must be an int32 or float32 tensor"),
    ],
)
def test_argument_errors(backend, call, message):
    x = nf.tensor([1.0, -1.0])
    before = nf.memory().num_tensors
    with pytest.raises((TypeError, ValueError), match=message):
        call(x)
    assert nf.memory().num_tensors == before
    x.dispose()


def test_ops_leave_no_temporaries(backend):
    x = nf.tensor([-1.0, 0.0, 2.0])
    before = nf.memory().num_tensors
    outs = [
        nf.log_sigmoid(x), nf.div_no_nan(x, 0), nf.erf([1, 2]), nf.add_n([[1, 2], [3, 4]]),
        nf.logical_and([1, 0], [1, 1]), nf.atan2(1, x), nf.prelu(x, 0.5), nf.clip_by_value([1, 2], 0, 0),
    ]  # fmt: skip
    assert nf.memory().num_tensors == before + len(outs)
    nf.dispose([x, *outs])


def test_int32_results_wrap_as_js_typed_arrays(backend):
    x = nf.tensor([25, 31], dtype="int32")
    y = nf.expm1(x)
    want = np.floor(np.expm1(np.array([25, 31], np.float64)))
    np.testing.assert_array_equal(y.numpy(), (np.fmod(want, 2**32).astype(np.int64)).astype(np.int32))
    nf.dispose([x, y])


def test_large_inputs_are_vectorised(backend):
    """A million elements run in numpy (no per-element Python)."""
    x = nf.tensor(np.linspace(-3, 3, 1_000_000, dtype=np.float32))
    start = time.perf_counter()
    outs = [nf.erf(x), nf.softplus(x), nf.selu(x), nf.sign(x), nf.step(x, 0.1), nf.is_finite(x)]
    assert time.perf_counter() - start < 2.0
    nf.dispose([x, *outs])
