"""The compiled convolution paths for the hot shapes agree with the numpy paths.

The 3x3 and 5x5 depthwise kernel (every tap summed in registers; whole-row loops with period-tiled weights
for a unit width stride, per position loops otherwise, taps outside the input skipped), the blocked im2col
convolution and the sigmoid epilogue run once with the flag ``CPU_JIT`` off (numpy) and once on (numba); both
results must agree. The oracle suites check both against TF.js.
"""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba, numba_kernels, run_both  # noqa: F401 (a fixture)

import ndflow as nf
from ndflow.backends.cpu.numba import conv_blocked
from ndflow.backends.cpu.numba import ops as jit_ops

RNG = np.random.default_rng(11)
pytestmark = pytest.mark.usefixtures("numba_kernels")  # these test numba's kernels


def _close(a: np.ndarray, b: np.ndarray, atol: float = 1e-5) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    scale = max(float(np.abs(a).max()) if a.size else 0.0, 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=atol * scale)


def _rand(shape):
    return nf.tensor(RNG.standard_normal(shape).astype(np.float32))


DEPTHWISE_3X3 = [
    # (x shape, strides, pad, dilations): interior and border positions, rows too short for a full window
    ((1, 9, 9, 5), 1, "same", 1),
    ((2, 8, 7, 3), 1, "valid", 1),
    ((1, 10, 11, 4), 2, "same", 1),
    ((1, 11, 10, 4), 2, "valid", 1),
    ((1, 12, 12, 6), 1, "same", 2),
    ((1, 12, 9, 6), 1, "valid", (2, 1)),
    ((1, 7, 7, 70), 1, "same", 1),  # wide channels: per-position loops at a unit stride too
    ((1, 7, 8, 70), 2, "same", 1),
    ((1, 2, 2, 3), 1, "same", 1),  # every position on the border
    ((1, 1, 5, 3), 1, "same", 1),
    ((1, 6, 6, 3), 3, [[0, 0], [2, 1], [1, 2], [0, 0]], 1),
    ((1, 6, 6, 3), (1, 2), 1, 1),
]

# 5x5 rows longer than FLAT_ROW_MAX (the 5x5 kernel's period-tiled run; shorter rows take the generic DW_FLAT):
# weight periods of 48, 112, 336 (whole vectors), a multiple of the channels only (75), and a dilated one.
DEPTHWISE_5X5_LONG = [
    ((1, 7, 420, 24), 1, "same", 1),
    ((1, 6, 360, 28), 1, "same", 1),
    ((1, 5, 240, 42), 1, "valid", 1),
    ((2, 6, 140, 75), 1, "same", 1),
    ((1, 12, 280, 36), 1, "same", 2),
    ((1, 3, 300, 40), 1, "same", 1),  # every row on the border
]


@needs_numba
@pytest.mark.parametrize(
    "case,size", [(c, 3) for c in DEPTHWISE_3X3] + [(c, 5) for c in DEPTHWISE_3X3 + DEPTHWISE_5X5_LONG]
)
def test_depthwise_3x3_and_5x5_match_numpy(case, size):
    shape, strides, pad, dilations = case
    x = _rand(shape)
    w = _rand((size, size, shape[-1], 1))
    try:
        a, b = run_both(lambda: nf.depthwise_conv2d(x, w, strides, pad, dilations=dilations))
        np.testing.assert_array_equal(a, b)  # same taps in the same order: bit for bit
    finally:
        nf.dispose([x, w])


@needs_numba
@pytest.mark.parametrize("activation", ["relu6", "sigmoid", "linear"])
@pytest.mark.parametrize("strides", [1, 2])
@pytest.mark.parametrize("size", [3, 5])
def test_fused_depthwise_3x3_and_5x5_epilogue_matches_numpy(activation, strides, size):
    x = _rand((2, 9, 10, 7))
    w = _rand((size, size, 7, 1))
    bias = _rand((7,))
    try:
        a, b = run_both(
            lambda: nf.fused.depthwise_conv2d(
                x=x, filter=w, strides=strides, pad="same", bias=bias, activation=activation
            )
        )
        _close(a, b)
    finally:
        nf.dispose([x, w, bias])


