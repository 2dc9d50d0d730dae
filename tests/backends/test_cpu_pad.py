"""The cpu backend's PadV2: a zeroed (or filled) output with the input copied into its interior.

It must give what ``np.pad`` gives (the kernel's previous implementation) for every dtype, constant and
padding, including -0.0 and NaN as the constant, empty inputs and tensors padded on one axis only (the
channel padding of BlazeFace's residuals).
"""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.kernels.transform import pad_constant

RNG = np.random.default_rng(5)

SHAPES = [(3,), (2, 3), (1, 4, 5, 6), (0, 3), (2, 0, 1), (1, 8, 8, 24)]


CONSTANTS = [(dtype, value) for dtype in (np.int32, np.bool_, np.complex64, object) for value in (0, 3, -0.0)]
CONSTANTS += [(np.float32, value) for value in (0, 3, -0.0, np.nan)]


@pytest.mark.parametrize("dtype,value", CONSTANTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_pad_constant_is_np_pad(dtype, value, shape):
    x = RNG.integers(-5, 5, shape).astype(dtype)
    pads = tuple((int(RNG.integers(0, 3)), int(RNG.integers(0, 3))) for _ in shape)
    want, got = np.pad(x, pads, constant_values=value), pad_constant(x, pads, value)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype is object:
        assert (got == want).all()
    else:
        np.testing.assert_array_equal(got, want)
    if dtype in (np.float32, np.complex64):
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))  # -0.0 stays -0.0


def test_pad_kernel_pads_channels_only():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x_np = RNG.standard_normal((1, 6, 5, 24)).astype(np.float32)
    try:
        x = nf.tensor(x_np)
        y = nf.pad(x, [[0, 0], [0, 0], [0, 0], [0, 4]])
        z = nf.pad(x, [[0, 0], [1, 2], [0, 0], [3, 0]], -1.5)
        np.testing.assert_array_equal(y.numpy(), np.pad(x_np, [(0, 0), (0, 0), (0, 0), (0, 4)]))
        np.testing.assert_array_equal(z.numpy(), np.pad(x_np, [(0, 0), (1, 2), (0, 0), (3, 0)], constant_values=-1.5))
        nf.dispose([x, y, z])
    finally:
        nf.set_backend(previous)
