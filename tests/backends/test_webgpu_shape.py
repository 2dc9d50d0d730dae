"""The webgpu shape/slicing/gather family's GPU programs (kernels/shape.py, slicing.py, transform.py,
selection.py, spatial.py, matrix_shape.py): registration, outputs left on the GPU, and the cases the oracle
fixtures miss on the GPU path: dispatches split over 65535 workgroups, many inputs or outputs (storage buffer
limit), broadcasting with strides 0, duplicate scatter indices, indices living on the GPU, float16 storage,
shape uniforms off, one program for every shape of a rank."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

from ndflow.backends.webgpu import FORWARDED, GPU_KERNELS  # noqa: E402

FAMILY = [
    "Reshape", "ExpandDims", "Identity", "Transpose", "Slice", "StridedSlice", "GatherV2", "Concat", "Pack",
    "SplitV", "Unpack", "Tile", "Reverse", "PadV2", "MirrorPad", "BroadcastTo", "OneHot", "GatherNd", "ScatterNd",
    "TensorScatterUpdate", "Diag", "MatrixBandPart", "SpaceToBatchND", "BatchToSpaceND", "DepthToSpace",
]  # fmt: skip


def _rand(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    if dtype == "int32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    return rng.integers(0, 2, shape).astype(bool)


def _on_gpu(t) -> bool:
    return ENGINE.backend.on_gpu(t.data_id)


def test_family_kernels_have_gpu_programs():
    missing = [k for k in FAMILY if k not in GPU_KERNELS or k in FORWARDED]
    assert not missing, f"forwarded instead of run on the GPU: {missing}"
    assert "BroadcastArgs" in FORWARDED  # shape-vector bookkeeping: stays on the CPU (see transform.py)


def _i32(values) -> nf.Tensor:
    return nf.tensor(values, dtype="int32")


# kernel name -> a function of x (a 2 x 3 x 4 tensor) returning the kernel's output(s); every intermediate
# tensor is created inside the tidy that runs it.
FAMILY_OPS = {
    "Reshape": lambda x: nf.reshape(x, [6, 4]),
    "ExpandDims": lambda x: nf.expand_dims(x, 1),
    "Identity": lambda x: nf.clone(x),
    "Transpose": lambda x: nf.transpose(x, [2, 0, 1]),
    "Slice": lambda x: nf.slice(x, [0, 1, 1], [2, 2, 2]),
    "StridedSlice": lambda x: x[:, ::-2, None, 1:],
    "GatherV2": lambda x: nf.gather(x, _i32([2, 0, 2]), 1),
    "Concat": lambda x: nf.concat([x, x[:, :1]], 1),
    "Pack": lambda x: nf.stack([x, x, x], 1),
    "SplitV": lambda x: nf.split(x, [1, 0, 3], 2),
    "Unpack": lambda x: nf.unstack(x, 1),
    "Tile": lambda x: nf.tile(x, [1, 2, 3]),
    "Reverse": lambda x: nf.reverse(x, [0, 2]),
    "PadV2": lambda x: nf.pad(x, [[1, 0], [0, 2], [1, 1]], 7),
    "MirrorPad": lambda x: nf.mirror_pad(x, [[1, 1], [2, 0], [0, 3]], "reflect"),
    "BroadcastTo": lambda x: nf.broadcast_to(x[:, :1], [3, 2, 3, 4]),
    "OneHot": lambda x: nf.one_hot(_i32([0, 3, -1, 2]), 4, 5, -2, x.dtype),
    "GatherNd": lambda x: nf.gather_nd(x, _i32([[1, 2], [0, 0], [1, 2]])),
    "ScatterNd": lambda x: nf.scatter_nd(_i32([[1], [0], [1]]), nf.concat([x, x[:1]], 0)[:, 1:], [2, 2, 4]),
    "TensorScatterUpdate": lambda x: nf.tensor_scatter_update(x, _i32([[1, 2], [0, 1], [1, 2]]), x[1, :]),
    "Diag": lambda x: nf.diag(x[0]),
    "MatrixBandPart": lambda x: nf.linalg.band_part(x, 1, 0),
    "SpaceToBatchND": lambda x: nf.space_to_batch_nd(x.reshape([2, 3, 4, 1]), [2, 2], [[1, 0], [0, 0]]),
    "BatchToSpaceND": lambda x: nf.batch_to_space_nd(x.reshape([4, 3, 2, 1]), [2, 2], [[0, 1], [1, 0]]),
    "DepthToSpace": lambda x: nf.depth_to_space(x.reshape([1, 2, 3, 4]), 2),
}

FLOAT_ONLY = {"DepthToSpace"}


def _run(fn, values: np.ndarray, dtype: str) -> list[tuple[np.ndarray, bool]]:
    """The outputs' values of ``fn`` on the active backend, with whether each was left on the GPU."""

    def body():
        x = nf.tensor(values, dtype=dtype)
        if nf.get_backend() == "webgpu" and dtype != "bool":
            x = x + nf.zeros_like(x)  # the input lives on the GPU only (a GPU program wrote it)
        result = fn(x)
        return list(result) if isinstance(result, tuple | list) else [result]

    outputs = nf.tidy(body)
    gpu = nf.get_backend() == "webgpu"
    found = [(t.numpy(), gpu and ENGINE.backend.on_gpu(t.data_id)) for t in outputs]
    nf.dispose(outputs)
    return found


