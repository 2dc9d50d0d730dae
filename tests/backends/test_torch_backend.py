"""The torch backend itself: registration and ranking, the TORCH_DEVICE flag, the data store and its
memory accounting, moves to and from cpu, reads (sync and async), channels_last convolutions and
the host fallbacks. (The op suite runs on torch through the ``backend`` fixture.)"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.backends
from ndflow.core.engine import ENGINE
from ndflow.core.kernel_registry import kernel_table

torch = pytest.importorskip("torch", reason="the torch backend needs torch (pip install -e '.[torch]')")

from ndflow.backends.torch import FALLBACKS, TorchBackend  # noqa: E402
from ndflow.backends.torch.backend import default_device  # noqa: E402

CUDA = torch.cuda.is_available()


@pytest.fixture
def on_cpu():
    before = nf.get_backend()
    nf.set_backend("cpu")
    yield nf.backend()
    nf.set_backend(before)


# ---------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------
def test_torch_is_registered_and_ranked_by_its_device():
    names = ENGINE.backend_names()
    assert "torch" in names and "cpu" in names
    # first only on a GPU: on a CPU the cpu backend is faster (tests/backends/test_default_backend.py)
    assert (names.index("torch") < names.index("cpu")) == CUDA
    assert ENGINE.priority("torch") == (3 if CUDA else 0) and ENGINE.priority("cpu") == 1


def test_first_use_picks_torch_on_cuda_only():
    active, name, kernels = ENGINE._backend, ENGINE.backend_name, ENGINE._kernels
    ENGINE._backend, ENGINE.backend_name = None, None  # as on the first use after `import ndflow`
    try:
        if CUDA:
            assert nf.get_backend() == "torch"
            assert isinstance(nf.backend(), TorchBackend)
        else:
            assert nf.get_backend() != "torch"
    finally:
        ENGINE._backend, ENGINE.backend_name, ENGINE._kernels = active, name, kernels


def test_set_backend_cpu_still_works(on_torch):
    assert nf.set_backend("cpu")
    assert nf.get_backend() == "cpu"
    t = nf.tensor([1.0, 2.0])
    try:
        assert t.backend_name == "cpu"
    finally:
        t.dispose()


def test_torch_has_every_cpu_kernel():
    coverage = ndflow.backends.coverage()
    assert set(coverage["cpu"]) <= set(coverage["torch"])
    assert len(coverage["torch"]) >= 177


def test_fallbacks_are_few_and_documented():
    assert len(FALLBACKS) <= 12
    assert set(FALLBACKS) <= set(kernel_table("torch"))
    for name in FALLBACKS:
        assert "cpu kernel" in kernel_table("torch")[name].kernel_func.__doc__
    assert "Conv2D" not in FALLBACKS and "BatchMatMul" not in FALLBACKS


# ---------------------------------------------------------------------------------------------
# TORCH_DEVICE
# ---------------------------------------------------------------------------------------------
def test_device_flag_defaults_to_cuda_when_available():
    assert nf.env().get("TORCH_DEVICE") == ("cuda" if CUDA else "cpu") == default_device()


def test_device_flag_chooses_the_device_of_a_new_backend():
    nf.env().set("TORCH_DEVICE", "cpu")
    assert TorchBackend().device == torch.device("cpu")
    assert TorchBackend("cpu").device.type == "cpu"


@pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")
def test_device_flag_cuda_without_cuda_fails_to_initialize(caplog):
    nf.env().set("TORCH_DEVICE", "cuda")
    with pytest.raises(RuntimeError, match="TORCH_DEVICE is 'cuda'"):
        TorchBackend()
    assert nf.register_backend("test_torch_cuda", TorchBackend, priority=0)
    try:
        with caplog.at_level(logging.WARNING, logger="ndflow"):
            assert nf.find_backend("test_torch_cuda") is None  # the engine falls back, as for any broken backend
        assert any("TORCH_DEVICE" in r.getMessage() for r in caplog.records)
    finally:
        nf.remove_backend("test_torch_cuda")


def test_device_flag_from_the_environment(monkeypatch):
    monkeypatch.setenv("NDFLOW_FLAGS", "TORCH_DEVICE=cpu")
    nf.env().reset()
    assert nf.env().get("TORCH_DEVICE") == "cpu"
    monkeypatch.delenv("NDFLOW_FLAGS")
    nf.env().reset()


# ---------------------------------------------------------------------------------------------
# the data store
# ---------------------------------------------------------------------------------------------
def test_values_are_torch_tensors_on_the_device(on_torch):
    t = nf.tensor([[1, 2], [3, 4]], dtype="int32")
    try:
        stored = on_torch.values(t.data_id)
        assert isinstance(stored, torch.Tensor)
        assert stored.dtype == torch.int32 and stored.device.type == on_torch.device.type
        assert tuple(stored.shape) == (2, 2)
        y = nf.tidy(lambda: nf.add(t, 1))
        assert isinstance(on_torch.values(y.data_id), torch.Tensor)
        np.testing.assert_array_equal(y.numpy(), [[2, 3], [4, 5]])
        y.dispose()
    finally:
        t.dispose()


@pytest.mark.parametrize(
    ("values", "dtype", "torch_dtype"),
    [
        ([1.5, -2.0], "float32", "float32"),
        ([1, -2], "int32", "int32"),
        ([True, False], "bool", "bool"),
        ([1 + 2j, -1j], "complex64", "complex64"),
    ],
)
def test_dtypes_round_trip(on_torch, values, dtype, torch_dtype):
    t = nf.tensor(values, dtype=dtype)
    try:
        assert on_torch.values(t.data_id).dtype == getattr(torch, torch_dtype)
        assert t.numpy().tolist() == np.asarray(values, dtype=t.numpy().dtype).tolist()
        assert t.numpy().dtype == np.dtype(dtype if dtype != "bool" else np.bool_)
    finally:
        t.dispose()


def test_strings_stay_numpy_and_run_through_the_cpu_kernels(on_torch):
    s = nf.tensor(["a", "bb", "ccc"])
    try:
        assert isinstance(on_torch.values(s.data_id), np.ndarray)
        picked = nf.tidy(lambda: nf.concat([nf.gather(s, [2, 0]), nf.slice(s, [1], [2])]))
        assert picked.backend_name == "torch"
        assert picked.array_sync() == ["ccc", "a", "bb", "ccc"]
        picked.dispose()
        hashed = nf.string.string_to_hash_bucket_fast(s, 10)
        assert isinstance(on_torch.values(hashed.data_id), torch.Tensor)  # numeric outputs are torch tensors
        hashed.dispose()
    finally:
        s.dispose()


def test_reshape_shares_and_dispose_frees(on_torch):
    start = on_torch.num_data_ids()
    x = nf.tensor(np.arange(6, dtype=np.float32))
    r = nf.reshape(x, [2, 3])
    assert r.data_id == x.data_id and on_torch.ref_count(x.data_id) == 2
    assert on_torch.num_data_ids() == start + 1
    x.dispose()
    assert on_torch.ref_count(r.data_id) == 1
    np.testing.assert_array_equal(r.numpy(), np.arange(6).reshape(2, 3))
    r.dispose()
    assert on_torch.ref_count(r.data_id) == 0 and on_torch.num_data_ids() == start


def test_memory_accounting(on_torch):
    before = nf.memory()
    a = nf.zeros([10, 10])
    b = nf.ones([5], "int32")
    c = nf.tidy(lambda: nf.add(a, 1))
    mem = nf.memory()
    assert mem.num_tensors == before.num_tensors + 3
    assert mem.num_data_buffers == before.num_data_buffers + 3
    assert mem.num_bytes == before.num_bytes + 400 + 20 + 400
    assert mem.unreliable is False
    if CUDA:
        assert mem.num_bytes_in_gpu >= 820
    nf.dispose([a, b, c])
    after = nf.memory()
    assert (after.num_tensors, after.num_data_buffers, after.num_bytes) == (
        before.num_tensors,
        before.num_data_buffers,
        before.num_bytes,
    )


def test_outputs_do_not_pin_their_inputs(on_torch):
    """A slice is a copy: disposing a big input frees its storage even while the slice lives."""
    big = nf.ones([1000, 100])
    part = nf.slice(big, [0, 0], [1, 100])
    try:
        stored_big = on_torch.values(big.data_id)
        stored_part = on_torch.values(part.data_id)
        assert stored_part.untyped_storage().data_ptr() != stored_big.untyped_storage().data_ptr()
        assert stored_part.untyped_storage().nbytes() == 400
    finally:
        nf.dispose([big, part])


# ---------------------------------------------------------------------------------------------
# moves between backends
# ---------------------------------------------------------------------------------------------
def test_moves_from_cpu_to_torch_and_back(on_cpu):
    cpu = nf.find_backend("cpu")
    torch_backend = nf.find_backend("torch")
    x = nf.tensor([1.0, 2.0, 3.0])
    r = nf.reshape(x, [3, 1])
    assert x.backend_name == "cpu"
    nf.set_backend("torch")
    y = nf.add(r, r)  # moves the shared data once, with its reference count
    try:
        assert {x.backend_name, r.backend_name, y.backend_name} == {"torch"}
        assert torch_backend.ref_count(x.data_id) == 2 and cpu.ref_count(x.data_id) == 0
        assert isinstance(torch_backend.values(x.data_id), torch.Tensor)
        np.testing.assert_array_equal(y.numpy().ravel(), [2.0, 4.0, 6.0])
        nf.set_backend("cpu")
        z = nf.tidy(lambda: nf.mul(y, x.reshape([3, 1])))
        assert {y.backend_name, z.backend_name} == {"cpu"}
        assert isinstance(cpu.values(y.data_id), np.ndarray)
        np.testing.assert_array_equal(z.numpy().ravel(), [2.0, 8.0, 18.0])
        z.dispose()
    finally:
        nf.dispose([x, r, y])
    assert torch_backend.ref_count(x.data_id) == 0 and cpu.ref_count(x.data_id) == 0


def test_string_and_complex_tensors_move(on_cpu):
    s = nf.tensor(["x", "y"])
    c = nf.complex([1.0, 2.0], [3.0, 4.0])
    nf.set_backend("torch")
    try:
        joined = nf.concat([s, s])
        doubled = nf.add(c, c)
        assert joined.array_sync() == ["x", "y", "x", "y"]
        np.testing.assert_allclose(doubled.numpy(), [2 + 6j, 4 + 8j])
        nf.dispose([joined, doubled])
    finally:
        nf.dispose([s, c])


def test_reading_a_torch_tensor_from_cpu(on_torch):
    t = nf.tensor([5, 6], dtype="int32")
    nf.set_backend("cpu")
    try:
        assert t.backend_name == "torch"
        assert t.array_sync() == [5, 6]
        assert asyncio.run(t.array()) == [5, 6]
    finally:
        t.dispose()


# ---------------------------------------------------------------------------------------------
# reads
# ---------------------------------------------------------------------------------------------
def test_read_sync_and_async_agree(on_torch):
    t = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    try:
        flat = t.data_sync()
        assert isinstance(flat, np.ndarray) and not flat.flags.writeable
        data = asyncio.run(t.data())
        np.testing.assert_array_equal(flat, data)
        assert asyncio.run(t.array()) == t.array_sync()
    finally:
        t.dispose()


def test_async_read_lets_the_event_loop_run(on_torch):
    """While ``data()`` waits for the device, other tasks run (on CPU the values are ready at once)."""
    t = nf.tidy(lambda: nf.mat_mul(nf.ones([64, 64]), nf.ones([64, 64])))
    ticks: list[int] = []

    async def ticker() -> None:
        for i in range(3):
            ticks.append(i)
            await asyncio.sleep(0)

    async def main() -> np.ndarray:
        task = asyncio.ensure_future(ticker())
        values = await t.data()
        await task
        return values

    try:
        values = asyncio.run(main())
        assert values[0] == 64.0 and ticks == [0, 1, 2]
    finally:
        t.dispose()


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_cuda_read_does_not_block_and_memory_counts_gpu_bytes(on_torch):
    assert on_torch.device.type == "cuda"
    t = nf.tidy(lambda: nf.mat_mul(nf.ones([512, 512]), nf.ones([512, 512])))
    try:
        values = asyncio.run(t.data())
        assert values[0] == 512.0
        assert nf.memory().num_bytes_in_gpu >= 512 * 512 * 4
    finally:
        t.dispose()


def test_time_reports_kernel_ms(on_torch):
    timing = nf.time(lambda: nf.mat_mul(nf.ones([32, 32]), nf.ones([32, 32])))
    assert timing.kernel_ms >= 0 and timing.wall_ms >= 0


# ---------------------------------------------------------------------------------------------
# layouts and precision
# ---------------------------------------------------------------------------------------------
def test_nhwc_convolution_runs_on_a_channels_last_view(on_torch):
    """The NHWC output comes back from torch without a layout copy: its stored tensor is NHWC-contiguous."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((2, 9, 9, 4)).astype(np.float32)
    w_np = rng.standard_normal((3, 3, 4, 5)).astype(np.float32)
    x, w = nf.tensor(x_np), nf.tensor(w_np)
    try:
        y = nf.conv2d(x, w, 2, "same")  # asymmetric 'same' padding: 0 before, 1 after
        stored = on_torch.values(y.data_id)
        assert stored.is_contiguous() and tuple(stored.shape) == (2, 5, 5, 5)
        nf.set_backend("cpu")
        expected = nf.conv2d(x, w, 2, "same")
        np.testing.assert_allclose(y.numpy(), expected.numpy(), atol=1e-4)
        nf.dispose([y, expected])
    finally:
        nf.dispose([x, w])


