"""The webgpu matrix-product and convolution programs (tiled GEMM, implicit-GEMM convolutions, depthwise,
3-D, dilation): registered as GPU kernels, outputs left on the GPU, and the same values as the cpu kernels in
cases the oracle fixtures do not reach (dispatch splits, broadcasting, int32 wrap-around, float16 storage,
shape uniforms off)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

from ndflow.backends.webgpu import FORWARDED, GPU_KERNELS  # noqa: E402

KERNELS = [
    "BatchMatMul", "_FusedMatMul", "Conv2D", "FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2D",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter", "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
    "Dilation2D", "Dilation2DBackpropInput", "Dilation2DBackpropFilter",
]  # fmt: skip

RNG = np.random.default_rng(7)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def on_both(fn: Callable[..., nf.Tensor], *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``fn`` of the arrays on cpu and on webgpu (active): (cpu values, webgpu values, webgpu result on GPU)."""
    results = []
    for name in ("cpu", "webgpu"):
        nf.set_backend(name)
        ts = [nf.tensor(a) for a in arrays]
        y = fn(*ts)
        on_gpu = name == "webgpu" and ENGINE.backend.on_gpu(y.data_id)
        results.append(y.numpy())
        nf.dispose([*ts, y])
    return results[0], results[1], on_gpu


def check(fn: Callable[..., nf.Tensor], *arrays: np.ndarray, tol: float = 1e-4, exact: bool = False) -> None:
    want, got, on_gpu = on_both(fn, *arrays)
    assert on_gpu, "the result should stay on the GPU"
    assert got.shape == want.shape and got.dtype == want.dtype
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def kernel(name: str, **attrs) -> Callable[..., nf.Tensor]:
    return lambda *ts: ENGINE.run_kernel(name, tuple(ts), attrs)


CONV = {"strides": (2, 1), "pad": "same", "dilations": (1, 1), "data_format": "NHWC"}


def test_kernels_have_gpu_programs():
    for name in KERNELS:
        assert name in GPU_KERNELS, name
        assert name not in FORWARDED, name


@pytest.mark.parametrize(
    ("name", "fn", "shapes"),
    [
        ("BatchMatMul", lambda a, b: nf.mat_mul(a, b), [(2, 3, 4), (4, 5)]),
        ("_FusedMatMul", lambda a, b, c: nf.fused.mat_mul(a=a, b=b, bias=c, activation="relu"), [(3, 4), (4, 5), (5,)]),
        ("Conv2D", lambda x, f: nf.conv2d(x, f, 1, "same"), [(1, 5, 5, 2), (3, 3, 2, 3)]),
        (
            "FusedConv2D",
            lambda x, f, b: nf.fused.conv2d(x=x, filter=f, strides=1, pad="valid", bias=b),
            [(1, 5, 5, 2), (3, 3, 2, 3), (3,)],
        ),  # noqa: E501
        ("DepthwiseConv2dNative", lambda x, f: nf.depthwise_conv2d(x, f, 1, "same"), [(1, 5, 5, 2), (3, 3, 2, 2)]),
        (
            "FusedDepthwiseConv2D",
            lambda x, f: nf.fused.depthwise_conv2d(x=x, filter=f, strides=1, pad="same", activation="elu"),
            [(1, 5, 5, 2), (3, 3, 2, 1)],
        ),  # noqa: E501
        (
            "Conv2DBackpropInput",
            lambda d, f: nf.conv2d_transpose(d, f, [1, 6, 6, 2], 2, "same"),
            [(1, 3, 3, 3), (3, 3, 2, 3)],
        ),  # noqa: E501
        (
            "Conv2DBackpropFilter",
            kernel("Conv2DBackpropFilter", **CONV, filter_shape=(3, 3, 2, 4)),
            [(1, 6, 5, 2), (1, 3, 5, 4)],
        ),  # noqa: E501
        (
            "DepthwiseConv2dNativeBackpropInput",
            kernel("DepthwiseConv2dNativeBackpropInput", **CONV, input_shape=(1, 6, 5, 2)),
            [(1, 3, 5, 4), (3, 3, 2, 2)],
        ),  # noqa: E501
        (
            "DepthwiseConv2dNativeBackpropFilter",
            kernel("DepthwiseConv2dNativeBackpropFilter", **CONV, filter_shape=(3, 3, 2, 2)),
            [(1, 6, 5, 2), (1, 3, 5, 4)],
        ),  # noqa: E501
        ("Conv3D", lambda x, f: nf.conv3d(x, f, 1, "same"), [(1, 4, 4, 4, 2), (2, 2, 2, 2, 3)]),
        (
            "Conv3DBackpropInputV2",
            lambda d, f: nf.conv3d_transpose(d, f, [1, 4, 4, 4, 2], 2, "same"),
            [(1, 2, 2, 2, 3), (2, 2, 2, 2, 3)],
        ),  # noqa: E501
        (
            "Conv3DBackpropFilterV2",
            kernel(
                "Conv3DBackpropFilterV2",
                strides=(1, 1, 1),
                pad="valid",
                dilations=(1, 1, 1),
                data_format="NDHWC",
                filter_shape=(2, 2, 2, 2, 3),
            ),
            [(1, 4, 4, 4, 2), (1, 3, 3, 3, 3)],
        ),  # noqa: E501
        ("Dilation2D", lambda x, f: nf.dilation2d(x, f, 1, "same"), [(1, 5, 5, 2), (2, 3, 2)]),
        (
            "Dilation2DBackpropInput",
            kernel("Dilation2DBackpropInput", strides=(1, 1), pad="same", dilations=(1, 1)),
            [(1, 5, 5, 2), (2, 3, 2), (1, 5, 5, 2)],
        ),  # noqa: E501
        (
            "Dilation2DBackpropFilter",
            kernel("Dilation2DBackpropFilter", strides=(1, 1), pad="same", dilations=(1, 1)),
            [(1, 5, 5, 2), (2, 3, 2), (1, 5, 5, 2)],
        ),  # noqa: E501
    ],
)
def test_each_kernel_runs_on_the_gpu(gpu, name, fn, shapes):
    check(fn, *[normal(*s) for s in shapes])