def _expected(fn, values: np.ndarray, dtype: str) -> list[np.ndarray]:
    before = nf.get_backend()
    nf.set_backend("cpu")
    try:
        return [v for v, _ in _run(fn, values, dtype)]
    finally:
        nf.set_backend(before)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("kernel", sorted(FAMILY_OPS))
def test_family_op_runs_on_the_gpu_as_on_cpu(gpu, kernel, dtype):
    if kernel in FLOAT_ONLY and dtype != "float32":
        pytest.skip(f"{kernel} takes float32 only")
    fn = FAMILY_OPS[kernel]
    values = _rand((2, 3, 4), dtype, seed=len(kernel))
    if dtype == "bool" and kernel in ("PadV2",):
        fn = lambda x: nf.pad(x, [[1, 0], [0, 2], [1, 1]], 1)  # noqa: E731
    want = _expected(fn, values, dtype)
    got = _run(fn, values, dtype)
    assert len(got) == len(want)
    for (g, on_gpu), w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        if g.size and dtype != "bool":
            assert on_gpu, f"{kernel}: output not left on the GPU"


@pytest.mark.parametrize("mode", ["float16", "no_uniforms"])
def test_family_in_float16_and_without_shape_uniforms(gpu, mode):
    if mode == "float16":
        if not gpu.gpu.has_f16:
            pytest.skip("the adapter has no shader-f16")
        nf.env().set("WEBGPU_FLOAT16", True)
        assert gpu.float_precision() == 16
    else:
        nf.env().set("WEBGPU_USE_SHAPES_UNIFORMS", False)
    values = _rand((2, 3, 4), "float32", seed=1)
    for kernel, fn in FAMILY_OPS.items():
        want = _expected(fn, values, "float32")
        got = _run(fn, values, "float32")
        for (g, on_gpu), w in zip(got, want, strict=True):
            assert g.shape == w.shape, kernel
            tol = 1e-1 if mode == "float16" else 0
            np.testing.assert_allclose(g, w, atol=tol, rtol=tol, err_msg=kernel)
            assert on_gpu or not g.size, kernel


