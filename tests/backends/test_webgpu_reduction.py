"""webgpu GPU programs of the reduction family (reductions, scans, softmax, segments, search) against the
cpu backend: the cases the oracle fixtures leave out for the GPU path (long reductions split in chunks, any
axis set, dispatches over 65535 workgroups, float16 storage, shape uniforms off, NaN and int32 wrap-around)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("wgpu")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

import ndflow as nf  # noqa: E402
from ndflow.core.engine import ENGINE  # noqa: E402

KERNELS = [
    "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "Cumsum", "Cumprod", "Softmax",
    "LogSoftmax", "UnsortedSegmentSum", "Bincount", "DenseBincount", "TopK", "SearchSorted", "LowerBound",
    "UpperBound",
]  # fmt: skip


def on_cpu(fn, *args, **kwargs) -> list[np.ndarray]:
    """``fn`` on the cpu backend with array arguments as tensors: its outputs as numpy arrays."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    tensors = [nf.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        result = fn(*tensors, **kwargs)
        outputs = list(result) if isinstance(result, tuple | list) else [result]
        values = [t.numpy() for t in outputs]
        nf.dispose(outputs)
        return values
    finally:
        nf.dispose([t for t in tensors if isinstance(t, nf.Tensor)])
        nf.set_backend(previous)


def on_gpu(fn, *args, **kwargs) -> list[np.ndarray]:
    """``fn`` on webgpu with array arguments as tensors: its outputs, each checked to be computed on the GPU."""
    tensors = [nf.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        result = fn(*tensors, **kwargs)
        outputs = list(result) if isinstance(result, tuple | list) else [result]
        for t in outputs:
            assert t.size == 0 or ENGINE.backend.on_gpu(t.data_id), f"{fn.__name__}: output left on the CPU"
        values = [t.numpy() for t in outputs]
        nf.dispose(outputs)
        return values
    finally:
        nf.dispose([t for t in tensors if isinstance(t, nf.Tensor)])


def check(fn, *args, rtol: float = 0.0, atol: float = 0.0, **kwargs) -> None:
    """The webgpu result of ``fn`` equals the cpu result (within ``rtol``/``atol`` for floats)."""
    got, want = on_gpu(fn, *args, **kwargs), on_cpu(fn, *args, **kwargs)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (fn.__name__, g.shape, w.shape, g.dtype, w.dtype)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=fn.__name__)
        else:
            np.testing.assert_array_equal(g, w, err_msg=fn.__name__)


def test_kernels_have_gpu_programs():
    from ndflow.backends.webgpu import FORWARDED, GPU_KERNELS

    for name in KERNELS:
        assert name in GPU_KERNELS and name not in FORWARDED, name


def _data(rng, shape, dtype):
    values = rng.standard_normal(shape).astype(np.float32) * 3
    if dtype == "int32":
        return (values * 1000).astype(np.int32)
    if dtype == "bool":
        return values > 0
    return values


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (4, 1, 6), (2, 70, 5)])
def test_reductions_over_every_axis_set(webgpu, shape):
    rng = np.random.default_rng(0)
    axis_sets = [None] + [
        list(c) for k in range(1, len(shape) + 1) for c in itertools.combinations(range(len(shape)), k)
    ]
    for dtype in ("float32", "int32", "bool"):
        x = _data(rng, shape, dtype)
        ops = ["sum", "mean", "max", "min"] + (["all", "any"] if dtype == "bool" else ["prod"])
        for op, axes, keep in itertools.product(ops, axis_sets, (False, True)):
            check(getattr(nf, op), x, axes, keep, rtol=0 if op == "prod" else 2e-6, atol=0 if op == "prod" else 2e-5)
        for axis in range(len(shape)):
            check(nf.arg_max, x, axis)
            check(nf.arg_min, x, axis)


def test_long_reductions_split_in_chunks(webgpu):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 50_000)).astype(np.float32)
    x[1, 777] = np.nan
    x[2, 4321] = 100.0  # a maximum in a later chunk
    x[2, 4400] = 100.0  # a tie: the first index wins
    scale = np.abs(x[np.isfinite(x)]).sum()
    for op in ("sum", "mean"):
        check(getattr(nf, op), x, 1, atol=1e-6 * scale)
        check(getattr(nf, op), x, None, atol=1e-6 * scale)
    for op in ("max", "min", "arg_max", "arg_min"):
        check(getattr(nf, op), x, 1)
    check(nf.prod, 1 + x[:, :200] / 100, 1)
    ints = rng.integers(-(2**30), 2**30, 200_000).astype(np.int32)
    check(nf.sum, ints)  # wraps around as int32, whatever the order of the partial sums
    check(nf.prod, ints[:1000] | 1)