# ----------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_broadcasts_batch_axes_of_both_sides(gpu, ta, tb):
    a = normal(2, 1, 3, *((70, 33) if ta else (33, 70)))
    b = normal(1, 4, 1, *((90, 70) if tb else (70, 90)))
    check(lambda x, y: nf.mat_mul(x, y, ta, tb), a, b)


def test_matmul_int32_wraps_and_bool_is_or_of_ands(gpu):
    a = RNG.integers(-(2**31), 2**31, (2, 37, 70), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-(2**31), 2**31, (70, 66), dtype=np.int64).astype(np.int32)
    check(lambda x, y: nf.mat_mul(x, y), a, b, exact=True)
    p, q = RNG.random((5, 7)) < 0.3, RNG.random((7, 4)) < 0.3
    check(kernel("BatchMatMul", transpose_a=False, transpose_b=False), p, q, exact=True)


def test_matmul_k_zero_gives_zeros(gpu):
    check(lambda x, y: nf.mat_mul(x, y), np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), exact=True)


@pytest.mark.parametrize("activation", ["linear", "relu", "relu6", "elu", "leakyrelu", "prelu", "sigmoid"])
def test_fused_matmul_activations_float_and_int(gpu, activation):
    a, b = normal(2, 1, 5, 6) * 3, normal(3, 6, 7) * 3
    bias, alpha = normal(5, 1), normal(7)

    def fused(x, y, c, w):
        return nf.fused.mat_mul(a=x, b=y, bias=c, activation=activation, prelu_activation_weights=w,
                                leakyrelu_alpha=0.3)  # fmt: skip

    check(fused, a, b, bias, alpha)
    ai = RNG.integers(-12, 12, (2, 5, 6)).astype(np.int32)
    bi = RNG.integers(-12, 12, (6, 7)).astype(np.int32)
    check(fused, ai, bi, RNG.integers(-5, 5, (7,)).astype(np.int32), alpha, exact=True)


def test_fused_matmul_int32_sigmoid_threshold_and_float_bias(gpu):
    a = np.array([[36, 37, 38, -1, 0]], np.int32).T  # (5, 1): sigmoid(36) < 1 < sigmoid(37) in float64
    b = np.ones((1, 1), np.int32)
    check(lambda x, y: nf.fused.mat_mul(a=x, b=y, activation="sigmoid"), a, b, exact=True)
    bias = np.array([-1.5], np.float32)  # int32 product + float bias: truncated as numpy's unsafe add

    def with_bias(x, y, c):
        return ENGINE.run_kernel("_FusedMatMul", (x, y, c), {"transpose_a": False, "transpose_b": False,
                                                              "activation": "linear"})  # fmt: skip

    check(with_bias, a, b, bias, exact=True)


def test_matmul_grid_stride_loops(gpu, monkeypatch):
    """Tiles and batch entries beyond the workgroup limit are covered by grid-stride loops (limit lowered to
    2 here so that small products take several turns of every loop)."""
    monkeypatch.setitem(gpu.gpu.limits, "max-compute-workgroups-per-dimension", 2)
    check(lambda x, y: nf.mat_mul(x, y), normal(300, 2), normal(2, 1))
    check(lambda x, y: nf.mat_mul(x, y), normal(5, 70, 3), normal(5, 3, 150))


def test_matmul_batch_beyond_65535_workgroups(gpu):
    check(lambda x, y: nf.mat_mul(x, y), normal(65600, 2, 3), normal(65600, 3, 2), tol=1e-5)