def test_dispatch_split_beyond_65535_workgroups(gpu):
    """More than 65535 * 64 outputs: the element-wise entry spreads the workgroups over two grid dimensions."""
    a = np.arange(2049 * 2050, dtype=np.int32).reshape(2049, 2050)
    x = nf.tensor(a)
    y = nf.transpose(x)
    z = nf.pad(x, [[1, 2], [0, 1]], -5)
    try:
        assert y.size > 65535 * 64
        np.testing.assert_array_equal(y.numpy(), a.T)
        np.testing.assert_array_equal(z.numpy(), np.pad(a, [[1, 2], [0, 1]], constant_values=-5))
    finally:
        nf.dispose([x, y, z])


def test_many_inputs_and_outputs_in_chunks(gpu, monkeypatch):
    """With 4 storage buffers per stage, a program binds 2 tensors besides one more and the parameters:
    concat/stack join in groups, split/unstack write their parts over several programs."""
    monkeypatch.setitem(gpu.gpu.limits, "max-storage-buffers-per-shader-stage", 4)
    arrays = [_rand((2, i + 1, 3), "float32", seed=i) for i in range(7)]
    xs = [nf.tensor(a) for a in arrays]
    joined = nf.concat(xs, 1)
    firsts = [nf.tensor(a[:, :1]) for a in arrays[:5]]
    stacked = nf.stack(firsts, 2)
    parts = nf.split(joined, [1, 2, 0, 3, 4, 5, 6, 7], 1)
    rows = nf.unstack(joined, 1)
    try:
        np.testing.assert_array_equal(joined.numpy(), np.concatenate(arrays, 1))
        np.testing.assert_array_equal(stacked.numpy(), np.stack([a[:, :1] for a in arrays[:5]], 2))
        wants = np.split(np.concatenate(arrays, 1), np.cumsum([1, 2, 0, 3, 4, 5, 6]), 1)
        for part, want in zip(parts, wants, strict=True):
            np.testing.assert_array_equal(part.numpy(), want)
        for i, row in enumerate(rows):
            np.testing.assert_array_equal(row.numpy(), np.concatenate(arrays, 1)[:, i])
        assert all(_on_gpu(t) for t in [joined, stacked, *rows])
    finally:
        nf.dispose(xs + firsts + [joined, stacked, *parts, *rows])


def test_broadcast_to_middle_and_trailing_axes(gpu):
    a = _rand((3, 1, 4, 1), "int32")
    x = nf.tensor(a)
    y = nf.broadcast_to(x, [2, 3, 5, 4, 6])
    try:
        np.testing.assert_array_equal(y.numpy(), np.broadcast_to(a, (2, 3, 5, 4, 6)))
    finally:
        nf.dispose([x, y])


def test_one_program_serves_every_shape_of_a_rank(gpu):
    def run(shape):
        return nf.tidy(
            lambda: [
                nf.transpose(nf.tensor(_rand(shape))).numpy(),
                nf.pad(nf.tensor(_rand(shape)), [[1, 0], [2, 1]]).numpy(),
                nf.gather(nf.tensor(_rand(shape)), _i32([1, 0]), 1).numpy(),
                nf.concat([nf.tensor(_rand(shape)), nf.tensor(_rand(shape))], 0).numpy(),
            ]
        )

    run((3, 4))
    compiled = gpu.num_compiled_programs
    run((5, 7))
    run((2, 9))
    assert gpu.num_compiled_programs == compiled


def test_indices_on_the_cpu_are_checked_those_on_the_gpu_are_not_read_back(gpu):
    x = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    bad = _i32([0, 3])
    with pytest.raises(IndexError, match=r"gather: index 3 is not in \[0, 2\] along axis 0"):
        nf.gather(x, bad)
    with pytest.raises(IndexError, match=r"gather_nd: index \[0, 4\] does not index into shape \[3, 4\]"):
        nf.tidy(lambda: nf.gather_nd(x, _i32([[0, 4]])))
    on_gpu = nf.tidy(lambda: bad + nf.zeros([2], "int32"))  # computed on the GPU: no CPU copy to check
    y = nf.gather(x, on_gpu)
    try:
        assert not gpu.on_cpu(on_gpu.data_id)
        np.testing.assert_array_equal(y.numpy(), [[0, 1, 2, 3], [0, 0, 0, 0]])  # out of range: 0, as TF.js GPUs
        assert not gpu.on_cpu(on_gpu.data_id)  # the indices were never read back
    finally:
        nf.dispose([x, bad, on_gpu, y])


