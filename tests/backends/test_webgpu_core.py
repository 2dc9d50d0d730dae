"""The webgpu backend's core: adapter choice, lazy upload, the program cache, the buffer pool, reads (sync and
async), float16 storage, shape uniforms, command batching and the legacy NDArrayMathGPU. (The op suite runs on
webgpu through the ``backend`` fixture; the kernel families have their own test modules.)"""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE

pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
# values depend on the adapter: CI reruns these per wgpu backend (WGPU_BACKEND_TYPE=OpenGL pytest -m adapter)
pytestmark = pytest.mark.adapter

from ndflow.backends.webgpu import NoAdapterError, WebGPUBackend  # noqa: E402
from ndflow.backends.webgpu.buffers import BufferPool, bucket  # noqa: E402


def test_registered_below_cpu():
    names = ENGINE.backend_names()
    assert "webgpu" in names and names.index("webgpu") > names.index("cpu")  # by name only


def test_adapter_by_name_and_clear_error(monkeypatch, caplog):
    monkeypatch.setenv("NDFLOW_WEBGPU_ADAPTER", "no-such-gpu-anywhere")
    with pytest.raises(NoAdapterError, match="no-such-gpu-anywhere.*matches no adapter"):
        WebGPUBackend()
    ENGINE.register_backend("webgpu-test-missing", WebGPUBackend, priority=-1)
    try:
        with caplog.at_level(logging.WARNING, logger="ndflow"):
            assert nf.set_backend("webgpu-test-missing") is False
        assert "matches no adapter" in caplog.text
    finally:
        ENGINE.remove_backend("webgpu-test-missing")


def test_creating_a_tensor_does_not_touch_the_gpu(gpu):
    uploads, submits = gpu.num_uploads, gpu.num_submits
    x = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert gpu.on_cpu(x.data_id) and not gpu.on_gpu(x.data_id)
    np.testing.assert_array_equal(x.numpy(), np.arange(12).reshape(3, 4))
    assert (gpu.num_uploads, gpu.num_submits) == (uploads, submits)
    y = x + x  # the first program that reads x uploads it, once
    assert gpu.on_gpu(x.data_id) and gpu.num_uploads == uploads + 1
    z = x * x
    assert gpu.num_uploads == uploads + 1
    assert gpu.on_gpu(y.data_id) and not gpu.on_cpu(y.data_id)
    nf.dispose([x, y, z])


def test_reading_keeps_the_buffer(gpu):
    x = nf.tensor([1.0, 2.0, 3.0])
    y = x + x
    np.testing.assert_array_equal(y.data_sync(), [2, 4, 6])
    assert gpu.on_gpu(y.data_id) and gpu.on_cpu(y.data_id)  # read back, buffer kept
    uploads = gpu.num_uploads
    z = y + y
    assert gpu.num_uploads == uploads  # no re-upload after a read
    np.testing.assert_array_equal(z.data_sync(), [4, 8, 12])
    nf.dispose([x, y, z])


def test_program_cache_hits_on_the_second_call(gpu):
    a, b = nf.tensor([[1.0, 2.0]]), nf.tensor([[3.0], [4.0]])
    nf.dispose(a + b)
    compiled = gpu.num_compiled_programs
    nf.dispose(a + b)
    assert gpu.num_compiled_programs == compiled
    # shape uniforms: other shapes of the same ranks reuse the program
    c, d = nf.tensor(np.ones((1, 7), np.float32)), nf.tensor(np.ones((5, 1), np.float32))
    nf.dispose(c + d)
    assert gpu.num_compiled_programs == compiled
    nf.dispose([a, b, c, d])


def test_shape_uniforms_off_bakes_shapes_into_programs(gpu):
    nf.env().set("WEBGPU_USE_SHAPES_UNIFORMS", False)
    a, b = nf.tensor([[1.0, 2.0]]), nf.tensor([[3.0], [4.0]])
    r1 = a + b
    compiled = gpu.num_compiled_programs
    c, b0 = nf.tensor(np.ones((3, 2), np.float32)), nf.tensor([[3.0]])
    r2 = c + b0
    assert gpu.num_compiled_programs == compiled + 1  # a new shape, a new program
    np.testing.assert_array_equal(r1.numpy(), [[4, 5], [5, 6]])
    np.testing.assert_array_equal(r2.numpy(), np.full((3, 2), 4))
    nf.dispose([a, b, b0, c, r1, r2])


def test_buffers_are_reused_in_a_tidy_loop(gpu):
    x = nf.tensor(np.random.default_rng(0).random((64, 64), dtype=np.float32))

    def step() -> None:
        nf.tidy(lambda: ((x + x) * x - x).data_sync())

    for _ in range(3):
        step()
    gpu.flush()
    allocated = nf.memory().num_bytes_in_gpu_allocated
    for _ in range(20):
        step()
    gpu.flush()
    assert nf.memory().num_bytes_in_gpu_allocated == allocated
    assert nf.memory().num_bytes_in_gpu_free > 0
    x.dispose()


def test_disposed_buffers_return_to_the_pool(gpu):
    x = nf.tensor(np.ones(1000, np.float32))
    y = x + x
    gpu.flush()
    in_gpu = nf.memory().num_bytes_in_gpu
    free = nf.memory().num_bytes_in_gpu_free
    y.dispose()
    gpu.flush()  # freed while commands that used it were unsubmitted: pooled after the submission
    mem = nf.memory()
    assert mem.num_bytes_in_gpu == in_gpu - bucket(4000)
    assert mem.num_bytes_in_gpu_free == free + bucket(4000)
    allocated = mem.num_bytes_in_gpu_allocated
    z = x + x  # takes the pooled buffer: nothing new allocated
    assert nf.memory().num_bytes_in_gpu_allocated == allocated
    assert nf.memory().num_bytes_in_gpu_free < free + bucket(4000)
    nf.dispose([x, z])


