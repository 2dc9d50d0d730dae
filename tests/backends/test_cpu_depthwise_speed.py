"""The register-blocked 3x3 depthwise kernel (``ndflow.backends.cpu.numba._dw3_kernels``) agrees with the numpy path.

Blocks of four (stride 1) or two (stride 2) neighbouring positions share weight and input loads; the last block
of a row may overlap the one before; the other positions run one at a time (nine taps, or six at a left or right
edge), and border positions accumulate their taps inside the input. Every output sums its taps in row-major
order without fused multiply-adds, as the numpy path does, so both agree bit for bit (``assert_array_equal``
treats -0 and 0 as equal). Each case runs with the flag ``CPU_JIT`` off and on (:func:`jit_util.run_both`).
"""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba, numba_kernels, run_both  # noqa: F401 (a fixture)

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.kernels.conv import info_from_attrs
from ndflow.backends.cpu.numba import ops as jit_ops

RNG = np.random.default_rng(29)
pytestmark = pytest.mark.usefixtures("numba_kernels")  # these test numba's kernels


def _rand(shape):
    return nf.tensor(RNG.standard_normal(shape).astype(np.float32))


BLOCKED_CASES = [
    # (x shape, strides, pad, dilations): interior widths that are and are not multiples of the block,
    # left/right edges, every row on the border, batch > 1, dilations and strides without blocks
    ((1, 12, 12, 16), 1, "same", 1),
    ((2, 9, 11, 32), 1, "same", 1),
    ((1, 8, 7, 24), 1, "valid", 1),
    ((1, 6, 9, 48), 1, "valid", 1),
    ((1, 13, 13, 16), 2, "same", 1),
    ((1, 12, 16, 72), 2, "same", 1),
    ((1, 11, 10, 20), 2, "valid", 1),
    ((1, 10, 11, 33), 1, "same", 2),  # not blocked: the row kernels
    ((1, 10, 11, 17), 1, "same", (2, 1)),  # blocked, a dilation along the height only
    ((1, 10, 11, 17), (1, 2), "same", 1),
    ((1, 15, 17, 16), 3, "same", 1),  # not blocked
    ((1, 15, 17, 16), (3, 1), "same", 1),  # blocked, a stride along the height only
    ((1, 3, 3, 128), 1, "same", 1),  # every position on the border
    ((1, 6, 6, 128), 2, "same", 1),
    ((1, 2, 5, 16), 1, "same", 1),
    ((1, 1, 1, 16), 1, "same", 1),
    ((1, 5, 2, 16), 1, "same", 1),  # two columns: both edges at once
    ((1, 7, 7, 16), 1, [[0, 0], [2, 1], [1, 2], [0, 0]], 1),
]


def _route(x_shape, f_shape, strides, pad, dilations):
    attrs = {"strides": strides, "pad": pad, "dilations": dilations, "data_format": "NHWC"}
    info = info_from_attrs(x_shape, f_shape, attrs, "DepthwiseConv2dNative", depthwise=True)
    return jit_ops.depthwise_route(info, x_shape, f_shape)


@needs_numba
@pytest.mark.parametrize("case", BLOCKED_CASES, ids=lambda c: f"{c[0]}-s{c[1]}-{c[2]}-d{c[3]}")
def test_blocked_3x3_matches_numpy_bit_for_bit(case):
    shape, strides, pad, dilations = case
    x = _rand(shape)
    w = _rand((3, 3, shape[-1], 1))
    try:
        route = _route(shape, (3, 3, shape[-1], 1), strides, pad, dilations)
        blockable = route.static[3] == 1 and route.static[1] in (1, 2)  # width dilation 1, width stride 1 or 2
        assert (route.kind == jit_ops.DW3_BLOCKED) == blockable
        a, b = run_both(lambda: nf.depthwise_conv2d(x, w, strides, pad, dilations=dilations))
        np.testing.assert_array_equal(a, b)
    finally:
        nf.dispose([x, w])


