"""Depthwise convolutions' rows on the native workers (``_gemm.run_rows`` with the numba C callbacks of
``ndflow/backends/cpu/jit/_dw_rows.py``).

A row has the same bits whichever thread computes it: every route kind, with every epilogue, must equal the
kernel run on the calling thread, bit for bit; and the split must really have run."""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba

import ndflow as nf
from ndflow.backends.cpu import native_split
from ndflow.backends.cpu import parallel as cpu_parallel
from ndflow.backends.cpu.jit import ACTIVATION_CODES, kernels
from ndflow.backends.cpu.jit import ops as jit_ops
from ndflow.backends.cpu.kernels.conv import info_from_attrs

RNG = np.random.default_rng(5)
needs_module = pytest.mark.skipif(
    native_split._load() is None, reason=f"native workers unavailable: {native_split.status()}"
)

# (x shape, filter shape, strides, pad, dilations, route kind)
ROUTES = [
    ((2, 11, 13, 32), (3, 3, 32, 1), 1, "same", 1, jit_ops.DW3_BLOCKED),
    ((1, 13, 12, 24), (3, 3, 24, 1), 2, "same", 1, jit_ops.DW3_BLOCKED),
    ((1, 12, 14, 8), (3, 3, 8, 1), 1, "same", 1, jit_ops.DW3_FLAT),
    ((2, 13, 15, 8), (3, 3, 8, 1), 2, "valid", 1, jit_ops.DW3),
    ((1, 12, 11, 64), (3, 3, 64, 1), 1, "same", 2, jit_ops.DW3),
    ((1, 14, 13, 12), (5, 5, 12, 1), 1, "same", 1, jit_ops.DW_FLAT),
    ((1, 14, 13, 40), (5, 5, 40, 1), 2, "same", 1, jit_ops.DW5),
    ((1, 10, 400, 32), (5, 5, 32, 1), 1, "same", 1, jit_ops.DW5_FLAT),
    ((1, 12, 12, 6), (4, 4, 6, 2), 2, "same", 1, jit_ops.DW),
]


def _route(x_shape, f_shape, strides, pad, dilations):
    attrs = {"strides": strides, "pad": pad, "dilations": dilations, "data_format": "NHWC"}
    info = info_from_attrs(x_shape, f_shape, attrs, "DepthwiseConv2dNative", depthwise=True)
    return jit_ops.depthwise_route(info, x_shape, f_shape)