# ----------------------------------------------------------------------------- convolutions


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize(
    ("strides", "pad", "dilations"),
    [(1, "same", 1), ((2, 3), "valid", 1), (1, [[0, 0], [1, 2], [0, 1], [0, 0]], (2, 1)), (2, 1, 1)],
)
def test_conv2d_and_backprops_geometry(gpu, data_format, strides, pad, dilations):
    if data_format == "NCHW" and not isinstance(pad, str | int):
        pad = [[0, 0], [0, 0], *pad[1:3]]
    x = normal(2, 9, 8, 3) if data_format == "NHWC" else normal(2, 3, 9, 8)
    f = normal(3, 2, 3, 4)
    conv = lambda a, b: nf.conv2d(a, b, strides, pad, data_format, dilations)  # noqa: E731
    check(conv, x, f)
    check(lambda a, b: nf.grad(lambda t: conv(t, b))(a), x, f)  # Conv2DBackpropInput
    check(lambda a, b: nf.grad(lambda t: conv(a, t))(b), x, f)  # Conv2DBackpropFilter


@pytest.mark.parametrize("activation", ["relu", "prelu", "leakyrelu", "sigmoid"])
def test_fused_conv2d_nchw_bias_and_prelu_run_along_channels(gpu, activation):
    def fused(x, f, b, w):
        return nf.fused.conv2d(x=x, filter=f, strides=1, pad="same", data_format="NCHW", bias=b,
                               activation=activation, prelu_activation_weights=w)  # fmt: skip

    check(fused, normal(2, 3, 6, 5), normal(3, 3, 3, 4), normal(4), normal(4))


def test_depthwise_multiplier_nchw_and_backprops(gpu):
    x, f = normal(2, 3, 7, 6), normal(3, 2, 3, 2)
    conv = lambda a, b: nf.depthwise_conv2d(a, b, 2, "same", "NCHW")  # noqa: E731
    check(conv, x, f)
    check(lambda a, b: nf.grad(lambda t: conv(t, b))(a), x, f)
    check(lambda a, b: nf.grad(lambda t: conv(a, t))(b), x, f)
    fused = lambda a, b, c: nf.fused.depthwise_conv2d(x=a, filter=b, strides=1, pad="valid", bias=c, activation="relu6")  # noqa: E501, E731
    check(fused, normal(1, 6, 6, 3) * 4, normal(2, 2, 3, 2), normal(6))


def test_depthwise_dispatch_split(gpu):
    x = normal(1, 1100, 1000, 4)  # 4.4M outputs: more than 65535 workgroups of 64
    check(lambda a, b: nf.depthwise_conv2d(a, b, 1, "valid"), x, normal(1, 1, 4, 1))


def test_conv3d_int32_wraps_and_bool_stores_modulo_256(gpu):
    x = RNG.integers(-(2**31), 2**31, (1, 4, 4, 3, 2), dtype=np.int64).astype(np.int32)
    f = RNG.integers(-1000, 1000, (2, 2, 2, 2, 3)).astype(np.int32)
    check(lambda a, b: nf.conv3d(a, b, 1, "same"), x, f, exact=True)
    xb = RNG.random((1, 3, 3, 3, 2)) < 0.7
    fb = RNG.integers(0, 300, (2, 2, 2, 2, 2)).astype(np.int32)
    check(lambda a, b: nf.conv3d(a, b, 1, "valid"), xb, fb, exact=True)
    conv = lambda a, b: nf.conv3d(a, b, (1, 2, 1), "same", "NDHWC", 1)  # noqa: E731
    x3, f3 = normal(2, 5, 4, 3, 2), normal(2, 3, 2, 2, 3)
    check(lambda a, b: nf.grad(lambda t: conv(t, b))(a), x3, f3)
    check(lambda a, b: nf.grad(lambda t: conv(a, t))(b), x3, f3)


# ----------------------------------------------------------------------------- dilation


def test_dilation_nan_and_empty_windows(gpu):
    x = normal(1, 6, 5, 2)
    x[0, 2, 3, 1] = np.nan
    f = normal(3, 2, 2)
    check(lambda a, b: nf.dilation2d(a, b, 1, "same", 2), x, f)
    check(lambda a, b: nf.dilation2d(a, b, 2, 3), x, f)  # windows entirely in the padding
    dy = normal(1, 6, 5, 2)
    for name in ("Dilation2DBackpropInput", "Dilation2DBackpropFilter"):
        check(kernel(name, strides=(2, 1), pad=3, dilations=(1, 1)), x, f, normal(1, 5, 10, 2))
        check(kernel(name, strides=(1, 1), pad="same", dilations=(2, 2)), x, f, dy)


