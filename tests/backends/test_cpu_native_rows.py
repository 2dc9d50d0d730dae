"""Depthwise convolutions' rows on the native workers (``_gemm.run_rows`` with the numba C callbacks of
``ndflow/backends/cpu/numba/_dw_rows.py``).

A row has the same bits whichever thread computes it: every route kind, with every epilogue, must equal the
kernel run on the calling thread, bit for bit; and the split must really have run."""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba, numba_kernels  # noqa: F401 (a fixture)
from test_cpu_native_split import sgemm_path  # noqa: F401 (a fixture)

import ndflow as nf
from ndflow.backends.cpu.kernels.conv import info_from_attrs
from ndflow.backends.cpu.native import native_split
from ndflow.backends.cpu.native import parallel as cpu_parallel
from ndflow.backends.cpu.numba import ACTIVATION_CODES, kernels
from ndflow.backends.cpu.numba import ops as jit_ops

RNG = np.random.default_rng(5)
pytestmark = pytest.mark.usefixtures("numba_kernels")  # these test numba's kernels
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


# --------------------------------------------------------------------------- convolution jobs (_gemm.conv)

CONV_CASES = [
    # (x shape, kh, kw, strides, pads top/left, output channels)
    ((1, 40, 40, 3), 3, 3, 2, 0, 32),  # a first layer: 3 input channels, stride 2
    ((2, 17, 19, 8), 3, 3, 1, 1, 12),  # batch 2, odd sizes, padding on every side
    ((1, 23, 21, 5), 5, 5, 2, 2, 7),
    ((1, 9, 30, 16), 1, 7, 1, 3, 24),
]


def _conv_reference(x, w2, static, chunk, bias, add, act, alpha, slopes):
    """The column matrix of the whole convolution (numba's im2col), then one ``np.matmul`` and numpy's epilogue
    per chunk of ``chunk`` rows: what each thread computes on its chunk."""
    from test_cpu_native_split import _chunked_reference

    kh, kw, sh, sw, dh, dw, pt, pl, out_h, out_w = static
    cols = np.empty((x.shape[0] * out_h * out_w, kh * kw * x.shape[3]), np.float32)
    kernels().im2col2d(x, cols, *static, 0, x.shape[0] * out_h)
    return _chunked_reference(cols, w2, bias, add, act, alpha, slopes, chunk)


@needs_numba
@needs_module
@pytest.mark.parametrize("act", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-s{c[3]}")
@pytest.mark.usefixtures("sgemm_path")
def test_convolution_chunks_equal_im2col_then_numpy_on_the_same_rows(case, act):
    from ndflow.backends.cpu.numba import _conv_rows

    shape, kh, kw, stride, pad, channels = case
    out_h = (shape[1] + 2 * pad - kh) // stride + 1
    out_w = (shape[2] + 2 * pad - kw) // stride + 1
    static = (kh, kw, stride, stride, 1, 1, pad, pad, out_h, out_w)
    x = RNG.standard_normal(shape).astype(np.float32)
    w2 = RNG.standard_normal((kh * kw * shape[3], channels)).astype(np.float32)
    rows = shape[0] * out_h * out_w
    bias = RNG.standard_normal(channels).astype(np.float32)
    add = RNG.standard_normal((rows, channels)).astype(np.float32) if act in (0, 2) else None
    slopes = RNG.standard_normal(channels).astype(np.float32) if act == 4 else None
    for chunk_rows in (1, 3):
        chunk = chunk_rows * out_w
        want = _conv_reference(x, w2, static, chunk, bias, add, act, 0.3, slopes)
        for _ in range(2):
            y = np.full((rows, channels), np.nan, np.float32)
            address = _conv_rows.im2col_rows.address
            assert native_split.conv_into(address, x, static, w2, y, 2, chunk, bias, add, act, 0.3, slopes)
            np.testing.assert_array_equal(y, want)


@needs_numba
@needs_module
@pytest.mark.parametrize("activation", ["relu", "prelu", "elu"])
def test_convolutions_through_the_op_split_the_same_on_every_run(activation, two_threads):
    """A 3x3 convolution of 3 channels (a first layer) through the public op: the same bits on every run,
    float32-close to the native workers off (elu is not in the C epilogue: the blocks run as before)."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x = nf.tensor(RNG.standard_normal((1, 96, 96, 3)).astype(np.float32))  # 2 MFLOP: above MIN_FLOPS
    w = nf.tensor(RNG.standard_normal((3, 3, 3, 16)).astype(np.float32))
    b = nf.tensor(RNG.standard_normal(16).astype(np.float32))
    slopes = nf.tensor(RNG.standard_normal(16).astype(np.float32))
    extra = {"prelu_activation_weights": slopes} if activation == "prelu" else {}
    calls = []
    module = native_split._load()

    class Spy:  # the C module, its convolutions counted (planned calls bind to it on their first run)
        def conv(self, *args):
            calls.append(args[9])
            return module.conv(*args)

        def __getattr__(self, name):
            return getattr(module, name)

    def conv() -> np.ndarray:
        y = nf.fused.conv2d(x=x, filter=w, strides=2, pad="same", bias=b, activation=activation, **extra)
        value = y.numpy()
        y.dispose()
        return value

    try:
        native_split._state["module"] = Spy()
        runs = {}
        for on in (False, True, True):
            nf.env().set("CPU_NATIVE_SPLIT", on)
            runs.setdefault(on, []).append(conv())
        np.testing.assert_array_equal(runs[True][0], runs[True][1])
        np.testing.assert_allclose(runs[True][0], runs[False][0], rtol=1e-5, atol=1e-5)
        assert len(calls) == (0 if activation == "elu" else 2)
    finally:
        native_split._state["module"] = module
        nf.env().reset()
        nf.dispose([x, w, b, slopes])
        nf.set_backend(previous)


@needs_module
def test_conv_refuses_bad_arguments():
    module = native_split._load()
    x = np.zeros((1, 4, 4, 2), np.float32)
    w2, y = np.zeros((18, 3), np.float32), np.zeros((16, 3), np.float32)
    address = 12345  # never called: every case is refused before any chunk runs
    with pytest.raises(ValueError, match="a function address"):
        module.conv(0, (x,), (), w2, y, None, None, 0, 2, 4)
    with pytest.raises(ValueError, match="act must be 0-4"):
        module.conv(address, (x,), (), w2, y, None, None, 5, 2, 4)
    with pytest.raises(ValueError, match="slopes given exactly for 4"):
        module.conv(address, (x,), (), w2, y, None, None, 4, 2, 4)
    with pytest.raises(ValueError, match="out must be a C-contiguous float32 array of the right shape"):
        module.conv(address, (x,), (), w2, np.zeros((16, 4), np.float32), None, None, 0, 2, 4)
    with pytest.raises(ValueError, match="add must be"):
        module.conv(address, (x,), (), w2, y, None, np.zeros((15, 3), np.float32), 0, 2, 4)
    with pytest.raises(ValueError, match="context array 0 must be"):
        module.conv(address, (x.astype(np.float64),), (), w2, y, None, None, 0, 2, 4)
    with pytest.raises(ValueError, match="at most 8 arrays"):
        module.conv(address, (x,), tuple(range(17)), w2, y, None, None, 0, 2, 4)
