"""The cpu backend's compiled (numba) kernels agree with its numpy paths, case by case.

Each case runs twice on the cpu backend, once with the flag ``CPU_JIT`` off (numpy) and once on
(numba, when installed); the results must agree to float32 rounding. The oracle suites (tests/ops,
tests/gradients) check both against TF.js, with whichever path the flag selects.
"""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba, run_both

import ndflow as nf
from ndflow.backends.cpu import numba as jit

RNG = np.random.default_rng(7)


def _close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5) -> None:
    """Same shape and dtype; the same NaN/±inf positions; finite values within float32 rounding."""
    assert a.shape == b.shape and a.dtype == b.dtype
    finite = np.isfinite(a)
    np.testing.assert_array_equal(finite, np.isfinite(b))
    np.testing.assert_array_equal(a[~finite], b[~finite])  # NaN == NaN here (equal_nan by default)
    scale = max(float(np.abs(a[finite]).max()) if finite.any() else 0.0, 1.0)
    np.testing.assert_allclose(a[finite], b[finite], rtol=0, atol=rtol * scale)


def _rand(shape):
    return nf.tensor(RNG.standard_normal(shape).astype(np.float32))


DEPTHWISE_CASES = [
    # (x shape, filter (kh, kw, mult), strides, pad, dilations, data_format)
    ((1, 9, 9, 5), (3, 3, 1), 1, "same", 1, "NHWC"),
    ((2, 8, 7, 3), (3, 3, 2), 1, "valid", 1, "NHWC"),
    ((1, 10, 11, 4), (3, 3, 1), 2, "same", 1, "NHWC"),
    ((1, 10, 11, 4), (5, 5, 1), 2, "valid", 1, "NHWC"),
    ((1, 12, 12, 6), (3, 3, 1), 1, "same", 2, "NHWC"),
    ((1, 12, 12, 6), (3, 2, 3), 1, "valid", (2, 1), "NHWC"),
    ((1, 7, 9, 4), (3, 3, 1), 1, [[0, 0], [1, 2], [2, 0], [0, 0]], 1, "NHWC"),
    ((1, 7, 9, 4), (2, 2, 2), (2, 1), [[0, 0], [0, 1], [3, 1], [0, 0]], 1, "NHWC"),
    ((1, 4, 7, 9), (3, 3, 1), 1, "same", 1, "NCHW"),
    ((1, 3, 3, 700), (3, 3, 1), 1, "same", 1, "NHWC"),  # wide rows: the per-pixel loop
    ((1, 20, 600, 20), (3, 3, 1), 1, "same", 1, "NHWC"),  # long rows
    ((1, 0, 5, 3), (1, 1, 1), 1, "valid", 1, "NHWC"),  # empty
]


def _filter_shape(x_shape, spec, data_format):
    channels = x_shape[1] if data_format == "NCHW" else x_shape[-1]
    return (spec[0], spec[1], channels, spec[2])


@needs_numba
@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}-{c[5]}")
def test_depthwise_matches_numpy(case):
    x_shape, spec, strides, pad, dilations, data_format = case
    x = _rand(x_shape)
    w = _rand(_filter_shape(x_shape, spec, data_format))
    try:
        got = run_both(lambda: nf.depthwise_conv2d(x, w, strides, pad, data_format=data_format, dilations=dilations))
        _close(*got)
    finally:
        nf.dispose([x, w])


ACTIVATIONS = ["linear", "relu", "relu6", "elu", "leakyrelu", "prelu", "sigmoid"]


@needs_numba
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("kind", ["conv", "depthwise", "conv_nchw"])
def test_fused_epilogue_matches_numpy(kind, activation):
    channels_first = kind == "conv_nchw"
    x = _rand((2, 5, 8, 8) if channels_first else (2, 8, 8, 5))
    out_channels = 4 if kind != "depthwise" else 10
    w = _rand((3, 3, 5, 4) if kind != "depthwise" else (3, 3, 5, 2))
    bias = _rand((out_channels,))
    alpha = _rand((out_channels,)) if activation == "prelu" else None
    op = nf.fused.depthwise_conv2d if kind == "depthwise" else nf.fused.conv2d
    fmt = "NCHW" if channels_first else "NHWC"
    try:
        got = run_both(
            lambda: op(
                x=x,
                filter=w,
                strides=1,
                pad="same",
                data_format=fmt,
                bias=bias,
                activation=activation,
                prelu_activation_weights=alpha,
                leakyrelu_alpha=0.3,
            )
        )
        _close(*got)
    finally:
        nf.dispose([t for t in (x, w, bias, alpha) if t is not None])


