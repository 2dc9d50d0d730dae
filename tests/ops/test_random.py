"""Random ops: TF.js's argument errors and result shapes/dtypes (fixture), then statistics.

The fixture's random cases (``tests/fixtures/losses_sparse_string.json``, all seeded) are checked value for
value (``test_random_tfjs.py`` has many more); the distributions by their ranges and moments on large
samples, and seeds by reproducibility.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import _build, _tensors_in, case_ids, load_cases, resolve_op, run_case

import ndflow as nf

BEYOND_TFJS = {
    "random_gamma__alpha_zero": "TF.js returns zeros for alpha = 0 (NaN or negatives for alpha < 0); ndflow raises",
    "random_gamma__negative_beta": "TF.js returns negative 'gamma' samples for beta < 0; ndflow raises",
    "multinomial__fractional_samples": "TF.js returns a tensor of shape [2, 2.5]; ndflow raises TypeError",
}
_RANDOM_OPS = (
    "randomNormal", "randomStandardNormal", "truncatedNormal", "randomUniform", "randomUniformInt", "randomGamma",
    "multinomial", "dropout", "rand",
)  # fmt: skip
_ALL = [c for c in load_cases("losses_sparse_string", BEYOND_TFJS) if c["op"] in _RANDOM_OPS]
ERRORS = [c for c in _ALL if "error" in c or c["id"] == "dropout__rate_zero_is_identity"]
DRAWS = [c for c in _ALL if c not in ERRORS]


@pytest.mark.parametrize("case", ERRORS, ids=case_ids(ERRORS))
def test_random_op_errors_match_tfjs(case, backend):
    run_case(case)


@pytest.mark.parametrize("case", DRAWS, ids=case_ids(DRAWS))
def test_random_op_values_match_tfjs(case, backend):
    _, op = resolve_op(case)
    created: list = []
    result = None
    try:
        result = op(*_build(case["args"], created))
        (want,) = case["outputs"]
        assert tuple(result.shape) == tuple(want["shape"]) and result.dtype == want["dtype"]
        expected = np.asarray(want["values"]).astype(result.numpy().dtype).reshape(want["shape"])
        np.testing.assert_array_equal(result.numpy(), expected, strict=True)  # every case is seeded (or empty)
    finally:
        nf.dispose(created + _tensors_in(result))


def test_beyond_tfjs_random_gamma_rejects_bad_parameters(backend):
    for alpha, beta in ((0, 1), (-1, 1), (1, 0), (1, -1)):
        with pytest.raises(ValueError, match="random_gamma: arguments 'alpha' and 'beta' must be > 0"):
            nf.random_gamma([3], alpha, beta)


def test_beyond_tfjs_multinomial_fractional_samples(backend):
    with pytest.raises(TypeError, match="multinomial: argument 'num_samples' must be an int"):
        nf.multinomial([1.0, 2.0], 2.5)


def _draw(t):
    values = t.numpy().copy()
    t.dispose()
    return values


N = 200_000


# ----------------------------------------------------------------------------- distributions


@pytest.mark.parametrize("mean, std", [(0, 1), (5, 2), (-3, 0.5)])
def test_random_normal_moments(mean, std, backend):
    x = _draw(nf.random_normal([N], mean, std, "float32", 1))
    assert x.dtype == np.float32
    assert abs(x.mean() - mean) < 0.02 * std and abs(x.std() - std) < 0.02 * std


def test_random_normal_int32_rounds(backend):
    x = _draw(nf.random_normal([N], 10, 3, "int32", 2))
    assert x.dtype == np.int32 and abs(x.mean() - 10) < 0.05 and abs(x.std() - 3) < 0.05


def test_random_standard_normal(backend):
    x = _draw(nf.random_standard_normal([N, 1], None, 3))
    assert x.shape == (N, 1) and abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02


def test_truncated_normal_within_two_std(backend):
    x = _draw(nf.truncated_normal([N], 5, 2, "float32", 4))
    assert x.min() >= 1 and x.max() <= 9
    assert abs(x.mean() - 5) < 0.02 and abs(x.std() - 2 * 0.8796) < 0.02  # std of N(0,1) cut at +-2: 0.8796


def test_truncated_normal_degenerate_and_invalid(backend):
    np.testing.assert_array_equal(_draw(nf.truncated_normal([5], 3, 0)), np.full(5, 3, np.float32))
    with pytest.raises(ValueError, match="truncated_normal: argument 'std_dev' must be >= 0"):
        nf.truncated_normal([5], 0, -1)  # TF.js never returns


def test_random_uniform_range_and_moments(backend):
    x = _draw(nf.random_uniform([N], -2, 3, "float32", 5))
    assert x.min() >= -2 and x.max() < 3
    assert abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 25 / 12) < 0.03


def test_random_uniform_defaults(backend):
    x = _draw(nf.random_uniform([1000]))
    assert x.dtype == np.float32 and 0 <= x.min() and x.max() < 1


def test_random_uniform_bool_as_tfjs(backend):
    assert not _draw(nf.random_uniform([100], 0, 1, "bool", 1)).any()  # values in [0, 1) truncate to 0
    assert _draw(nf.random_uniform([100], 1, 5, "bool", 1)).all()


@pytest.mark.parametrize(
    "low, high, support, weights",
    [(0, 10, range(0, 10), [1] * 10), (0, 1, [0], [1]),
     # TF.js stores the uniform samples into an Int32Array, which truncates towards zero: below zero every
     # value moves up by one, so 0 comes twice as often and ``low`` (almost) never
     (-5, 5, range(-4, 5), [1, 1, 1, 1, 2, 1, 1, 1, 1]), (-7, -2, range(-6, -1), [1] * 5)],
)  # fmt: skip
def test_random_uniform_int_truncates_as_tfjs(low, high, support, weights, backend):
    x = _draw(nf.random_uniform_int([N], low, high, 6))
    assert x.dtype == np.int32 and x.min() == min(support) and x.max() == max(support)
    counts = np.array([(x == v).sum() for v in support])
    assert counts.sum() == N
    np.testing.assert_allclose(counts / N, np.array(weights) / sum(weights), atol=0.01)


@pytest.mark.parametrize("alpha, beta", [(2, 1), (0.5, 2), (5, 0.5)])
def test_random_gamma_moments(alpha, beta, backend):
    # TF.js multiplies its samples by ``beta`` (documented as the rate): mean alpha * beta, variance alpha * beta**2
    x = _draw(nf.random_gamma([N], alpha, beta, "float32", 7))
    assert x.min() >= 0
    assert abs(x.mean() - alpha * beta) < 0.03 * alpha * beta
    assert abs(x.var() - alpha * beta**2) < 0.06 * alpha * beta**2


def test_random_gamma_int32_and_default_beta(backend):
    # int32: TF.js rounds the normal draws it transforms too, which lifts the mean of gamma(9) to about 9.14
    x = _draw(nf.random_gamma([N], 9, None, "int32", 8))
    assert x.dtype == np.int32 and 9.05 < x.mean() < 9.25


def test_multinomial_frequencies(backend):
    logits = np.log(np.array([[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]], np.float32))
    x = _draw(nf.multinomial(logits, 50_000, 9))
    assert x.shape == (2, 50_000) and x.dtype == np.int32
    for row, probs in zip(x, np.exp(logits), strict=True):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, probs, atol=0.01)


def test_multinomial_normalized(backend):
    x = _draw(nf.multinomial([0.25, 0.0, 0.75], 40_000, 10, True))
    counts = np.bincount(x, minlength=3) / x.size
    assert counts[1] == 0 and abs(counts[0] - 0.25) < 0.01


def test_multinomial_large_batch_in_chunks(backend):
    x = _draw(nf.multinomial(np.zeros((300, 40), np.float32), 2000, 11))
    assert x.shape == (300, 2000) and x.min() == 0 and x.max() == 39


def test_dropout_statistics(backend):
    x = np.full(N, 2.0, np.float32)
    y = _draw(nf.dropout(x, 0.3, None, 12))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 2 / 0.7, rtol=1e-6)


def test_dropout_noise_shape_drops_whole_slices(backend):
    y = _draw(nf.dropout(np.ones((4, 1000), np.float32), 0.5, [1, 1000], 13))
    assert (y == y[0]).all()  # one mask shared by every row
    z = _draw(nf.dropout(np.ones((1000, 3), np.float32), 0.5, [None, 1], 13))
    assert ((z == 0).all(axis=1) | (z != 0).all(axis=1)).all()


def test_dropout_rate_zero_returns_a_new_tensor(backend):
    x = nf.tensor([1.0, 2.0])
    y = nf.dropout(x, 0)
    assert y is not x
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    nf.dispose([x, y])


def test_dropout_noise_shape_must_broadcast_to_x(backend):
    with pytest.raises(ValueError, match="dropout: noise_shape"):
        nf.dropout(np.ones((2, 3), np.float32), 0.5, [4, 2, 3])


# ----------------------------------------------------------------------------- seeds


SEEDED = {
    "random_normal": lambda s: nf.random_normal([50], 0, 1, None, s),
    "random_standard_normal": lambda s: nf.random_standard_normal([50], None, s),
    "truncated_normal": lambda s: nf.truncated_normal([50], 0, 1, None, s),
    "random_uniform": lambda s: nf.random_uniform([50], 0, 1, "float32", s),
    "random_uniform_int": lambda s: nf.random_uniform_int([50], 0, 1000, s),
    "random_gamma": lambda s: nf.random_gamma([50], 2, 1, "float32", s),
    "multinomial": lambda s: nf.multinomial(np.zeros((2, 100), np.float32), 50, s),
    "dropout": lambda s: nf.dropout(np.ones(50, np.float32), 0.5, None, s),
}


# TF.js tests these ops' seed for truthiness: 0 (or '') draws unseeded values there
_FALSY_IS_UNSEEDED = {"random_normal", "random_standard_normal", "truncated_normal", "random_gamma", "multinomial"}


@pytest.mark.parametrize("name", list(SEEDED))
@pytest.mark.parametrize("seed", [0, 42, 2**40, -3, 1.5, "abc"])
def test_same_seed_same_values(name, seed, backend):
    make = SEEDED[name]
    if seed == 0 and name in _FALSY_IS_UNSEEDED:
        assert not np.array_equal(_draw(make(seed)), _draw(make(seed)))
    else:
        np.testing.assert_array_equal(_draw(make(seed)), _draw(make(seed)))


@pytest.mark.parametrize("name", list(SEEDED))
def test_other_seed_or_no_seed_other_values(name, backend):
    make = SEEDED[name]
    assert not np.array_equal(_draw(make(1)), _draw(make(2)))
    assert not np.array_equal(_draw(make(None)), _draw(make(None)))


def test_seed_type_error(backend):
    with pytest.raises(TypeError, match="random_normal: argument 'seed'"):
        nf.random_normal([2], seed=[1])


# ----------------------------------------------------------------------------- rand and argument errors


def test_rand_calls_the_function_per_element(backend):
    counter = iter(range(100))
    x = _draw(nf.rand([2, 3], lambda: next(counter)))
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert _draw(nf.rand([3], lambda: 2.7, "int32")).tolist() == [2, 2, 2]
    assert _draw(nf.rand([2], lambda: 1, "bool")).tolist() == [True, True]


def test_rand_errors(backend):
    with pytest.raises(ValueError, match="rand: unknown dtype"):
        nf.rand([2], lambda: 1, "string")
    with pytest.raises(TypeError, match="rand: argument 'rand_function' must be callable"):
        nf.rand([2], 3)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: nf.random_normal([2], "0"), TypeError, "random_normal: argument 'mean' must be a number"),
        (lambda: nf.random_uniform([2], 0, 1, "complex64"), ValueError, "random_uniform: unsupported dtype"),
        (lambda: nf.random_gamma([2], 1, 1, "string"), ValueError, "random_gamma: unsupported dtype"),
        (lambda: nf.multinomial([1.0, 2.0], -1), ValueError, "multinomial: argument 'num_samples' must be >= 0"),
        (lambda: nf.multinomial(["a", "b"], 1), TypeError, "multinomial: argument 'logits' must be a numeric"),
        (lambda: nf.dropout([1.0], 0.5, 3), TypeError, "dropout: argument 'noise_shape'"),
        (lambda: nf.random_uniform(3.5), TypeError, "random_uniform: argument 'shape'"),
    ],
)
def test_argument_errors(call, error, match, backend):
    with pytest.raises(error, match=match):
        call()