def test_dilation_int32_is_exact_past_2_to_31(gpu):
    x = RNG.integers(2**31 - 40, 2**31, (1, 5, 5, 2), dtype=np.int64).astype(np.int32)
    x[0, :, :, 1] = RNG.integers(-(2**31), -(2**31) + 40, (5, 5))
    f = np.array([[[30, -30], [-20, 20]], [[0, 0], [25, -25]]], np.int32)
    check(lambda a, b: nf.dilation2d(a, b, 1, "same"), x, f, exact=True)
    check(lambda a, b: nf.dilation2d(a, b, 2, 2), x, f, exact=True)
    dy = RNG.integers(-3, 3, (1, 5, 5, 2)).astype(np.int32)
    for name in ("Dilation2DBackpropInput", "Dilation2DBackpropFilter"):
        check(kernel(name, strides=(1, 1), pad="same", dilations=(1, 1)), x, f, dy, exact=True)


def test_dilation_filter_backprop_dispatch_split(gpu):
    x, f = normal(1, 2, 2, 70000), normal(1, 1, 70000)
    check(
        kernel("Dilation2DBackpropFilter", strides=(1, 1), pad="valid", dilations=(1, 1)), x, f, normal(1, 2, 2, 70000)
    )


# ----------------------------------------------------------------------------- modes


@pytest.mark.parametrize("flag", ["WEBGPU_FLOAT16", "WEBGPU_USE_SHAPES_UNIFORMS"])
def test_float16_storage_and_uniforms_off(gpu, flag):
    if flag == "WEBGPU_FLOAT16" and not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    nf.env().set(flag, flag == "WEBGPU_FLOAT16")
    tol = 1e-1 if flag == "WEBGPU_FLOAT16" else 1e-4
    check(lambda a, b: nf.mat_mul(a, b, False, True), normal(2, 20, 30), normal(40, 30), tol=tol)
    check(lambda a, b, c: nf.fused.conv2d(x=a, filter=b, strides=2, pad="same", bias=c, activation="relu"),
          normal(1, 9, 9, 3), normal(3, 3, 3, 5), normal(5), tol=tol)  # fmt: skip
    check(lambda a, b: nf.depthwise_conv2d(a, b, 1, "same"), normal(1, 6, 6, 2), normal(3, 3, 2, 2), tol=tol)
    check(lambda a, b: nf.dilation2d(a, b, 1, "valid"), normal(1, 6, 6, 2), normal(2, 2, 2), tol=tol)
    check(lambda a, b: nf.conv3d(a, b, 1, "same"), normal(1, 3, 4, 4, 2), normal(2, 2, 2, 2, 2), tol=tol)
    if flag == "WEBGPU_USE_SHAPES_UNIFORMS":  # without uniforms every shape compiles its own program
        before = gpu.num_compiled_programs
        check(lambda a, b: nf.mat_mul(a, b), normal(3, 5), normal(5, 2))
        check(lambda a, b: nf.mat_mul(a, b), normal(4, 5), normal(5, 2))
        assert gpu.num_compiled_programs == before + 2


def test_one_program_serves_every_shape_with_uniforms(gpu):
    check(lambda a, b: nf.mat_mul(a, b), normal(3, 5), normal(5, 2))
    before = gpu.num_compiled_programs
    check(lambda a, b: nf.mat_mul(a, b), normal(17, 9), normal(9, 70))
    check(lambda a, b: nf.conv2d(a, b, 1, "same"), normal(1, 4, 4, 2), normal(3, 3, 2, 2))
    after_first_conv = gpu.num_compiled_programs
    check(lambda a, b: nf.conv2d(a, b, 2, "valid"), normal(2, 9, 7, 3), normal(2, 2, 3, 5))
    assert gpu.num_compiled_programs == after_first_conv
    assert after_first_conv - before <= 1


@pytest.mark.parametrize("activation", ["linear", "relu", "leakyrelu"])
def test_residual_fused_conv_stays_on_the_gpu(gpu, activation):
    """ndflow's residual input (fused conv + bias + add + activation, from the graph optimizer) runs as GPU
    programs and matches the cpu backend."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 6, 6, 3)), rng.standard_normal((3, 3, 3, 4))
    b, r = rng.standard_normal(4), rng.standard_normal((1, 6, 6, 4))
    results = []
    for name in ("cpu", "webgpu"):
        nf.set_backend(name)
        ts = [nf.tensor(a.astype(np.float32)) for a in (x, w, b, r)]
        y = nf.fused.conv2d(x=ts[0], filter=ts[1], strides=1, pad="same", bias=ts[2], activation=activation,
                            add=ts[3])  # fmt: skip
        if name == "webgpu":
            assert gpu.on_gpu(y.data_id) and not gpu.on_cpu(y.data_id)
        results.append(y.numpy())
        nf.dispose([*ts, y])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4)
