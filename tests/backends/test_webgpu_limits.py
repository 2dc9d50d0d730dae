"""Device limits on the webgpu backend, with the limits shrunk on the adapter at hand (lavapipe here):
element-wise dispatches fold their workgroups into x, y and z; a program beyond maxComputeWorkgroupsPerDimension,
maxStorageBufferBindingSize / maxBufferSize or maxStorageBuffersPerShaderStage raises a LimitError naming the
program, the tensor, its bytes and the limit before anything is recorded, and its kernel runs the cpu kernel."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ndflow as nf

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")

from ndflow.backends.webgpu.buffers import bucket, max_binding_bytes  # noqa: E402
from ndflow.backends.webgpu.kernels import common  # noqa: E402
from ndflow.backends.webgpu.limits import LimitError, fold_groups  # noqa: E402

GROUPS = "max-compute-workgroups-per-dimension"
BINDING = "max-storage-buffer-binding-size"
PROBE = "fn compute(index: i32) { store_out(index, 1.0); }"
RNG = np.random.default_rng(3)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def on_webgpu(fn, *arrays: np.ndarray) -> tuple[np.ndarray, bool]:
    ts = [nf.tensor(a) for a in arrays]
    y = nf.tidy(lambda: fn(*ts))
    on_gpu = nf.backend().on_gpu(y.data_id)
    values = y.numpy()
    nf.dispose([*ts, y])
    return values, on_gpu


def test_fold_groups():
    assert fold_groups(3, 4) == (3, 1, 1)
    assert fold_groups(100, 4) == (4, 4, 7)  # z still too big: run() reports it
    assert fold_groups(100, 4, 2) == (4, 25, 1)
    assert fold_groups(65535 * 3, 65535) == (65535, 3, 1)
    x, y, z = fold_groups(1000, 10)
    assert x * y * z >= 1000 and max(x, y, z) <= 10


def test_bucket_never_passes_the_binding_limit():
    assert bucket(5000) > 5000
    assert bucket(5000, 5000) == 5000
    assert bucket(1022, 1024) == 1024
    assert max_binding_bytes({BINDING: 1024, "max-buffer-size": 4096}) == 1024
    assert max_binding_bytes({BINDING: 1 << 30, "max-buffer-size": 4096}) == 4096


def test_elementwise_folds_into_y_and_z(gpu, monkeypatch):
    monkeypatch.setitem(gpu.gpu.limits, GROUPS, 4)
    a, b = normal(2048), normal(2048)  # 32 workgroups of 64: (4, 4, 2)
    got, on_gpu = on_webgpu(lambda x, y: nf.add(nf.mul(x, y), x), a, b)
    assert on_gpu
    np.testing.assert_allclose(got, a * b + a, rtol=1e-6)


def test_reduction_folds_into_y(gpu, monkeypatch):
    monkeypatch.setitem(gpu.gpu.limits, GROUPS, 4)
    x = normal(13, 7)  # 13 rows > 4 workgroups in x
    got, _ = on_webgpu(lambda t: nf.sum(t, axis=1), x)
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    got, _ = on_webgpu(lambda t: nf.softmax(t), x)
    np.testing.assert_allclose(got, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_dispatch_beyond_the_limit_runs_on_cpu(gpu, monkeypatch, caplog):
    monkeypatch.setitem(gpu.gpu.limits, GROUPS, 4)
    monkeypatch.setattr(common, "_WARNED", set())
    a, b = normal(64 * 4 * 4 * 4 + 1), normal(64 * 4 * 4 * 4 + 1)  # 65 workgroups > 4 * 4 * 4
    with caplog.at_level(logging.WARNING):
        got, on_gpu = on_webgpu(lambda x, y: nf.add(x, y), a, b)
    assert not on_gpu
    np.testing.assert_array_equal(got, a + b)
    assert "Add" in caplog.text and "maxComputeWorkgroupsPerDimension of 4" in caplog.text


def test_tensor_beyond_the_binding_size_runs_on_cpu(gpu, monkeypatch, caplog):
    monkeypatch.setitem(gpu.gpu.limits, BINDING, 1024)
    monkeypatch.setattr(common, "_WARNED", set())
    small, large = normal(16, 16), normal(300)  # 1024 bytes fit; 1200 do not
    got, on_gpu = on_webgpu(lambda x: nf.relu(x), small)
    assert on_gpu
    np.testing.assert_array_equal(got, np.maximum(small, 0))
    with caplog.at_level(logging.WARNING):
        got, on_gpu = on_webgpu(lambda x: nf.relu(x), large)
    assert not on_gpu
    np.testing.assert_array_equal(got, np.maximum(large, 0))
    assert "Relu" in caplog.text and "1200 bytes" in caplog.text and "1024 bytes" in caplog.text
    # a GPU result feeding a program whose output is too big: read back, computed on the CPU
    a, b = normal(200), normal(200)
    got, _ = on_webgpu(lambda x, y: nf.concat([nf.add(x, y), y], 0), a, b)
    np.testing.assert_allclose(got, np.concatenate([a + b, b]), rtol=1e-6)
    # a matrix product whose output is too big
    x, w = normal(20, 8), normal(8, 20)
    got, on_gpu = on_webgpu(lambda p, q: nf.mat_mul(p, q), x, w)
    assert not on_gpu
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)


def test_run_raises_before_allocating(gpu, monkeypatch):
    monkeypatch.setitem(gpu.gpu.limits, BINDING, 1024)
    buffers, data, pending = gpu.pool.num_buffers, len(gpu.data), gpu.pending
    with pytest.raises(LimitError, match=r"'probe'.*'out' of shape \(512,\).*2048 bytes.*1024 bytes"):
        gpu.run(
            ("probe",), lambda: "fn compute(index: i32) { store_out(index, 1.0); }", [], [("out", (512,), "float32")]
        )
    assert (gpu.pool.num_buffers, len(gpu.data), gpu.pending) == (buffers, data, pending)
    monkeypatch.setitem(gpu.gpu.limits, "max-storage-buffers-per-shader-stage", 1)
    with pytest.raises(LimitError, match="maxStorageBuffersPerShaderStage of 1"):
        gpu.run(("probe",), lambda: PROBE, [], [("out", (4,), "float32")])


def test_kernel_without_a_cpu_kernel_names_itself(gpu):
    with pytest.raises(LimitError, match="webgpu kernel NoSuchKernel: too big"):
        common.over_limit("NoSuchKernel", LimitError("too big"), gpu, (), {})


def test_float16_sizes_count_two_bytes(gpu, monkeypatch):
    if not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    monkeypatch.setitem(gpu.gpu.limits, BINDING, 1024)
    nf.env().set("WEBGPU_FLOAT16", True)
    x = normal(500)  # 1000 bytes as f16
    got, on_gpu = on_webgpu(lambda t: nf.relu(t), x)
    assert on_gpu
    np.testing.assert_allclose(got, np.maximum(x, 0), rtol=1e-3, atol=1e-3)