def test_reduction_dispatch_over_65535_workgroups(webgpu):
    x = np.arange((65535 * 64 + 3) * 2, dtype=np.float32).reshape(-1, 2) % 7 - 3
    check(nf.sum, x, 1)  # 4.2M outputs: the element-wise dispatch splits in two dimensions


def test_workgroup_grids_split_at_the_limit(webgpu, monkeypatch):
    # 65535 workgroups of the tree forms are slow on lavapipe: lower the limit to see the grid split
    monkeypatch.setitem(webgpu.gpu.limits, "max-compute-workgroups-per-dimension", 7)
    rows = np.random.default_rng(2).standard_normal((30, 130)).astype(np.float32)
    check(nf.max, rows, 1)  # 30 workgroups: a 7 x 5 grid
    check(nf.arg_min, rows, 1)
    check(nf.softmax, rows, rtol=1e-5, atol=1e-7)
    check(nf.sum, np.ones((3, 40_000), np.float32), 1)  # chunked: 3 x 10 workgroups, then a second pass
    check(nf.bincount, np.arange(1000, dtype=np.int32) % 600, np.zeros(0, np.int32), 600)


def test_nan_and_empty_reductions(webgpu):
    x = np.array([[np.nan, 1.0, 5.0], [2.0, np.nan, -np.inf], [-np.inf, -np.inf, np.nan]], np.float32)
    for op in ("max", "min", "sum", "prod", "arg_max", "arg_min"):
        check(getattr(nf, op), x, 1)
        check(getattr(nf, op), x, 0)
    empty = np.zeros((3, 0), np.float32)
    for op in ("sum", "mean", "max", "min", "prod"):
        check(getattr(nf, op), empty, 1)
        check(getattr(nf, op), empty, 0)
    check(nf.all, np.zeros((2, 0), bool), 1)
    check(nf.any, np.zeros((2, 0), bool), 1)
    with pytest.raises(ValueError, match="arg_max"):
        on_gpu(nf.arg_max, empty, 1)


def test_float_prod_rounds_once(webgpu):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((40, 30)) * 3).astype(np.float32)
    x[0, :] = 1e30  # intermediate products beyond float32 range
    x[1, :] = 1e-30
    x[2, 3], x[3, 4], x[4, 5:7] = np.inf, 0.0, (np.inf, 0.0)
    check(nf.prod, x, 1)
    check(nf.prod, x, 0)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans(webgpu, op):
    rng = np.random.default_rng(4)
    for dtype, shape in itertools.product(("float32", "int32", "bool"), [(7,), (3, 5), (2, 3, 4)]):
        x = _data(rng, shape, dtype)
        for axis, exclusive, reverse in itertools.product(range(len(shape)), (False, True), (False, True)):
            check(getattr(nf, op), x, axis, exclusive, reverse)
    check(getattr(nf, op), (np.arange(200_000, dtype=np.int32) * 7919).reshape(-1, 4), 0)  # wraps
    check(getattr(nf, op), np.zeros((0, 3), np.float32), 1)


@pytest.mark.parametrize("op", [nf.softmax, nf.log_softmax])
def test_softmax_any_axis(webgpu, op):
    rng = np.random.default_rng(5)
    for shape in [(5,), (3, 4), (2, 3, 4), (2, 300, 3), (3, 1000)]:
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        x.reshape(-1)[1] = np.nan
        x.reshape(-1)[2] = -np.inf
        for axis in range(len(shape)):
            check(op, x, axis, rtol=1e-5, atol=1e-6)


def test_segments_and_counts(webgpu):
    rng = np.random.default_rng(6)
    x = rng.integers(0, 12, 60).astype(np.int32)
    wide = (rng.standard_normal(60) * np.exp(rng.standard_normal(60) * 3)).astype(np.float32)
    weights = {"float32": wide, "int32": rng.integers(-(2**30), 2**30, 60).astype(np.int32), "bool": wide > 0}
    for w in list(weights.values()) + [np.zeros(0, np.float32), np.zeros(0, np.int32)]:
        for size in (0, 5, 20):
            check(nf.bincount, x, w, size)  # float sums match the cpu kernel's float64 accumulation
            check(nf.dense_bincount, x, w, size)
            check(nf.dense_bincount, x.reshape(6, 10), w.reshape(6, 10) if w.size else w, size)
            check(nf.dense_bincount, x.reshape(6, 10), w.reshape(6, 10) if w.size else w, size, True)
    ids = rng.integers(-1, 7, (20, 3)).astype(np.int32)
    values = (rng.standard_normal((20, 3, 4)) * np.exp(rng.standard_normal((20, 3, 4)) * 3)).astype(np.float32)
    values[0, 0, :2] = (np.inf, np.nan)
    values[1, 1, 0] = -np.inf
    for n in (0, 3, 7):
        check(nf.unsorted_segment_sum, values, ids, n)
        check(
            nf.unsorted_segment_sum, (np.nan_to_num(values, posinf=1, neginf=-1) * 100).astype(np.int32), ids[:, 0], n
        )
    negative = nf.tensor(np.array([1, -1], np.int32))
    try:
        with pytest.raises(ValueError, match="non-negative"):
            nf.bincount(negative, np.zeros(0, np.float32), 3)
    finally:
        negative.dispose()


