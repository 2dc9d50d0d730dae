"""The webgpu programs of the pooling, normalization and image kernels (``kernels/pool.py``,
``normalization.py``, ``image.py``): registered as GPU kernels, outputs left on the GPU, and the cases the
oracle fixtures do not reach on the GPU path (the dispatch split past 65535 workgroups, broadcast batch-norm
parameters, float16 storage, shape uniforms off, program reuse across shapes), each against the cpu backend."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ndflow as nf

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

from ndflow.backends.webgpu import FORWARDED, GPU_KERNELS  # noqa: E402

KERNELS = [
    "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "MaxPoolWithArgmax", "MaxPoolGrad", "AvgPoolGrad",
    "MaxPool3DGrad", "AvgPool3DGrad", "FusedBatchNorm", "LRN", "LRNGrad", "ResizeBilinear",
    "ResizeNearestNeighbor", "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "CropAndResize", "FlipLeftRight",
    "RotateWithOffset", "Transform",
]  # fmt: skip

RNG = np.random.default_rng(7)


def _img(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


X4 = _img(2, 7, 6, 3)
X5 = _img(2, 4, 5, 6, 2)
BOXES = np.array([[0, 0, 1, 1], [0.2, 0.1, 0.7, 0.9], [-0.2, 0.3, 0.6, 1.3]], np.float32)
TRANSFORMS = np.array([[1.7, 0.3, -1, -0.2, 1.4, -0.6, 0.01, 0], [0.9, -0.2, 0.5, 0.1, 1.1, 0.3, 0, 0.02]], np.float32)


def _grad(fn: Callable, x: np.ndarray) -> Callable[[], nf.Tensor]:
    def run() -> nf.Tensor:
        t = nf.tensor(x)
        try:
            return nf.grad(lambda v: fn(v).square().sum())(t)
        finally:
            t.dispose()

    return run


def _op(fn: Callable, *arrays: np.ndarray) -> Callable[[], object]:
    def run() -> object:
        ts = [nf.tensor(a) for a in arrays]
        try:
            return fn(*ts)
        finally:
            nf.dispose(ts)

    return run


# (kernel, what runs it): each op call exercises the kernel on a shape that is not a shortcut.
OPS = {
    "MaxPool": _op(lambda x: nf.max_pool(x, 3, 2, "same"), X4),
    "AvgPool": _op(lambda x: nf.avg_pool(x, [3, 2], 1, "valid"), X4),
    "MaxPool3D": _op(lambda x: nf.max_pool3d(x, 2, 1, "same"), X5),
    "AvgPool3D": _op(lambda x: nf.avg_pool3d(x, [2, 3, 2], 2, "same"), X5),
    "MaxPoolWithArgmax": _op(lambda x: list(nf.max_pool_with_argmax(x, 2, 2, "same", True)), X4),
    "MaxPoolGrad": _grad(lambda x: nf.max_pool(x, 3, 2, "same"), X4),
    "AvgPoolGrad": _grad(lambda x: nf.avg_pool(x, 3, 2, "same"), X4),
    "MaxPool3DGrad": _grad(lambda x: nf.max_pool3d(x, 2, 1, "same"), X5),
    "AvgPool3DGrad": _grad(lambda x: nf.avg_pool3d(x, 2, 2, "same"), X5),
    "FusedBatchNorm": _op(
        lambda x, m, v, o, s: nf.batch_norm(x, m, v, o, s, 0.01), X4, _img(3), np.abs(_img(3)), _img(3), _img(3)
    ),
    "LRN": _op(lambda x: nf.local_response_normalization(x, 1, 1.5, 0.5, 0.75), X4),
    "LRNGrad": _grad(lambda x: nf.local_response_normalization(x, 2, 1.0, 0.3, 0.5), X4),
    "ResizeBilinear": _op(lambda x: nf.image.resize_bilinear(x, [11, 4]), X4),
    "ResizeNearestNeighbor": _op(lambda x: nf.image.resize_nearest_neighbor(x, [11, 4], True), X4),
    "ResizeBilinearGrad": _grad(lambda x: nf.image.resize_bilinear(x, [11, 4], False, True), X4),
    "ResizeNearestNeighborGrad": _grad(lambda x: nf.image.resize_nearest_neighbor(x, [3, 13]), X4),
    "CropAndResize": _op(
        lambda x, b, i: nf.image.crop_and_resize(x, b, i, [4, 5], "bilinear", -1.0),
        X4,
        BOXES,
        np.array([0, 1, 1], np.int32),
    ),
    "FlipLeftRight": _op(nf.image.flip_left_right, X4),
    "RotateWithOffset": _op(lambda x: nf.image.rotate_with_offset(x, 0.7, [1.0, 2.0, 3.0], [0.3, 0.6]), X4),
    "Transform": _op(lambda x, t: nf.image.transform(x, t, "bilinear", "reflect", -2.0), X4, TRANSFORMS),
}


def _outputs(result: object) -> list[nf.Tensor]:
    return list(result) if isinstance(result, list | tuple) else [result]  # type: ignore[list-item]


def _on(backend: str, run: Callable[[], object]) -> list[np.ndarray]:
    """Run on ``backend`` (the active one restored) and return the outputs' values."""
    before = nf.get_backend()
    nf.set_backend(backend)
    try:
        outs = _outputs(run())
        values = [t.numpy() for t in outs]
        nf.dispose(outs)
        return values
    finally:
        nf.set_backend(before)


