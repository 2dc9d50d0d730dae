"""The webgpu element-wise family's GPU programs (kernels/unary.py, activation.py, binary.py, logical.py,
cast.py, creation.py): registration, outputs left on the GPU, and what the oracle fixtures miss on the GPU
path: special values (NaN, infinities, signed zeros, int32 extremes) against the cpu kernels for every
kernel and dtype, dispatches split over 65535 workgroups, broadcasting with strides 0, AddN over more inputs
than a program binds, float16 storage, shape uniforms off."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

from ndflow.backends.webgpu import FORWARDED, GPU_KERNELS  # noqa: E402

UNARY = [
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf", "Exp", "Expm1",
    "Floor", "IsFinite", "IsInf", "IsNan", "Log", "Log1p", "Neg", "Reciprocal", "Round", "Rsqrt", "Sign", "Sin",
    "Sinh", "Sqrt", "Square", "Tan", "Tanh", "Relu", "Relu6", "Elu", "Selu", "Sigmoid", "Softplus", "LogicalNot",
]  # fmt: skip
BINARY = [
    "Add", "Sub", "Multiply", "RealDiv", "FloorDiv", "Mod", "Pow", "Maximum", "Minimum", "SquaredDifference",
    "Atan2", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr",
    "LogicalXor", "Prelu", "EluGrad",
]  # fmt: skip
WITH_ATTRS = {
    "Step": {"alpha": 0.25},
    "LeakyRelu": {"alpha": 0.2},
    "ClipByValue": {"clip_value_min": -1.5, "clip_value_max": 2.5},
}
OTHERS = ["BitwiseAnd", "Select", "Cast", "AddN", "Fill", "Range", "LinSpace", "ZerosLike", "OnesLike"]
FAMILY = UNARY + BINARY + list(WITH_ATTRS) + OTHERS

F32_SPECIAL = np.array(
    [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.999, -1e-6, 1e-30,
     7.25, -7.25, 20.0, -20.0, 88.0, 100.0, -100.0, 1e10, -1e10, 3e38],
    dtype=np.float32,
)  # fmt: skip
I32_SPECIAL = np.array(
    [0, 1, -1, 2, -2, 3, 5, -7, 30, -30, 100, 1000, 2**24 + 1, 2**31 - 1, -(2**31), 46341, -46341, 255, 256],
    dtype=np.int32,
)  # fmt: skip
BOOL_VALUES = np.array([True, False, True, True, False], dtype=bool)


def _on_gpu(t) -> bool:
    return ENGINE.backend.on_gpu(t.data_id)


def _run(backend: str, kernel: str, arrays: list[np.ndarray], attrs: dict | None) -> tuple[np.ndarray, str, bool]:
    """The kernel's output values, dtype and whether it stayed on the GPU, run on ``backend``."""
    previous = nf.get_backend()
    nf.set_backend(backend)
    inputs = [nf.tensor(a) for a in arrays]
    out = None
    try:
        out = ENGINE.run_kernel(kernel, tuple(inputs), attrs)
        on_gpu = backend == "webgpu" and _on_gpu(out)
        return out.numpy(), out.dtype, on_gpu
    finally:
        nf.dispose([*inputs, *([out] if out is not None else [])])
        nf.set_backend(previous)


def _same(
    kernel: str, arrays: list[np.ndarray], attrs: dict | None = None, *, atol: float = 1e-3, shared: bool = False
) -> None:
    """The GPU program's output equals the cpu kernel's: exactly for int32/bool, within the oracle's float
    tolerance (atol + 1e-5 relative) with NaN and infinities at the same places for float32. The output must
    be on the GPU unless it is empty or ``shared`` (an output that shares its input's data)."""
    want, want_dtype, _ = _run("cpu", kernel, arrays, attrs)
    got, got_dtype, on_gpu = _run("webgpu", kernel, arrays, attrs)
    where = f"{kernel}({', '.join(str(a.dtype) for a in arrays)})"
    assert got_dtype == want_dtype, f"{where}: dtype {got_dtype} != cpu {want_dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != cpu {want.shape}"
    assert on_gpu or shared or got.size == 0, f"{where}: the output did not stay on the GPU"
    if want_dtype != "float32":
        np.testing.assert_array_equal(got, want, err_msg=f"{where} on {[a.tolist() for a in arrays]}")
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{where}: NaN differ")
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)], err_msg=where)
    np.testing.assert_allclose(got[finite], want[finite], atol=atol, rtol=1e-5, err_msg=where)