@needs_numba
@pytest.mark.parametrize(
    "bias_shape,alpha_shape",
    [((), None), ((1,), None), ((6,), (1, 1, 6)), ((8, 6), None), ((1, 6), (1, 8, 6)), (None, (1,))],
)
def test_fused_bias_and_prelu_shapes(bias_shape, alpha_shape):
    """Biases and PReLU weights that broadcast in other ways than along the channels take the numpy path."""
    x = _rand((1, 8, 8, 3))
    w = _rand((1, 1, 3, 6))
    bias = _rand(bias_shape) if bias_shape is not None else None
    alpha = _rand(alpha_shape) if alpha_shape is not None else None
    activation = "prelu" if alpha is not None else "relu"
    try:
        got = run_both(
            lambda: nf.fused.conv2d(
                x=x, filter=w, strides=1, pad="valid", bias=bias, activation=activation, prelu_activation_weights=alpha
            )
        )
        _close(*got)
    finally:
        nf.dispose([t for t in (x, w, bias, alpha) if t is not None])


@needs_numba
def test_nan_survives_relu_epilogue():
    x = nf.tensor(np.array([[[[np.nan], [1.0]], [[-1.0], [2.0]]]], np.float32))
    w = nf.tensor(np.ones((1, 1, 1, 1), np.float32))
    try:
        a, b = run_both(lambda: nf.fused.conv2d(x=x, filter=w, strides=1, pad="valid", activation="relu"))
        assert np.isnan(a[0, 0, 0, 0]) and np.isnan(b[0, 0, 0, 0])
        _close(a, b)
    finally:
        nf.dispose([x, w])


def test_flag_turns_the_jit_off():
    nf.env().set("CPU_JIT", False)
    assert not jit.enabled()
    assert jit.kernels() is None
    assert "off" in jit.status()


TRANSPOSE_CASES = [
    # (dy shape, filter shape, output shape, strides, pad, dilations via conv2d's gradient)
    ((1, 5, 5, 4), (4, 4, 3, 4), (1, 10, 10, 3), 2, "same"),
    ((2, 4, 6, 2), (3, 3, 5, 2), (2, 9, 13, 5), 2, "valid"),
    ((1, 6, 6, 3), (3, 3, 2, 3), (1, 6, 6, 2), 1, "same"),
    ((1, 3, 4, 8), (2, 2, 4, 8), (1, 6, 8, 4), 2, "valid"),
]


@needs_numba
@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}-{c[4]}")
def test_conv2d_transpose_matches_numpy(case):
    dy_shape, w_shape, out_shape, strides, pad = case
    dy = _rand(dy_shape)
    w = _rand(w_shape)
    try:
        _close(*run_both(lambda: nf.conv2d_transpose(dy, w, out_shape, strides, pad)))
    finally:
        nf.dispose([dy, w])


@needs_numba
@pytest.mark.parametrize("dilations,pad", [(2, "same"), (1, [[0, 0], [2, 1], [0, 3], [0, 0]])])
def test_conv2d_input_gradient_matches_numpy(dilations, pad):
    x = _rand((1, 7, 8, 3))
    w = _rand((3, 3, 3, 4))
    try:
        grad = nf.grad(lambda a: nf.conv2d(a, w, 1, pad, dilations=dilations).square().sum())
        _close(*run_both(lambda: grad(x)))
    finally:
        nf.dispose([x, w])