def test_delete_threshold_releases_freed_buffers(gpu):
    pool = BufferPool(gpu.device)
    usage = gpu.storage_usage
    kept = pool.acquire(4096, usage)
    pool.release(kept)
    assert pool.num_bytes_free == 4096 and pool.num_bytes_allocated == 4096
    nf.env().set("WEBGPU_DELETE_BUFFER_THRESHOLD", 0)
    other = pool.acquire(100, usage)
    pool.release(other)
    assert pool.num_bytes_free == 4096 and pool.num_bytes_allocated == 4096  # destroyed, not pooled
    pool.clear()
    assert pool.num_bytes_allocated == 0


def test_bucket_sizes():
    assert bucket(1) == 16 and bucket(16) == 16 and bucket(17) == 32 and bucket(4096) == 4096
    for n in (5000, 100_000, 3_000_001):
        assert n <= bucket(n) <= n * 1.25 + 16 and bucket(n) % 16 == 0


def test_memory_fields(gpu):
    mem = nf.memory()
    for field in ("num_bytes_in_gpu", "num_bytes_in_gpu_allocated", "num_bytes_in_gpu_free"):
        assert isinstance(getattr(mem, field), int)


def test_data_does_not_block_the_event_loop(gpu):
    rng = np.random.default_rng(1)
    x = nf.tensor(rng.random((2000, 1000), dtype=np.float32))

    async def main() -> tuple[np.ndarray, int]:
        ticks = 0
        done = asyncio.Event()

        async def other() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.ensure_future(other())
        y = nf.tidy(lambda: ((x * x + x) * x - x) * x)
        values = await y.data()
        done.set()
        await task
        y.dispose()
        return values, ticks

    values, ticks = asyncio.run(main())
    v = x.numpy()
    np.testing.assert_allclose(values.reshape(v.shape), ((v * v + v) * v - v) * v, rtol=1e-5)
    assert ticks > 0  # the other coroutine ran while the read was in flight
    x.dispose()


def test_commands_are_batched(gpu):
    x = nf.tensor([1.0])
    gpu.flush()
    submits = gpu.num_submits
    batch = nf.env().get("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE")
    ys = [x + x for _ in range(batch - 1)]
    assert gpu.num_submits == submits  # recorded, not yet submitted
    np.testing.assert_array_equal(ys[-1].data_sync(), [2.0])
    assert gpu.num_submits == submits + 1  # one submission for the whole batch
    nf.dispose([x, *ys])


def test_float16_storage(gpu):
    if not gpu.gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")
    nf.env().set("WEBGPU_FLOAT16", True)
    assert nf.backend().float_precision() == 16
    assert nf.backend().epsilon() == pytest.approx(1e-4)
    x = nf.tensor([1.001, 2.5, -3.25, 1000.3])
    y = x + x
    assert gpu.data[y.data_id].f16
    expected = (np.float16(x.numpy()) * 2).astype(np.float32)
    np.testing.assert_allclose(y.numpy(), expected, atol=1e-1)
    assert abs(float(y.numpy()[0]) - 2.002) > 1e-5  # really stored as f16
    nf.env().set("WEBGPU_FLOAT16", False)
    z = y + y  # converted back to f32 storage on first use
    np.testing.assert_allclose(z.numpy(), expected * 2, atol=1e-1)
    assert not gpu.data[z.data_id].f16
    nf.dispose([x, y, z])


def test_float32_capability_flag(gpu):
    assert nf.env().get("WEBGPU_FLOAT32_CAPABLE") is True
    assert nf.backend().float_precision() == 32


def test_moves_between_cpu_and_webgpu(gpu):
    nf.set_backend("cpu")
    a = nf.tensor([[1, 2], [3, 4]], dtype="int32")
    nf.set_backend("webgpu")
    b = a + a  # a moves to webgpu (CPU values, uploaded by the program)
    np.testing.assert_array_equal(b.numpy(), [[2, 4], [6, 8]])
    nf.set_backend("cpu")
    c = b + 1  # b moves back: read from the GPU
    np.testing.assert_array_equal(c.numpy(), [[3, 5], [7, 9]])
    nf.set_backend("webgpu")
    nf.dispose([a, b, c])


def test_strings_and_complex_stay_on_the_cpu(gpu):
    s = nf.tensor(["a", "b"])
    re, im = nf.tensor([1.0]), nf.tensor([2.0])
    c = nf.complex(re, im)
    assert not gpu.on_gpu(s.data_id) and not gpu.on_gpu(c.data_id)
    assert s.array_sync() == ["a", "b"]
    m = nf.abs(c)
    np.testing.assert_allclose(m.numpy(), [np.sqrt(5)], rtol=1e-6)
    nf.dispose([s, c, m, re, im])


def test_ndarray_math_gpu_maps_to_webgpu(gpu):
    from ndflow.legacy import NDArrayMathGPU

    before = nf.get_backend()
    math = NDArrayMathGPU()
    assert nf.get_backend() == "webgpu"
    nf.set_backend(before)
    del math
