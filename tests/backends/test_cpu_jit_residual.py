"""Fused convolutions with a residual input (``nf.fused.conv2d(..., add=r)``): ``act(conv + bias + r)``.

Checked against the unfused ops (conv, add, add, activation) on cpu with the JIT off and on, and on
every other registered backend (torch, webgpu) the tests can reach.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu import numba as jit

RNG = np.random.default_rng(11)

CASES = [
    # (depthwise, x shape, filter shape, strides, pad, activation, bias, data_format)
    (False, (1, 8, 8, 3), (3, 3, 3, 4), 1, "same", "relu", True, "NHWC"),
    (False, (2, 7, 9, 4), (1, 1, 4, 6), 1, "valid", "prelu", True, "NHWC"),
    (False, (1, 9, 9, 2), (3, 3, 2, 5), 2, "same", "linear", False, "NHWC"),
    (False, (1, 3, 8, 8), (3, 3, 3, 4), 1, "same", "relu6", True, "NCHW"),
    (True, (1, 9, 9, 5), (3, 3, 5, 1), 1, "same", "relu", True, "NHWC"),
    (True, (1, 10, 11, 4), (3, 3, 4, 1), 2, "same", "prelu", True, "NHWC"),
    (True, (2, 8, 7, 3), (3, 3, 3, 2), 1, "valid", "sigmoid", False, "NHWC"),
    (True, (1, 12, 12, 6), (5, 5, 6, 1), 1, [[0, 0], [1, 3], [2, 2], [0, 0]], "elu", True, "NHWC"),
]


def _activate(v: np.ndarray, activation: str, slopes: np.ndarray | None) -> np.ndarray:
    if activation == "relu":
        return np.maximum(v, 0)
    if activation == "relu6":
        return np.clip(v, 0, 6)
    if activation == "prelu":
        return np.where(v < 0, v * slopes, v)
    if activation == "sigmoid":
        return 1 / (1 + np.exp(-v))
    if activation == "elu":
        return np.where(v < 0, np.expm1(v), v)
    return v


def _backends() -> list[str]:
    names = ["cpu-numpy"]
    if jit.numba_available():
        names.append("cpu-jit")
    names += [n for n in ("torch", "webgpu") if nf.find_backend(n) is not None]
    return names


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_fused_conv_residual(backend, case):
    depthwise, x_shape, f_shape, strides, pad, activation, with_bias, data_format = case
    previous = nf.get_backend()
    nf.set_backend("cpu" if backend.startswith("cpu") else backend)
    nf.env().set("CPU_JIT", backend == "cpu-jit")
    try:
        x = nf.tensor(RNG.standard_normal(x_shape).astype(np.float32))
        f = nf.tensor(RNG.standard_normal(f_shape).astype(np.float32))
        out_channels = f_shape[2] * f_shape[3] if depthwise else f_shape[3]
        b_np = RNG.standard_normal(out_channels).astype(np.float32)
        slopes_np = RNG.uniform(0.05, 0.5, out_channels).astype(np.float32)
        plain = nf.depthwise_conv2d if depthwise else nf.conv2d
        conv = plain(x, f, strides, pad, data_format)
        base = conv.numpy().astype(np.float64)
        r_np = RNG.standard_normal(conv.shape).astype(np.float32)
        nf.dispose(conv)
        r = nf.tensor(r_np)
        bias = nf.tensor(b_np) if with_bias else None
        slopes = nf.tensor(slopes_np) if activation == "prelu" else None
        run = nf.fused.depthwise_conv2d if depthwise else nf.fused.conv2d
        y = run(x=x, filter=f, strides=strides, pad=pad, data_format=data_format, bias=bias,
                activation=activation, prelu_activation_weights=slopes, add=r)  # fmt: skip
        got = y.numpy()
        channel_axis = (1, -1, 1, 1) if data_format == "NCHW" else (1, 1, 1, -1)
        pre = base + (b_np.reshape(channel_axis) if with_bias else 0) + r_np
        want = _activate(pre, activation, slopes_np.reshape(channel_axis))
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert not np.array_equal(got, _activate(pre - r_np, activation, slopes_np.reshape(channel_axis)))
        nf.dispose([t for t in (x, f, r, bias, slopes, y) if t is not None])
    finally:
        nf.env().reset()
        nf.set_backend(previous)


def test_residual_shape_must_match():
    nf.set_backend("cpu")
    x = nf.ones([1, 4, 4, 2])
    f = nf.ones([3, 3, 2, 3])
    r = nf.ones([1, 4, 4, 1])  # broadcasts, but the residual must have the output's shape
    with pytest.raises(ValueError, match=r"fused.conv2d: argument 'add'"):
        nf.fused.conv2d(x=x, filter=f, strides=1, pad="same", add=r)
    nf.dispose([x, f, r])


def test_residual_unbatched_input():
    nf.set_backend("cpu")
    x = nf.tensor(RNG.standard_normal((5, 5, 2)).astype(np.float32))
    f = nf.tensor(RNG.standard_normal((3, 3, 2, 1)).astype(np.float32))
    r = nf.tensor(RNG.standard_normal((5, 5, 2)).astype(np.float32))
    y = nf.fused.depthwise_conv2d(x=x, filter=f, strides=1, pad="same", add=r)
    plain = nf.depthwise_conv2d(x, f, 1, "same")
    np.testing.assert_allclose(y.numpy(), plain.numpy() + r.numpy(), rtol=1e-5, atol=1e-5)
    nf.dispose([x, f, r, y, plain])


def test_conv_geometry_is_cached_and_still_checked(monkeypatch):
    from ndflow.core import conv_util
    from ndflow.ops import conv as conv_ops

    conv_ops._cached_geometry.cache_clear()
    calls = []
    real = conv_util.conv_info
    monkeypatch.setattr(conv_util, "conv_info", lambda *a: calls.append(a[0]) or real(*a))
    nf.set_backend("cpu")
    x, f = nf.ones([1, 7, 7, 2]), nf.ones([3, 3, 2, 1])
    pads = [[0, 0], [1, 2], [0, 1], [0, 0]]
    try:
        for _ in range(3):
            y = nf.depthwise_conv2d(x, f, [1, 1], pads, "NHWC", [1, 1])
            assert y.shape == (1, 8, 6, 2)
            nf.dispose(y)
        assert len(calls) == 1  # computed once for the three calls
        for _ in range(2):  # bad arguments raise on every call (errors are not cached)
            with pytest.raises(ValueError, match="depthwise_conv2d"):
                nf.depthwise_conv2d(x, f, [1, 0], pads)
        with pytest.raises(ValueError, match="strides"):  # a numpy stride: the uncached path, same checks
            nf.depthwise_conv2d(x, f, np.int64(1), "same")
    finally:
        nf.dispose([x, f])