@needs_numba
@pytest.mark.parametrize(
    "name,shape",
    [
        ("relu", (4, 33, 20)),
        ("relu6", (4, 33, 20)),
        ("elu", (64, 40)),
        ("sigmoid", (3, 50, 17)),
        ("leaky_relu", (80, 30)),
        ("prelu", (8, 9, 40)),
    ],
)
def test_activations_match_numpy(name, shape):
    values = (RNG.standard_normal(shape) * 5).astype(np.float32)
    values.reshape(-1)[:8] = [-0.0, 0.0, np.nan, np.inf, -np.inf, 6.0, -1e-45, 1e-45]
    x = nf.tensor(values)
    alphas = {
        "prelu": _rand((1, 1, shape[-1])),
    }
    try:
        if name == "prelu":
            fn = lambda: nf.prelu(x, alphas["prelu"])  # noqa: E731
        elif name == "leaky_relu":
            fn = lambda: nf.leaky_relu(x, 0.1)  # noqa: E731
        else:
            fn = lambda: getattr(nf, name)(x)  # noqa: E731
        numpy_path, compiled = run_both(fn)
        _close(numpy_path, compiled)
        if name in ("relu", "relu6", "leaky_relu", "prelu"):  # no elementary function: the same bits
            np.testing.assert_array_equal(numpy_path.view(np.int32), compiled.view(np.int32))
    finally:
        nf.dispose([x, *alphas.values()])


POOL_CASES = [
    ((1, 9, 9, 5), 3, 2, "same", 1),
    ((2, 8, 7, 3), 2, 2, "valid", 1),
    ((1, 10, 11, 4), (3, 2), (1, 2), "same", 1),
    ((1, 12, 12, 6), 3, 1, "same", 2),
    ((1, 7, 9, 4), 3, 1, [[0, 0], [1, 2], [2, 0], [0, 0]], 1),
    ((1, 5, 5, 2), 3, 1, [[0, 0], [4, 4], [4, 4], [0, 0]], 1),  # windows entirely in the padding
]


@needs_numba
@pytest.mark.parametrize("op", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}")
def test_pool_matches_numpy(op, case):
    shape, size, strides, pad, dilations = case
    values = RNG.standard_normal(shape).astype(np.float32)
    values.reshape(-1)[::7] = np.nan  # max ignores NaN; the average carries it
    x = nf.tensor(values)
    try:
        _close(*run_both(lambda: nf.pool(x, size, op.split("_")[0], pad, dilations, strides)))
    finally:
        nf.dispose(x)


@needs_numba
def test_parallel_loops_match_serial():
    """With ``CPU_JIT_PARALLEL`` large loops run on numba's threads; the result does not change."""
    x = _rand((1, 40, 40, 200))  # 40 * 40 * 200 * 9 multiply-adds: above the parallel threshold
    w = _rand((3, 3, 200, 1))
    b = _rand((200,))
    previous = nf.get_backend()
    try:
        nf.set_backend("cpu")
        results = []
        for par in (False, True):
            nf.env().set("CPU_JIT_PARALLEL", par)
            for strides in (1, 2):
                t = nf.fused.depthwise_conv2d(x=x, filter=w, strides=strides, pad="same", bias=b, activation="relu6")
                results.append(t.numpy())
                nf.dispose(t)
        for a, c in zip(results[:2], results[2:], strict=True):
            np.testing.assert_array_equal(a, c)
    finally:
        nf.env().reset()
        nf.set_backend(previous)
        nf.dispose([x, w, b])


def test_blas_threads_flag():
    """``CPU_BLAS_THREADS`` sets numpy's OpenBLAS thread count; 0 gives back its default."""
    from ndflow.backends.cpu import backend as cpu_backend

    blas = cpu_backend._openblas()
    if blas is None:
        pytest.skip("numpy is not linked to OpenBLAS here")
    default = blas[1]()
    try:
        nf.env().set("CPU_BLAS_THREADS", 1)
        assert blas[1]() == 1
        nf.env().set("CPU_BLAS_THREADS", 0)
        assert blas[1]() == cpu_backend._BLAS["default"]  # the count OpenBLAS had before ndflow set one
    finally:
        nf.env().reset()
    assert blas[1]() == default


def test_cpu_backend_applies_one_blas_thread_by_default():
    """A new cpu backend sets OpenBLAS to the flag's default, one thread (robust on a shared machine)."""
    from ndflow.backends.cpu import backend as cpu_backend

    blas = cpu_backend._openblas()
    if blas is None:
        pytest.skip("numpy is not linked to OpenBLAS here")
    assert nf.env().get("CPU_BLAS_THREADS") == 1
    blas[0](2)
    cpu_backend.CPUBackend()
    assert blas[1]() == 1