def _compare(run: Callable[[], object], atol: float = 1e-4) -> None:
    want = _on("cpu", run)
    got = _on("webgpu", run)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=atol, atol=atol)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_has_a_gpu_program(kernel):
    assert kernel in GPU_KERNELS
    assert kernel not in FORWARDED


@pytest.mark.parametrize("kernel", KERNELS)
def test_output_stays_on_the_gpu_and_matches_cpu(kernel, gpu):
    outs = _outputs(OPS[kernel]())
    try:
        assert all(gpu.on_gpu(t.data_id) and not gpu.on_cpu(t.data_id) for t in outs)
    finally:
        nf.dispose(outs)
    _compare(OPS[kernel])


@pytest.mark.parametrize("kernel", KERNELS)
def test_float16_storage(kernel, gpu):
    if not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    want = _on("cpu", OPS[kernel])
    nf.env().set("WEBGPU_FLOAT16", True)
    got = _on("webgpu", OPS[kernel])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-1, atol=1e-1)


@pytest.mark.parametrize("kernel", KERNELS)
def test_shape_uniforms_off(kernel, gpu):
    nf.env().set("WEBGPU_USE_SHAPES_UNIFORMS", False)
    _compare(OPS[kernel])


def test_one_program_serves_every_shape(gpu):
    run = _op(lambda x: nf.max_pool(x, 3, 2, "same"), X4)
    _on("webgpu", run)
    compiled = gpu.num_compiled_programs
    for shape, filt, stride in [((1, 9, 8, 5), 2, 1), ((3, 5, 5, 1), [1, 3], [2, 1])]:
        _compare(_op(lambda x, f=filt, s=stride: nf.max_pool(x, f, s, "valid"), _img(*shape)))
    assert gpu.num_compiled_programs == compiled


def test_dispatch_split_past_65535_workgroups(gpu):
    big = _img(1, 1100, 3900, 1)  # 4.29M elements > 65535 * 64
    _compare(_op(nf.image.flip_left_right, big))
    _compare(_op(lambda x: nf.max_pool(x, 2, 1, "same"), big))
    _compare(_op(lambda x: nf.image.resize_nearest_neighbor(x, [1200, 3600]), big))


def test_batch_norm_broadcast_parameters(gpu):
    x = _img(2, 3, 4)
    mean, variance = _img(1, 3, 1), np.abs(_img(1, 3, 4)) + 0.1
    offset, scale = _img(1, 1, 4), _img(2, 1, 1)
    _compare(_op(lambda *t: nf.batch_norm(*t, 0.001), x, mean, variance, offset, scale))
    _compare(_op(lambda a, m, v: nf.batch_norm(a, m, v), x, mean, variance))
    _compare(_op(lambda a, m, v: nf.batch_norm(a, m, v, None, None, 1e-3), _img(), _img(), np.float32(2.0)))


def test_pool_nan_infinity_int_and_ties(gpu):
    x = np.array([np.nan, 1, np.nan, np.nan, -np.inf, 3, 3, 2, np.nan], np.float32).reshape(1, 3, 3, 1)
    _compare(_op(lambda t: nf.max_pool(t, 2, 1, "valid"), x))
    _compare(_op(lambda t: list(nf.max_pool_with_argmax(t, 2, 1, "same")), x))
    ties = np.ones((1, 2, 4, 4, 1), np.float32)
    _compare(_grad(lambda t: nf.max_pool3d(t, 2, 1, "valid"), ties))
    _compare(_grad(lambda t: nf.max_pool(t, 2, 1, "valid"), ties[0]))
    ints = RNG.integers(-(2**31), 2**31 - 1, (2, 5, 5, 3)).astype(np.int32)
    _compare(_op(lambda t: nf.max_pool(t, [2, 3], [1, 2], [[0, 0], [1, 2], [0, 1], [0, 0]]), ints))
    _compare(_op(lambda t: nf.max_pool3d(t, 2, 2, "same"), ints.reshape(1, 2, 5, 5, 3)))
    _compare(_op(lambda t: nf.avg_pool(t, [3, 3], [2, 2], 1, "ceil"), X4))


def test_image_kernels_edge_cases(gpu):
    img = _img(2, 5, 4, 3)
    for method in ("bilinear", "nearest"):
        boxes = np.array([[0.8, 0.9, 0.1, 0.2], [np.nan, 0, 1, 1], [0, 0, 1, 1], [0.1, 0.2, 0.1, 0.2]], np.float32)
        _compare(_op(lambda x, b, m=method: nf.image.crop_and_resize(x, b, [0, 2, 1, -1], [3, 5], m, 7.0), img, boxes))
    for mode in ("constant", "reflect", "wrap", "nearest"):
        for interpolation in ("nearest", "bilinear"):
            _compare(
                _op(lambda x, t, m=mode, i=interpolation: nf.image.transform(x, t, i, m, 0.5, [7, 3]), img, TRANSFORMS)
            )
    _compare(_op(lambda x: nf.image.rotate_with_offset(x, np.pi / 2, 9.0, 0.5), _img(1, 5, 7, 2)))
    for align, half in [(False, False), (True, False), (False, True)]:
        _compare(_grad(lambda x, a=align, h=half: nf.image.resize_bilinear(x, [9, 2], a, h), img))
        _compare(_grad(lambda x, a=align, h=half: nf.image.resize_nearest_neighbor(x, [2, 9], a, h), img))
    ints = RNG.integers(-100, 100, (1, 3, 4, 2)).astype(np.int32)
    _compare(_op(lambda x: nf.image.resize_nearest_neighbor(x, [5, 7], False, True), ints))