def test_scatter_nd_adds_duplicates_in_update_order(gpu):
    """(0 + 1e8) + 1 - 1e8 is 0 in float32, 1e8 - 1e8 + 1 is 1: the GPU sums in the cpu kernel's order."""
    idx = _i32([[1], [0], [1], [1], [2]])
    upd = nf.tensor([[1e8, 1.0], [5.0, 6.0], [1.0, 2.0], [-1e8, 3.0], [7.0, 8.0]])
    ints = nf.tensor([[2**31 - 1], [1], [1], [4], [1]], dtype="int32")
    flags = nf.tensor([[True], [False], [True], [False], [False]])
    y = nf.scatter_nd(idx, upd, [4, 2])
    yi = nf.scatter_nd(idx, ints, [3, 1])
    yb = nf.scatter_nd(idx, flags, [3, 1])
    try:
        want = np.zeros((4, 2), np.float32)
        np.add.at(want, [1, 0, 1, 1, 2], upd.numpy())
        np.testing.assert_array_equal(y.numpy(), want)
        assert y.numpy()[1, 0] == 0.0
        np.testing.assert_array_equal(yi.numpy()[:, 0], [1, -(2**31) + 4, 1])  # int32 wraps
        np.testing.assert_array_equal(yb.numpy()[:, 0], [False, True, False])  # bool: logical or
        assert _on_gpu(y) and _on_gpu(yi) and _on_gpu(yb)
    finally:
        nf.dispose([idx, upd, ints, flags, y, yi, yb])


def test_tensor_scatter_update_last_duplicate_wins(gpu):
    x = nf.zeros([3, 2])
    idx = _i32([[2], [0], [2]])
    upd = nf.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = nf.tensor_scatter_update(x, idx, upd)
    try:
        np.testing.assert_array_equal(y.numpy(), [[3, 4], [0, 0], [5, 6]])
    finally:
        nf.dispose([x, idx, upd, y])


def test_band_part_reads_its_bounds_on_the_gpu(gpu):
    a = _rand((2, 4, 5))
    x = nf.tensor(a)
    lower = nf.tidy(lambda: _i32(1) + _i32(0))  # int32 scalars computed on the GPU
    upper = nf.tidy(lambda: _i32(-1) + _i32(0))
    y = nf.linalg.band_part(x, lower, upper)
    try:
        rows, cols = np.indices((4, 5))
        np.testing.assert_array_equal(y.numpy(), np.where(rows - cols <= 1, a, 0))
        assert not gpu.on_cpu(lower.data_id) and not gpu.on_cpu(upper.data_id)
    finally:
        nf.dispose([x, lower, upper, y])


def test_empty_parts_and_inputs(gpu):
    a = _rand((2, 3))
    x = nf.tensor(a)
    empty = nf.zeros([2, 0])
    joined = nf.concat([empty, x, empty], 1)
    padded = nf.pad(empty, [[0, 1], [2, 0]], 3)
    picked = nf.tidy(lambda: nf.gather(x, nf.zeros([0], "int32"), 1))
    parts = nf.split(x, [0, 3, 0], 1)
    try:
        np.testing.assert_array_equal(joined.numpy(), a)
        np.testing.assert_array_equal(padded.numpy(), np.full((3, 2), 3, np.float32))
        assert picked.shape == (2, 0) and [p.shape for p in parts] == [(2, 0), (2, 3), (2, 0)]
        np.testing.assert_array_equal(parts[1].numpy(), a)
    finally:
        nf.dispose([x, empty, joined, padded, picked, *parts])