@needs_numba
@pytest.mark.parametrize("activation", ["linear", "relu", "relu6", "leakyrelu", "prelu", "sigmoid", "elu"])
@pytest.mark.parametrize("strides", [1, 2])
def test_fused_blocked_3x3_epilogue_matches_numpy(activation, strides):
    x = _rand((2, 9, 14, 32))
    w = _rand((3, 3, 32, 1))
    bias = _rand((32,))
    slopes = _rand((32,)) if activation == "prelu" else None
    out_width = 14 // strides
    residual = _rand((2, 9 if strides == 1 else 5, out_width, 32)) if activation == "relu6" else None
    try:
        a, b = run_both(
            lambda: nf.fused.depthwise_conv2d(
                x=x,
                filter=w,
                strides=strides,
                pad="same",
                bias=bias,
                activation=activation,
                prelu_activation_weights=slopes,
                add=residual,
            )
        )
        scale = max(float(np.abs(a).max()), 1.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * scale)  # exp rounds differently in elu
    finally:
        nf.dispose([t for t in (x, w, bias, slopes, residual) if t is not None])


@needs_numba
def test_blocked_3x3_nchw_matches_numpy():
    x = _rand((1, 24, 10, 12))
    w = _rand((3, 3, 24, 1))
    try:
        a, b = run_both(lambda: nf.depthwise_conv2d(x, w, 1, "same", data_format="NCHW"))
        np.testing.assert_array_equal(a, b)
    finally:
        nf.dispose([x, w])


@needs_numba
def test_blocked_3x3_skips_taps_outside_the_input():
    """An infinite weight on tap (0, 0) reaches the output only where that tap reads the input."""
    x = _rand((1, 6, 9, 16))
    w_np = RNG.standard_normal((3, 3, 16, 1)).astype(np.float32)
    w_np[0, 0] = np.inf
    w = nf.tensor(w_np)
    try:
        (b,) = run_both(lambda: nf.depthwise_conv2d(x, w, 1, "same"))[1:]
        assert np.isfinite(b[0, 0, :]).all() and np.isfinite(b[0, :, 0]).all()  # tap (0, 0) in the padding
        assert not np.isfinite(b[0, 1:, 1:]).any()  # tap (0, 0) inside the input (x * inf)
    finally:
        nf.dispose([x, w])


def test_route_keeps_few_channels_on_the_row_kernels():
    """Below DW3_BLOCKED_MIN_CHANNELS the whole-row (tiled weights) and per-position kernels stay in charge."""
    few = jit_ops.DW3_BLOCKED_MIN_CHANNELS - 1
    assert _route((1, 8, 8, few), (3, 3, few, 1), 1, "same", 1).kind == jit_ops.DW3_FLAT
    assert _route((1, 8, 8, few), (3, 3, few, 1), 2, "same", 1).kind == jit_ops.DW3
    assert _route((1, 8, 8, 16), (3, 3, 16, 2), 1, "same", 1).kind != jit_ops.DW3_BLOCKED  # multiplier 2
    assert _route((1, 8, 8, 16), (5, 5, 16, 1), 1, "same", 1).kind != jit_ops.DW3_BLOCKED


@pytest.mark.parametrize("on", [False, True])
def test_depthwise_runs_with_the_jit_flag_either_way(on):
    if on and not jit.numba_available():
        pytest.skip("numba is not installed")
    previous = nf.get_backend()
    nf.set_backend("cpu")
    nf.env().set("CPU_JIT", on)
    try:
        xn = RNG.standard_normal((1, 5, 6, 16)).astype(np.float32)
        wn = RNG.standard_normal((3, 3, 16, 1)).astype(np.float32)
        x, w = nf.tensor(xn), nf.tensor(wn)
        y = nf.depthwise_conv2d(x, w, 1, "same")
        xp = np.pad(xn, ((0, 0), (1, 1), (1, 1), (0, 0))).astype(np.float64)
        want = sum(xp[:, i : i + 5, j : j + 6, :] * wn[i, j, :, 0] for i in range(3) for j in range(3))
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
        nf.dispose([x, w, y])
    finally:
        nf.env().reset()
        nf.set_backend(previous)
