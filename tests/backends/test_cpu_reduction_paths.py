"""The cpu reductions' faster forms give the values of the plain ones: Max/Min over one middle axis with a short
inner size (reduced as the first axis of a contiguous copy), ArgMax/ArgMin without NaN (no masking pass), a
softmax over a short last axis (column by column)."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.kernels import activation, reduction

RNG = np.random.default_rng(17)


@pytest.fixture
def cpu():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    yield
    nf.set_backend(previous)


def _with_specials(shape, dtype):
    if dtype == "int32":
        return RNG.integers(-1000, 1000, shape).astype(np.int32)
    v = RNG.standard_normal(shape).astype(np.float32)
    flat = v.reshape(-1)
    flat[RNG.choice(flat.size, 40, replace=False)] = np.nan
    flat[RNG.choice(flat.size, 40, replace=False)] = -0.0
    flat[RNG.choice(flat.size, 40, replace=False)] = 0.0
    flat[RNG.choice(flat.size, 10, replace=False)] = np.inf
    return v


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(
    ("shape", "axis"), [((56, 56, 6, 17), 2), ((20, 30, 7, 3), -2), ((8, 100, 9), 1), ((16, 16, 5, 80), 2)]
)
@pytest.mark.parametrize("keep", [False, True])
def test_middle_axis_extremes_equal_numpy(cpu, op, dtype, shape, axis, keep):
    values = _with_specials(shape, dtype)
    fn = np.maximum if op == "max" else np.minimum
    inner = int(np.prod(shape[axis % len(shape) + 1 :]))
    assert (inner < reduction._SHORT_INNER) == (shape != (16, 16, 5, 80))  # the copy applies, but for the last
    x = nf.tensor(values)
    try:
        got = getattr(nf, op)(x, axis, keep)
        try:
            want = fn.reduce(values, axis=axis, keepdims=keep)
            assert tuple(got.shape) == want.shape
            np.testing.assert_array_equal(got.numpy(), want)
            assert np.signbit(got.numpy()).tolist() == np.signbit(want).tolist()
        finally:
            got.dispose()
    finally:
        x.dispose()


def _tfjs_arg(values: np.ndarray, axis: int, better) -> np.ndarray:
    """TF.js's loop: the first value stays unless a later one is strictly better; NaN never wins, but a leading
    NaN is never beaten."""
    moved = np.moveaxis(values, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    result = np.zeros(flat.shape[0], np.int32)
    for r, row in enumerate(flat):
        best, at = row[0], 0
        for i in range(1, row.size):
            if better(row[i], best):
                best, at = row[i], i
        result[r] = at
    return result.reshape(moved.shape[:-1])


@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
@pytest.mark.parametrize("nans", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_extremes_with_and_without_nan(cpu, op, nans, axis):
    values = RNG.integers(-5, 5, (40, 30)).astype(np.float32)  # ties: the first one wins
    if nans:
        values[RNG.integers(0, 40, 25), RNG.integers(0, 30, 25)] = np.nan
        values[0, 3] = np.nan  # a leading NaN along axis 0
    better = (lambda a, b: a > b) if op == "arg_max" else (lambda a, b: a < b)
    x = nf.tensor(values)
    try:
        got = getattr(nf, op)(x, axis)
        try:
            np.testing.assert_array_equal(got.numpy(), _tfjs_arg(values, axis, better))
        finally:
            got.dispose()
    finally:
        x.dispose()


@pytest.mark.parametrize("n", [2, 3, 5, 7, 8])
def test_a_softmax_over_a_short_last_axis_is_the_plain_one(cpu, n, monkeypatch):
    """Up to 7 values the columns are combined element-wise (numpy sums that few in order: the same bits),
    NaN and infinities as the plain form gives them; from 8 the plain form runs."""
    ran = []
    short = activation._short_softmax
    monkeypatch.setattr(activation, "_short_softmax", lambda v, k: ran.append(k) or short(v, k))
    v = RNG.standard_normal((3, 400, n)).astype(np.float32) * 6
    v[1, 0, 0], v[1, 1, :], v[1, 2, -1] = np.nan, -np.inf, np.inf
    with np.errstate(invalid="ignore"):
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        plain = e / e.sum(axis=-1, keepdims=True)
    t = nf.tensor(v)
    got = nf.softmax(t)
    try:
        np.testing.assert_array_equal(got.numpy(), plain)
        assert ran == ([n] if n <= 7 else [])
    finally:
        nf.dispose([t, got])