def test_int32_matmul_wraps_like_int32(on_torch):
    a = nf.tensor([[2**30, 2**30]], dtype="int32")
    b = nf.tensor([[4], [4]], dtype="int32")
    try:
        product = nf.mat_mul(a, b)
        assert product.array_sync() == [[0]]  # 2**33 wraps to 0
        product.dispose()
    finally:
        nf.dispose([a, b])


def test_round_is_half_to_even(on_torch):
    t = nf.tensor([0.5, 1.5, 2.5, -0.5, -1.5])
    try:
        r = nf.round(t)
        assert r.array_sync() == [0.0, 2.0, 2.0, -0.0, -2.0]
        r.dispose()
    finally:
        t.dispose()


@pytest.mark.parametrize(
    "make",
    [
        lambda: nf.sum(nf.tensor([1, 2], dtype="int32")),
        lambda: nf.sum(nf.tensor([True, False])),
        lambda: nf.prod(nf.tensor([3, 4], dtype="int32")),
        lambda: nf.cumsum(nf.tensor([1, 2], dtype="int32")),
        lambda: nf.arg_max(nf.tensor([1.0, 3.0])),
        lambda: nf.mat_mul(nf.tensor([[1, 2]], dtype="int32"), nf.tensor([[3], [4]], dtype="int32")),
        lambda: nf.add(nf.tensor([1, 2], dtype="int32"), nf.tensor([3, 4], dtype="int32")),
        lambda: nf.maximum(nf.tensor([True]), nf.tensor([False])),
        lambda: nf.floor_div(nf.tensor([7.0]), nf.tensor([2.0])),
        lambda: nf.range(0, 5, 1, "int32"),
        lambda: nf.one_hot(nf.tensor([0, 2], dtype="int32"), 3),
        lambda: nf.topk(nf.tensor([1.0, 3.0, 2.0]), 2).indices,
        lambda: nf.unique(nf.tensor([3, 1, 3], dtype="int32")).indices,
        lambda: nf.cast(nf.tensor([1.7, -2.5]), "int32"),
        lambda: nf.relu(nf.tensor([-1, 2], dtype="int32")),
    ],
)
def test_stored_values_have_the_tensors_dtype(on_torch, make):
    """Every output's stored torch tensor has its ndflow dtype (torch would widen int32 sums to int64)."""
    from ndflow.backends.torch.kernels.common import torch_dtype

    result = nf.tidy(make)
    try:
        stored = on_torch.values(result.data_id)
        assert stored.dtype == torch_dtype(result.dtype), (result.dtype, stored.dtype)
        assert stored.numel() == result.size
    finally:
        result.dispose()


@pytest.mark.parametrize(("preset", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_ndflow_makes_torch_threads_wait_passively(preset, expected):
    """OpenMP's spinning threads made models 10-40x slower next to a busy process: ndflow asks for passive
    waiting before torch loads, unless the user chose a policy."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    code = "import ndflow, os; print(os.environ.get('OMP_WAIT_POLICY'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == expected