def _epilogue(activation: str, channels: int, out_shape) -> tuple:
    f32 = np.float32
    bias = RNG.standard_normal(channels).astype(f32)
    slopes = RNG.standard_normal(channels).astype(f32) if activation == "prelu" else jit_ops._NONE
    add = RNG.standard_normal(out_shape).astype(f32) if activation in ("relu6", "linear") else jit_ops._NONE4
    return bias, add, ACTIVATION_CODES[activation], f32(0.2), slopes


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads take part (also on a one-core machine), and every split is counted."""
    monkeypatch.setattr(cpu_parallel, "threads", lambda: 2)
    calls = []
    real = native_split.run_rows

    def counted(*args, **kwargs):
        calls.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(native_split, "run_rows", counted)
    return calls


@needs_numba
@needs_module
@pytest.mark.parametrize("activation", ["linear", "relu6", "leakyrelu", "prelu", "elu"])
@pytest.mark.parametrize("case", ROUTES, ids=lambda c: f"kind{c[5]}-{c[0]}-{c[1][:2]}-s{c[2]}-d{c[4]}")
def test_rows_on_the_workers_equal_the_calling_thread(case, activation, two_threads, monkeypatch):
    x_shape, f_shape, strides, pad, dilations, kind = case
    route = _route(x_shape, f_shape, strides, pad, dilations)
    assert route.kind == kind
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(f_shape).astype(np.float32)
    ep = _epilogue(activation, route.out_shape[3], route.out_shape)
    k = kernels()
    monkeypatch.setattr(jit_ops, "DW_SPLIT_MIN_WORK", 10**18)
    alone = jit_ops.run_depthwise(route, k, x, w, ep, False)
    assert not two_threads
    monkeypatch.setattr(jit_ops, "DW_SPLIT_MIN_WORK", 0)
    for _ in range(3):  # chunks go to whoever claims them first: the bits must not depend on it
        split = jit_ops.run_depthwise(route, k, x, w, ep, False)
        np.testing.assert_array_equal(split, alone)
        assert np.signbit(split).tolist() == np.signbit(alone).tolist()
    assert two_threads == [route.out_shape[0] * route.out_shape[1]] * 3


@needs_numba
@needs_module
def test_a_model_sized_depthwise_convolution_splits_through_the_op(two_threads):
    """Through the public op: a 48x48x64 depthwise convolution (1.3 M multiply-adds) splits its rows and gives
    the same bits as with the native workers off."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x = nf.tensor(RNG.standard_normal((1, 48, 48, 64)).astype(np.float32))
    w = nf.tensor(RNG.standard_normal((3, 3, 64, 1)).astype(np.float32))
    b = nf.tensor(RNG.standard_normal(64).astype(np.float32))
    try:
        results = []
        for on in (False, True):
            nf.env().set("CPU_NATIVE_SPLIT", on)
            y = nf.fused.depthwise_conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="relu6")
            results.append(y.numpy())
            y.dispose()
        np.testing.assert_array_equal(results[0], results[1])
        assert 48 in two_threads
    finally:
        nf.env().reset()
        nf.dispose([x, w, b])
        nf.set_backend(previous)


@needs_numba
@needs_module
def test_small_work_and_one_thread_stay_on_the_calling_thread(two_threads, monkeypatch):
    route = _route((1, 6, 6, 16), (3, 3, 16, 1), 1, "same", 1)
    x = RNG.standard_normal((1, 6, 6, 16)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 16, 1)).astype(np.float32)
    ep = _epilogue("elu", 16, route.out_shape)
    jit_ops.run_depthwise(route, kernels(), x, w, ep, False)  # 5,184 multiply-adds: below DW_SPLIT_MIN_WORK
    monkeypatch.setattr(jit_ops, "DW_SPLIT_MIN_WORK", 0)
    monkeypatch.setattr(cpu_parallel, "threads", lambda: 1)
    jit_ops.run_depthwise(route, kernels(), x, w, ep, False)
    assert two_threads == []


@needs_module
def test_run_rows_refuses_bad_arguments():
    module = native_split._load()
    x = np.zeros((2, 3), np.float32)
    address = 12345  # never called: every case is refused before any row runs
    with pytest.raises(ValueError, match="at most 8 arrays"):
        module.run_rows(address, (x,) * 9, (), (), 2, 1, 2)
    with pytest.raises(ValueError, match="at most 8 arrays"):
        module.run_rows(address, (x,), tuple(range(17)), (), 2, 1, 2)
    with pytest.raises(ValueError, match="function address"):
        module.run_rows(0, (x,), (), (), 2, 1, 2)
    with pytest.raises(ValueError, match="chunk_rows and threads positive"):
        module.run_rows(address, (x,), (), (), 2, 0, 2)
    with pytest.raises(ValueError, match="array 0 must be a C-contiguous float32"):
        module.run_rows(address, (x.astype(np.float64),), (), (), 2, 1, 2)
    with pytest.raises(ValueError, match="array 1 must be a C-contiguous float32"):
        module.run_rows(address, (x, np.zeros((1, 1, 1, 1, 1), np.float32)), (), (), 2, 1, 2)
    with pytest.raises(ValueError, match="not C-contiguous"):
        module.run_rows(address, (x[:, ::2],), (), (), 2, 1, 2)
    with pytest.raises(TypeError):
        module.run_rows(address, (x,), ("one",), (), 2, 1, 2)
    with pytest.raises(TypeError):
        module.run_rows(address, (x,), (), ("half",), 2, 1, 2)