def test_family_kernels_have_gpu_programs():
    missing = [k for k in FAMILY if k not in GPU_KERNELS or k in FORWARDED]
    assert not missing, f"forwarded instead of run on the GPU: {missing}"


@pytest.mark.parametrize("kernel", UNARY + list(WITH_ATTRS))
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_unary_special_values_match_cpu(gpu, kernel, dtype):
    x = {"float32": F32_SPECIAL, "int32": I32_SPECIAL, "bool": BOOL_VALUES}[dtype]
    if kernel in ("Sin", "Cos", "Tan"):  # reduced exactly up to 1e5 only (see kernels/unary.py)
        x = x[~(np.abs(x.astype(np.float64)) > 1e5)]
    if kernel == "Selu" and dtype == "int32":  # scaled in f32: exact below 2**20 (see kernels/activation.py)
        x = x[np.abs(x.astype(np.float64)) < 2**20]
    _same(kernel, [x], WITH_ATTRS.get(kernel))


@pytest.mark.parametrize("kernel", BINARY + ["BitwiseAnd"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_binary_special_values_match_cpu(gpu, kernel, dtype):
    if kernel == "BitwiseAnd" and dtype == "float32":
        pytest.skip("bitwise_and takes int32 and bool only")
    if kernel == "Pow" and dtype == "int32":
        pytest.skip("powers between 2**53 and 2**86 differ by design (kernels/binary.py): see the dedicated test")
    base = {"float32": F32_SPECIAL, "int32": I32_SPECIAL, "bool": BOOL_VALUES}[dtype]
    a = np.repeat(base, base.size)  # every pair of special values
    b = np.tile(base, base.size)
    _same(kernel, [a, b])


def test_int32_floor_division_modulo_and_power_wrap_as_the_cpu_kernel(gpu):
    a = np.array([7, -7, 7, -7, 0, 5, -(2**31), -(2**31), 2**31 - 1, 3, 2, -3, 1, -1, 0], np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, -1, 1, -1, 21, 31, 21, -5, -5, -3], np.int32)
    for kernel in ("FloorDiv", "Mod", "Pow", "RealDiv", "Atan2", "SquaredDifference", "Multiply"):
        _same(kernel, [a, b])


def test_float_modulo_is_exact_fmod(gpu):
    a = np.array([1e20, -1e20, 5.5, -5.5, 3e38, 1e-30, 7.0, 0.3], np.float32)
    b = np.array([3.0, 3.0, 2.0, 2.0, 7.0, 3e-31, 0.1, -0.1], np.float32)  # normal numbers: GPUs may flush
    # subnormals to zero
    _same("Mod", [a, b], atol=0.0)
    _same("FloorDiv", [a, b])


def test_cast_between_gpu_dtypes_matches_cpu(gpu):
    floats = np.array([math.nan, math.inf, -math.inf, 2.9, -2.9, 3e9, -3e9, 1e20, -0.0, 0.5], np.float32)
    for src in (floats, I32_SPECIAL, BOOL_VALUES):
        for dtype in ("float32", "int32", "bool"):
            _same("Cast", [src], {"dtype": dtype}, shared=str(src.dtype).startswith(dtype[:3]))


def test_select_broadcasts_all_three_inputs(gpu):
    cond = np.array([[True], [False], [True]])
    a = np.arange(4, dtype=np.float32)
    b = np.full((2, 1, 1), math.nan, np.float32)
    _same("Select", [cond, a, b])
    _same("Select", [cond, np.arange(4, dtype=np.int32), np.zeros((2, 1, 1), np.int32)])


def test_creation_kernels_match_cpu(gpu):
    for dtype, value in (("float32", 2.5), ("float32", math.nan), ("int32", -(2**31)), ("bool", True)):
        _same("Fill", [], {"shape": [2, 3], "value": value, "dtype": dtype})
    for attrs in ({"start": 0, "stop": 10, "step": 3, "dtype": "int32"},
                  {"start": -(2**31), "stop": -(2**31) + 10, "step": 3, "dtype": "int32"},
                  {"start": 1.5, "stop": -2, "step": -0.5, "dtype": "float32"}):  # fmt: skip
        _same("Range", [], attrs)
    # fractional int32 ranges are float64 values truncated: the cpu kernel computes them (0.7 * 90 is
    # 62.99999999999999 in float64 but 63 in f32), so the output is not a GPU program's
    for attrs in ({"start": 0.5, "stop": 5, "step": 0.75, "dtype": "int32"},
                  {"start": 0, "stop": 100, "step": 0.7, "dtype": "int32"}):  # fmt: skip
        _same("Range", [], attrs, shared=True)
    _same("LinSpace", [], {"start": -1.0, "stop": 1.0, "num": 9})
    for x in (F32_SPECIAL, I32_SPECIAL, BOOL_VALUES):
        _same("ZerosLike", [x])
        _same("OnesLike", [x])


def test_dispatch_split_over_65535_workgroups(gpu):
    n = 65535 * 64 + 3  # one more workgroup than a dispatch dimension holds
    x = nf.range(0, n, 1, "int32")
    y = nf.tidy(lambda: nf.add(x, nf.scalar(1, "int32")))
    z = nf.greater(y, x)
    assert _on_gpu(y) and _on_gpu(z)
    values = y.numpy()
    assert values[0] == 1 and values[-1] == n and values[65535 * 64] == 65535 * 64 + 1
    assert bool(z.numpy().all())
    nf.dispose([x, y, z])


def test_broadcasting_with_zero_strides(gpu):
    rng = np.random.default_rng(0)
    for sa, sb in (((3, 1, 4), (1, 5, 1)), ((2, 3, 4), (3, 1)), ((4,), (2, 3, 1)), ((1,), (2, 2)), ((), (3,))):
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        for kernel in ("Add", "Maximum", "Pow", "Less", "Prelu", "Atan2"):
            _same(kernel, [a, b])


def test_add_n_over_more_inputs_than_a_program_binds(gpu):
    limit = gpu.gpu.limits["max-storage-buffers-per-shader-stage"]
    rng = np.random.default_rng(1)
    for dtype in ("float32", "int32", "bool"):
        arrays = [rng.integers(-3, 4, (2, 3)).astype(dtype) for _ in range(2 * limit + 1)]
        _same("AddN", arrays)
    _same("AddN", [np.ones(300, bool)] * 256)  # a bool sum is its count modulo 256: all false


def test_float16_storage(gpu):
    if not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    nf.env().set("WEBGPU_FLOAT16", True)
    x = nf.tensor(np.linspace(-3, 3, 13, dtype=np.float32))
    outs = nf.tidy(lambda: [nf.exp(x), nf.tanh(x), nf.sigmoid(x), nf.add(x, x), nf.pow(x, nf.scalar(2.0)), nf.erf(x),
                            nf.cast(nf.mul(x, nf.scalar(10.0)), "int32"), nf.greater(x, nf.scalar(0.5))])  # fmt: skip
    v = np.linspace(-3, 3, 13)
    wants = [np.exp(v), np.tanh(v), 1 / (1 + np.exp(-v)), 2 * v, v**2, [math.erf(t) for t in v],
             np.trunc(v * 10), v > 0.5]  # fmt: skip
    for out, want in zip(outs, wants, strict=True):
        assert _on_gpu(out)
        np.testing.assert_allclose(out.numpy().astype(np.float64), want, atol=1e-1, rtol=1e-2)
    assert gpu.float_precision() == 16
    nf.dispose([x, *outs])


def test_shape_uniforms_off(gpu):
    nf.env().set("WEBGPU_USE_SHAPES_UNIFORMS", False)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 1)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    _same("SquaredDifference", [a, b])
    _same("ClipByValue", [I32_SPECIAL], {"clip_value_min": -3.5, "clip_value_max": 1e12})
    _same("Step", [F32_SPECIAL], {"alpha": -0.5})
    _same("Range", [], {"start": 2, "stop": 9, "step": 2, "dtype": "int32"})


def test_ops_leave_their_outputs_on_the_gpu(gpu):
    x = nf.tensor([-1.5, 0.0, 2.0])
    outs = nf.tidy(
        lambda: [nf.abs(x), nf.relu(x), nf.leaky_relu(x), nf.step(x), nf.clip_by_value(x, 0, 1), nf.add_n([x, x, x]),
                 nf.where(nf.greater(x, 0), x, nf.neg(x)), nf.cast(x, "bool"), nf.zeros_like(x), nf.ones_like(x),
                 nf.fill([2], 3.0), nf.linspace(0, 1, 4), nf.range(0, 4), nf.logical_not(nf.equal(x, x))]
    )  # fmt: skip
    assert all(_on_gpu(t) for t in outs)
    nf.dispose([x, *outs])