CONV_CASES = [
    # (x shape, filter shape, strides, pad, dilations): the stems of the human models and ordinary 3x3s
    ((1, 24, 24, 3), (3, 3, 3, 8), 2, "same", 1),
    ((1, 32, 32, 3), (5, 5, 3, 6), 2, "same", 1),
    ((2, 9, 11, 4), (3, 3, 4, 5), 1, "valid", 1),
    ((1, 10, 10, 5), (3, 2, 5, 4), 1, "same", (2, 1)),
    ((1, 7, 7, 2), (3, 3, 2, 3), 3, [[0, 0], [2, 1], [1, 2], [0, 0]], 1),
    ((1, 6, 6, 0), (3, 3, 0, 4), 1, "same", 1),  # no input channels: zeros
]


@needs_numba
@pytest.mark.parametrize("block_bytes", [64, 1 << 20])  # one output row per block, and one block in all
@pytest.mark.parametrize("case", CONV_CASES)
def test_blocked_conv2d_matches_numpy(case, block_bytes, monkeypatch):
    shape, fshape, strides, pad, dilations = case
    monkeypatch.setattr(conv_blocked, "CONV_BLOCK_BYTES", block_bytes)
    x = _rand(shape)
    w = _rand(fshape)
    bias = _rand((fshape[-1],))
    try:
        _close(*run_both(lambda: nf.conv2d(x, w, strides, pad, dilations=dilations)))
        _close(
            *run_both(
                lambda: nf.fused.conv2d(
                    x=x, filter=w, strides=strides, pad=pad, dilations=dilations, bias=bias, activation="relu"
                )
            )
        )
    finally:
        nf.dispose([x, w, bias])


@needs_numba
def test_sigmoid_is_the_numpy_result():
    x = _rand((4, 33, 40))
    big = nf.tensor(np.array([-100.0, -20.0, 0.0, 20.0, 100.0, np.nan, np.inf, -np.inf] * 400, dtype=np.float32))
    try:
        for t in (x, big):
            a, b = run_both(lambda t=t: nf.sigmoid(t))
            np.testing.assert_array_equal(a, b)
    finally:
        nf.dispose([x, big])


@needs_numba
def test_fused_conv_sigmoid_epilogue_matches_numpy():
    x = _rand((1, 12, 12, 6))
    w = _rand((1, 1, 6, 17))
    bias = _rand((17,))
    try:
        a, b = run_both(lambda: nf.fused.conv2d(x=x, filter=w, strides=1, pad="valid", bias=bias, activation="sigmoid"))
        _close(a, b)
    finally:
        nf.dispose([x, w, bias])


def test_weight_periods_are_whole_vectors_and_channels():
    for channels in (1, 3, 16, 24, 28, 42, 75, 96, 144, 672, 35, 1000):
        period = jit_ops.weight_period(channels)
        assert period % channels == 0
        if channels * 16 // np.gcd(channels, 16) <= jit_ops.PERIOD_MAX:
            assert period % 16 == 0
    w2 = RNG.standard_normal((25, 24)).astype(np.float32)
    tiled = jit_ops.period_tiled(w2)
    assert tiled.shape == (25, 48) and tiled.flags.c_contiguous
    np.testing.assert_array_equal(tiled, np.tile(w2, (1, 2)))


@needs_numba
def test_depthwise_skips_taps_outside_the_input():
    """An infinite weight on a tap that only ever reads the padding leaves the output finite (TF.js skips it)."""
    x = _rand((1, 6, 7, 16))  # stride 2: the 5x5 kernel (per position inside, per tap on the border)
    w_np = RNG.standard_normal((5, 5, 16, 1)).astype(np.float32)
    w_np[0, 0] = np.inf  # tap (0, 0) reads the padding only at the top-left output
    w = nf.tensor(w_np)
    try:
        (b,) = run_both(lambda: nf.depthwise_conv2d(x, w, 2, "same"))[1:]
        assert np.isfinite(b[0, 0, 0]).all()  # its window's tap (0, 0) lies in the padding
        assert not np.isfinite(b[0, 1, 1]).all()  # this one reads the input there
    finally:
        nf.dispose([x, w])
