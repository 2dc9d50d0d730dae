"""A channel vector broadcast against a channels-last array (``binary.apply``): run as rows of repeated channels,
the same values as numpy's broadcasting, in either operand order, for every arithmetic op that uses it."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.kernels import binary

RNG = np.random.default_rng(3)

UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum]


@pytest.mark.parametrize("fn", UFUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("big", "small"),
    [
        ((1, 192, 192, 3), (1, 1, 1, 3)),  # an image normalised per channel
        ((64, 64, 5), (5,)),
        ((2, 32, 32, 17), (1, 17)),
        ((4096, 2), (1, 2)),
    ],
)
def test_rows_of_repeated_channels_equal_numpy(fn, big, small):
    a = RNG.standard_normal(big).astype(np.float32)
    b = RNG.standard_normal(small).astype(np.float32)
    assert binary._period(a, b) >= 16  # the row form applies
    np.testing.assert_array_equal(binary.apply(fn, a, b), fn(a, b))
    np.testing.assert_array_equal(binary.apply(fn, b, a), fn(b, a))


@pytest.mark.parametrize(
    ("big", "small", "why"),
    [
        ((1, 63, 63, 3), (1, 1, 1, 3), "positions without a power-of-two factor of 16"),
        ((1, 64, 64, 64), (64,), "channels long enough for numpy"),
        ((1, 64, 64, 1), (1,), "one channel: numpy's scalar loop"),
        ((1, 64, 64, 3), (), "a scalar"),
        ((1, 8, 8, 3), (3,), "too small to repay"),
        ((1, 16, 16, 32), (32,), "too few positions for 32 channels to repay"),
        ((64, 64, 3), (64, 1, 3), "broadcast along more than the channels"),
        ((3, 64, 64), (3, 1, 1), "channels first"),
    ],
)
def test_other_broadcasts_run_as_numpy(big, small, why):
    a = RNG.standard_normal(big).astype(np.float32)
    b = RNG.standard_normal(small).astype(np.float32)
    assert binary._period(a, b) == 0, why
    np.testing.assert_array_equal(binary.apply(np.subtract, a, b), np.subtract(a, b))


def test_non_contiguous_and_mixed_dtypes_run_as_numpy():
    a = RNG.standard_normal((1, 64, 128, 3)).astype(np.float32)[:, :, ::2]
    b = RNG.standard_normal(3).astype(np.float32)
    assert binary._period(a, b) == 0
    np.testing.assert_array_equal(binary.apply(np.multiply, a, b), a * b)
    ints = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(binary.apply(np.add, a.copy(), ints), a + ints)


_OPS = ["add", "sub", "mul", "div", "maximum", "minimum", "squared_difference"]


# (TF.js divides int32 tensors with FloorDiv, which does not go through ``apply``)
@pytest.mark.parametrize(
    ("op", "dtype"), [(op, "float32") for op in _OPS] + [(op, "int32") for op in _OPS if op != "div"]
)
def test_ops_through_the_cpu_backend(op, dtype):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    a_np = (RNG.integers(1, 50, (1, 64, 64, 3)) * RNG.choice([-1, 1], (1, 64, 64, 3))).astype(dtype)
    b_np = RNG.integers(1, 9, (1, 1, 1, 3)).astype(dtype)
    a, b = nf.tensor(a_np), nf.tensor(b_np)
    try:
        got = getattr(nf, op)(a, b)
        got_reversed = getattr(nf, op)(b, a)
        f64 = np.float64
        want = {
            "add": np.add,
            "sub": np.subtract,
            "mul": np.multiply,
            "div": lambda x, y: np.divide(x, y, dtype=np.float32),
            "maximum": np.maximum,
            "minimum": np.minimum,
            "squared_difference": lambda x, y: np.square(x.astype(f64) - y.astype(f64)).astype(x.dtype),
        }[op]
        try:
            np.testing.assert_allclose(got.numpy(), want(a_np, b_np), rtol=1e-6)
            np.testing.assert_allclose(got_reversed.numpy(), want(b_np, a_np), rtol=1e-6)
        finally:
            nf.dispose([got, got_reversed])
    finally:
        nf.dispose([a, b])
        nf.set_backend(previous)
