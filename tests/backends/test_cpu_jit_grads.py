"""Compiled training gradients of the cpu backend (``numba/grads.py``): a 2-D max pool's input gradient (the numpy
path's bits exactly: ties, NaN, -inf, padding) and a 2-D convolution's filter gradient (float32-close to the numpy
path's single product; deterministic for a thread count)."""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba

import ndflow as nf
from ndflow.backends.cpu.kernels import conv as conv_kernels
from ndflow.backends.cpu.kernels import pool as pool_kernels
from ndflow.backends.cpu.numba import grads

RNG = np.random.default_rng(17)


def _numpy_max_grad(monkeypatch, x, dy, geo, last):
    with monkeypatch.context() as m:
        m.setattr(pool_kernels.jit_grads, "max_pool_grad", lambda *a: None)
        return pool_kernels.fast_max_grad(x, dy, geo, last)


@needs_numba
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize(
    ("shape", "window", "strides", "pads"),
    [
        ((3, 8, 8, 5), (2, 2), (2, 2), (0, 0)),
        ((2, 9, 7, 3), (3, 2), (3, 2), (1, 0)),
        ((2, 5, 6, 4), (2, 3), (3, 4), (0, 1)),
    ],
)
def test_max_pool_grad_has_the_numpy_paths_bits(monkeypatch, last, shape, window, strides, pads):
    x = RNG.integers(-3, 3, shape).astype(np.float32)  # many ties
    x[0, 0, :2, 0] = np.nan
    x[-1, -1, -1, -1] = -np.inf
    dims = zip(shape[1:3], window, strides, pads, strict=True)
    out = tuple(-(-(n + p) // s) if p else (n - w) // s + 1 for n, w, s, p in dims)
    dy = RNG.standard_normal((shape[0], *out, shape[3])).astype(np.float32)
    dy[0, 0, 0, 0] = np.nan
    geo = (window, strides, (1, 1), pads, out)
    if not pool_kernels._non_overlapping(geo):
        pytest.skip("overlapping windows: the numpy scatter path")
    got = grads.max_pool_grad(x, dy, geo, last)
    assert got is not None
    want = _numpy_max_grad(monkeypatch, x, dy, geo, last)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))  # bits, -0.0 and NaN included


@needs_numba
def test_max_pool_grad_split_over_threads_is_the_same(monkeypatch):
    x = RNG.standard_normal((16, 40, 40, 32)).astype(np.float32)
    dy = RNG.standard_normal((16, 20, 20, 32)).astype(np.float32)
    geo = ((2, 2), (2, 2), (1, 1), (0, 0), (20, 20))
    nf.env().set("CPU_THREADS", 2)
    try:
        two = grads.max_pool_grad(x, dy, geo, False)
    finally:
        nf.env().set("CPU_THREADS", 0)
    np.testing.assert_array_equal(two, _numpy_max_grad(monkeypatch, x, dy, geo, False))


@needs_numba
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "strides", "pad", "dilations"),
    [
        ((8, 13, 13, 32), (3, 3, 32, 64), 1, "valid", 1),
        ((4, 28, 28, 1), (3, 3, 1, 8), 1, "same", 1),
        ((3, 11, 9, 5), (3, 2, 5, 4), 2, "same", 1),
        ((2, 12, 12, 3), (3, 3, 3, 6), 1, "valid", 2),
    ],
)
def test_conv_filter_gradient_matches_the_numpy_product(monkeypatch, threads, x_shape, w_shape, strides, pad,
                                                        dilations):  # fmt: skip
    x = nf.tensor(RNG.standard_normal(x_shape).astype(np.float32))
    w = nf.tensor(RNG.standard_normal(w_shape).astype(np.float32))
    dy_like = nf.conv2d(x, w, strides, pad, "NHWC", dilations)
    dy = nf.tensor(RNG.standard_normal(dy_like.shape).astype(np.float32))

    def filter_grad():
        g = nf.grad(lambda v: nf.sum(nf.mul(nf.conv2d(x, v, strides, pad, "NHWC", dilations), dy)))(w)
        values = g.data_sync().reshape(g.shape).copy()
        g.dispose()
        return values

    calls = []
    real = grads.conv_backprop_filter
    nf.env().set("CPU_THREADS", threads)
    try:
        with monkeypatch.context() as m:
            m.setattr(conv_kernels.jit_grads, "conv_backprop_filter", lambda *a: calls.append(1) or real(*a))
            got = filter_grad()
            again = filter_grad()
        with monkeypatch.context() as m:
            m.setattr(conv_kernels.jit_grads, "conv_backprop_filter", lambda *a: None)
            want = filter_grad()
    finally:
        nf.env().set("CPU_THREADS", 0)
        nf.dispose([x, w, dy_like, dy])
    assert calls, "the compiled path did not run"
    np.testing.assert_array_equal(got, again)  # deterministic
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


@needs_numba
def test_segment_sum_has_np_add_ats_bits():
    ids = RNG.integers(-2, 40, 3000)
    values = RNG.standard_normal((3000, 24)).astype(np.float32)
    got = grads.segment_sum(ids, values, 37)
    keep = (ids >= 0) & (ids < 37)
    want = np.zeros((37, 24), np.float64)
    np.add.at(want, ids[keep], values[keep])
    np.testing.assert_array_equal(got, want)