def test_topk(webgpu):
    rng = np.random.default_rng(7)
    for dtype in ("float32", "int32", "bool"):
        x = rng.integers(-3, 4, (3, 2, 9)).astype(np.float32)
        x.reshape(-1)[[1, 5, 6]] = (np.nan, -np.inf, -0.0)
        x = x if dtype == "float32" else (np.nan_to_num(x, neginf=-9).astype(np.int32) if dtype == "int32" else x > 0)
        for k, keep_sorted in itertools.product(range(10), (True, False)):
            check(nf.topk, x, k, keep_sorted)


def test_search_sorted_mixed_dtypes_compare_exactly(webgpu):
    rng = np.random.default_rng(8)
    for seq_dtype, val_dtype in itertools.product(("float32", "int32"), repeat=2):
        seq = np.sort(rng.integers(-5, 5, (3, 9))).astype(seq_dtype)
        values = (rng.integers(-12, 12, (3, 6)) / 2).astype(val_dtype)
        if seq_dtype == "int32":
            seq[2, 8] = 2**31 - 1
        if val_dtype == "float32":
            values[0, :2] = (np.nan, np.inf)
            values[2, :2] = (2.0**31, 2.0**31 - 128)
        for side in ("left", "right"):
            check(nf.search_sorted, seq, values, side)
        for kernel in ("LowerBound", "UpperBound"):
            check(lambda s, v, k=kernel: ENGINE.run_kernel(k, (s, v), {}), seq, values)


def test_float16_storage(webgpu):
    if not webgpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    nf.env().set("WEBGPU_FLOAT16", True)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 3000)).astype(np.float32)
    tol = {"rtol": 1e-1, "atol": 1e-1}
    for op in ("sum", "mean", "max", "min"):
        check(getattr(nf, op), x, 1, **tol)
        check(getattr(nf, op), x, None, **tol)
    check(nf.prod, 1 + x[:, :20] / 10, 1, **tol)
    for op in (nf.arg_max, nf.softmax, nf.log_softmax):
        got, want = on_gpu(op, x, 1), on_cpu(op, x, 1)
        if op is nf.arg_max:  # f16 rounding may tie the largest values: compare the values they point at
            np.testing.assert_allclose(x[np.arange(4), got[0]], x[np.arange(4), want[0]], **tol)
        else:
            np.testing.assert_allclose(got[0], want[0], **tol)
    check(nf.cumsum, x[:, :50], 1, **tol)
    check(nf.unsorted_segment_sum, x[:, :8], np.array([0, 2, 0, 1], np.int32), 3, **tol)
    check(nf.topk, np.round(x[:, :20], 1), 5, **tol)


def test_shape_uniforms_off(webgpu):
    nf.env().set("WEBGPU_USE_SHAPES_UNIFORMS", False)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((5, 300)).astype(np.float32)
    for op in ("sum", "max", "prod", "arg_min"):
        check(getattr(nf, op), x, 1, rtol=2e-6, atol=1e-5)
    check(nf.softmax, x, 0, rtol=1e-5, atol=1e-7)
    check(nf.cumprod, x[:, :5], 1, exclusive=True)
    check(nf.topk, x, 4, False)
    wide = (rng.standard_normal(200) * np.exp(rng.standard_normal(200) * 3)).astype(np.float32)
    check(nf.bincount, rng.integers(0, 5, 200).astype(np.int32), wide, 5)  # compensated sums stay exact
    check(nf.search_sorted, np.sort(x, axis=1), x[:, :7])


def test_programs_are_reused_across_shapes(webgpu):
    x1, x2 = nf.tensor(np.ones((3, 300), np.float32)), nf.tensor(np.ones((5, 700), np.float32))
    try:
        nf.dispose(nf.sum(x1, 1))
        before = webgpu.num_compiled_programs
        nf.dispose(nf.sum(x2, 1))
        assert webgpu.num_compiled_programs == before
    finally:
        nf.dispose([x1, x2])
