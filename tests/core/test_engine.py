"""The engine: backend registry (priorities, switching, lazy moves), kernel registry and dispatch."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import numpy as np
import pytest

import ndflow as nf
import ndflow.backends
from ndflow.core import kernel_registry
from ndflow.core.backend import Backend, new_data_id

TEST_BACKEND = "test_numpy"


class NumpyTestBackend(Backend):
    """A minimal backend: numpy arrays with reference counts, in a dict keyed by data id."""

    name = TEST_BACKEND

    def __init__(self) -> None:
        self.store: dict[int, list[Any]] = {}
        self.disposed = False

    def write(self, values: Any, shape: tuple[int, ...], dtype: str) -> int:
        data_id = new_data_id()
        self.store[data_id] = [np.array(values).reshape(shape), 1]
        return data_id

    def move(self, data_id: int, values: Any, shape: tuple[int, ...], dtype: str, ref_count: int) -> None:
        self.store[data_id] = [np.array(values).reshape(shape), ref_count]

    def read_sync(self, data_id: int) -> np.ndarray:
        return self.store[data_id][0]

    def dispose_data(self, data_id: int, force: bool = False) -> bool:
        record = self.store.get(data_id)
        if record is None:
            return True
        record[1] -= 1
        if force or record[1] <= 0:
            del self.store[data_id]
            return True
        return False

    def inc_ref(self, data_id: int) -> None:
        self.store[data_id][1] += 1

    def ref_count(self, data_id: int) -> int:
        record = self.store.get(data_id)
        return 0 if record is None else record[1]

    def num_data_ids(self) -> int:
        return len(self.store)

    def dispose(self) -> None:
        self.disposed = True
        self.store.clear()


def _add_kernel(backend: NumpyTestBackend, inputs: tuple, attrs: dict | None) -> tuple[int, tuple[int, ...], str]:
    a, b = inputs
    result = backend.read_sync(a.data_id) + backend.read_sync(b.data_id)
    return backend.write(result, result.shape, a.dtype), result.shape, a.dtype


def _reshape_kernel(backend: NumpyTestBackend, inputs: tuple, attrs: dict) -> tuple[int, tuple[int, ...], str]:
    (x,) = inputs
    backend.inc_ref(x.data_id)
    return x.data_id, tuple(attrs["shape"]), x.dtype


def best_available() -> str:
    """The backend ndflow picks on first use: the highest-priority one that initializes (torch
    when it is installed, else cpu)."""
    return next(name for name in nf.engine().backend_names() if nf.find_backend(name) is not None)


@pytest.fixture(autouse=True)
def cpu_active():
    """These tests drive the registry from the cpu backend, whichever backend is the default."""
    before = nf.get_backend()
    nf.set_backend("cpu")
    yield
    nf.set_backend(before)


@pytest.fixture
def restore_backend():
    """Whatever a test registers, the cpu backend is active again afterwards."""
    before = nf.get_backend()
    yield
    if nf.get_backend() != before:
        nf.set_backend(before)


@pytest.fixture
def test_backend(restore_backend):
    """A numpy-backed backend with Add and Reshape kernels, removed again after the test."""
    assert nf.register_backend(TEST_BACKEND, NumpyTestBackend, priority=0)
    nf.register_kernel("Add", TEST_BACKEND, _add_kernel)
    nf.register_kernel("Reshape", TEST_BACKEND, _reshape_kernel)
    yield TEST_BACKEND
    nf.set_backend("cpu")
    for name in ("Add", "Reshape"):
        kernel_registry.unregister_kernel(name, TEST_BACKEND)
    nf.remove_backend(TEST_BACKEND)


# ---------------------------------------------------------------------------------------------
# backend registry
# ---------------------------------------------------------------------------------------------
def test_default_backend_is_the_best_available():
    engine = nf.engine()
    active, name, kernels = engine._backend, engine.backend_name, engine._kernels
    engine._backend, engine.backend_name = None, None  # as on first use
    try:
        assert nf.get_backend() == best_available()
        assert nf.backend().name == best_available()
    finally:
        engine._backend, engine.backend_name, engine._kernels = active, name, kernels
    assert nf.get_backend() == "cpu"
    assert isinstance(nf.backend(), Backend)
    assert nf.backend().name == "cpu"
    assert nf.find_backend("cpu") is nf.backend()
    assert nf.find_backend("never_registered") is None


def test_ready_is_awaitable():
    assert asyncio.run(nf.ready()) is None


def test_ready_waits_for_the_cpu_backends_compiled_kernels(monkeypatch):
    """``nf.ready()`` polls ``Backend.wait_ready`` (the cpu backend: its compiled kernels loading in the background)
    and lets the event loop run meanwhile."""
    from ndflow.core.engine import ENGINE

    backend = ENGINE.backend
    answers = iter([False, False, True])
    calls = []

    def wait_ready(timeout=None):
        calls.append(timeout)
        return next(answers)

    monkeypatch.setattr(backend, "wait_ready", wait_ready)
    ticks = []

    async def main():
        async def tick():
            for _ in range(3):
                ticks.append(1)
                await asyncio.sleep(0.005)

        await asyncio.gather(nf.ready(), tick())

    asyncio.run(main())
    assert calls == [0, 0, 0]
    assert ticks == [1, 1, 1]


def test_cpu_backend_wait_ready_loads_the_kernels():
    from ndflow.backends.cpu.numba import warmup

    backend = nf.find_backend("cpu")
    assert backend.wait_ready(60) is True
    assert warmup.wait(0) is True
    assert nf.get_backend() == "cpu"


def test_set_backend_and_back(test_backend):
    assert nf.set_backend(test_backend) is True
    assert nf.get_backend() == test_backend
    assert isinstance(nf.backend(), NumpyTestBackend)
    t = nf.tensor([1.0, 2.0])
    try:
        assert t.backend_name == test_backend
        assert nf.backend().num_data_ids() == 1
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
        np.testing.assert_array_equal(nf.tidy(lambda: nf.add(t, t).numpy()), [2.0, 4.0])
    finally:
        t.dispose()
    assert nf.backend().num_data_ids() == 0
    assert nf.set_backend("cpu") is True
    assert nf.get_backend() == "cpu"


def test_tensors_move_lazily_between_backends(test_backend):
    cpu = nf.find_backend("cpu")
    cpu_before = cpu.num_data_ids()
    x = nf.tensor([1.0, 2.0, 3.0])
    assert x.backend_name == "cpu"
    mem_before = nf.memory()

    assert nf.set_backend(test_backend)
    other = nf.backend()
    # switching does not move anything yet
    assert x.backend_name == "cpu"
    assert cpu.num_data_ids() == cpu_before + 1
    assert other.num_data_ids() == 0

    y = nf.add(x, x)  # first use on the new backend moves x's data there
    assert x.backend_name == test_backend and y.backend_name == test_backend
    assert cpu.num_data_ids() == cpu_before
    assert other.num_data_ids() == 2
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    mem = nf.memory()
    assert mem.num_data_buffers == mem_before.num_data_buffers + 1  # y; the move is not a new buffer
    assert mem.num_bytes == mem_before.num_bytes + 12

    assert nf.set_backend("cpu")
    z = nf.add(y, x)  # and back again
    try:
        assert {x.backend_name, y.backend_name, z.backend_name} == {"cpu"}
        assert other.num_data_ids() == 0
        np.testing.assert_array_equal(z.numpy(), [3.0, 6.0, 9.0])
    finally:
        nf.dispose([x, y, z])
    assert cpu.num_data_ids() == cpu_before


def test_moving_shared_data_keeps_its_reference_count(test_backend):
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    r = nf.reshape(x, [4])  # shares x's data on cpu
    nf.set_backend(test_backend)
    other = nf.backend()
    y = nf.add(r, r)  # moves the shared data once
    try:
        assert x.backend_name == test_backend and r.backend_name == test_backend
        assert other.ref_count(r.data_id) == 2
        x.dispose()
        np.testing.assert_array_equal(r.numpy(), [1.0, 2.0, 3.0, 4.0])
        np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 6.0, 8.0])
    finally:
        nf.dispose([x, r, y])
    assert other.num_data_ids() == 0


def test_reading_a_tensor_of_an_inactive_backend(test_backend):
    nf.set_backend(test_backend)
    t = nf.tensor([5, 6], dtype="int32")
    nf.set_backend("cpu")
    try:
        assert t.backend_name == test_backend
        assert t.array_sync() == [5, 6]
        assert asyncio.run(t.array()) == [5, 6]
    finally:
        t.dispose()


def test_unknown_backend_raises_value_error_naming_it():
    with pytest.raises(ValueError, match="'nope'"):
        nf.set_backend("nope")
    assert nf.get_backend() == "cpu"
    with pytest.raises(ValueError, match="nope"):
        nf.remove_backend("nope")


def test_failing_factory_makes_set_backend_return_false(restore_backend, caplog):
    def factory() -> Backend:
        raise RuntimeError("no device here")

    assert nf.register_backend("test_broken", factory, priority=50)
    try:
        with caplog.at_level(logging.WARNING, logger="ndflow"):
            assert nf.set_backend("test_broken") is False
        assert nf.get_backend() == "cpu"
        assert nf.find_backend("test_broken") is None
        assert any("no device here" in r.getMessage() for r in caplog.records)
    finally:
        nf.remove_backend("test_broken")


def test_register_backend_twice_keeps_the_first(restore_backend):
    cpu = nf.find_backend("cpu")
    assert nf.register_backend("cpu", NumpyTestBackend, priority=100) is False
    assert nf.find_backend("cpu") is cpu
    assert not isinstance(nf.find_backend("cpu"), NumpyTestBackend)
    assert nf.get_backend() == "cpu" and nf.backend() is cpu


def test_remove_backend(restore_backend):
    assert nf.register_backend("test_removed", NumpyTestBackend, priority=0)
    assert nf.set_backend("test_removed")
    instance = nf.backend()
    nf.remove_backend("test_removed")
    assert instance.disposed
    assert nf.find_backend("test_removed") is None
    assert "test_removed" not in ndflow.backends.coverage()
    with pytest.raises(ValueError, match="test_removed"):
        nf.set_backend("test_removed")
    # the active backend was removed: the best remaining one is chosen on next use
    assert nf.get_backend() == best_available()


def test_priority_picks_the_best_available_backend(restore_backend):
    def broken() -> Backend:
        raise RuntimeError("unavailable")

    nf.register_backend("test_high", NumpyTestBackend, priority=100)
    nf.register_backend("test_mid", NumpyTestBackend, priority=50)
    nf.register_backend("test_broken_top", broken, priority=1000)
    try:
        assert nf.set_backend("test_high")
        nf.remove_backend("test_high")  # the active one goes: choose again by priority
        # test_broken_top fails to initialize, test_mid (50) beats cpu (1)
        assert nf.get_backend() == "test_mid"
        assert list(ndflow.backends.coverage())[:2] == ["test_broken_top", "test_mid"]
    finally:
        nf.set_backend("cpu")
        nf.remove_backend("test_mid")
        nf.remove_backend("test_broken_top")
    assert nf.get_backend() == "cpu"


# ---------------------------------------------------------------------------------------------
# kernel registry and dispatch
# ---------------------------------------------------------------------------------------------
def test_get_kernel_and_get_kernels_for_backend():
    config = nf.get_kernel("Add", "cpu")
    assert config is not None
    assert config.kernel_name == "Add" and config.backend_name == "cpu"
    assert callable(config.kernel_func)
    assert nf.get_kernel("Add", "no_such_backend") is None
    assert nf.get_kernel("NoSuchKernel", "cpu") is None
    names = {k.kernel_name for k in nf.get_kernels_for_backend("cpu")}
    assert {"Add", "BatchMatMul", "Softmax", "StridedSlice"} <= names
    assert all(k.backend_name == "cpu" for k in nf.get_kernels_for_backend("cpu"))
    assert nf.get_kernels_for_backend("no_such_backend") == []


def test_register_and_run_a_custom_kernel():
    calls: list[dict] = []

    def triple(backend, inputs, attrs):
        calls.append(attrs)
        (x,) = inputs
        values = backend.read_sync(x.data_id) * attrs["factor"]
        return backend.write(values, x.shape, x.dtype), x.shape, x.dtype

    nf.register_kernel("TestTriple", "cpu", triple)
    try:
        assert nf.get_kernel("TestTriple", "cpu").kernel_func is triple
        assert "TestTriple" in {k.kernel_name for k in nf.get_kernels_for_backend("cpu")}
        assert "TestTriple" in ndflow.backends.coverage()["cpu"]
        x = nf.tensor([1.0, 2.0])
        y = nf.engine().run_kernel("TestTriple", (x,), {"factor": 3.0})
        try:
            assert calls == [{"factor": 3.0}]
            assert isinstance(y, nf.Tensor) and y.dtype == "float32" and y.shape == (2,)
            np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
        finally:
            nf.dispose([x, y])
    finally:
        kernel_registry.unregister_kernel("TestTriple", "cpu")
    assert nf.get_kernel("TestTriple", "cpu") is None
    assert "TestTriple" not in ndflow.backends.coverage()["cpu"]


def test_unregistered_kernel_raises_not_implemented():
    x = nf.tensor([1.0])
    start = nf.memory()
    try:
        with pytest.raises(NotImplementedError) as info:
            nf.engine().run_kernel("TestMissing", (x,), {})
        assert str(info.value) == "kernel 'TestMissing' is not registered for backend 'cpu'"
        assert nf.memory().num_tensors == start.num_tensors
    finally:
        x.dispose()


def test_op_without_kernel_on_backend_raises(test_backend):
    x = nf.tensor([1.0, 4.0])
    nf.set_backend(test_backend)
    try:
        with pytest.raises(NotImplementedError) as info:
            nf.sqrt(x)
        assert str(info.value) == f"kernel 'Sqrt' is not registered for backend '{test_backend}'"
    finally:
        x.dispose()


def test_unregister_unknown_kernel_raises():
    with pytest.raises(KeyError, match="TestNeverRegistered"):
        kernel_registry.unregister_kernel("TestNeverRegistered", "cpu")


def test_kernel_registered_after_set_backend_is_visible(test_backend):
    nf.set_backend(test_backend)

    def neg(backend, inputs, attrs):
        (x,) = inputs
        values = -backend.read_sync(x.data_id)
        return backend.write(values, x.shape, x.dtype), x.shape, x.dtype

    nf.register_kernel("Neg", test_backend, neg)
    try:
        y = nf.tidy(lambda: nf.neg(nf.tensor([1.0, -2.0])))
        try:
            np.testing.assert_array_equal(y.numpy(), [-1.0, 2.0])
        finally:
            y.dispose()
    finally:
        kernel_registry.unregister_kernel("Neg", test_backend)


# ---------------------------------------------------------------------------------------------
# coverage
# ---------------------------------------------------------------------------------------------
ISSUE_KERNELS = [
    "Add", "Sub", "Multiply", "RealDiv", "FloorDiv", "Mod", "Pow", "Maximum", "Minimum", "SquaredDifference",
    "Neg", "Abs", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Relu", "Sigmoid", "Tanh", "Cast", "Reshape",
    "Transpose", "ExpandDims", "Concat", "Pack", "Slice", "StridedSlice", "GatherV2", "Sum", "Mean", "Max", "Min",
    "ArgMax", "BatchMatMul", "Equal", "Greater", "Less", "Select", "Softmax", "Fill", "Range", "LinSpace",
    "ZerosLike", "OnesLike", "Identity",
]  # fmt: skip


def test_coverage_lists_the_cpu_kernels():
    coverage = ndflow.backends.coverage()
    assert isinstance(coverage, dict)
    assert "cpu" in coverage
    missing = sorted(set(ISSUE_KERNELS) - set(coverage["cpu"]))
    assert not missing, f"cpu lacks kernels: {missing}"
    assert coverage["cpu"] == sorted(coverage["cpu"])


def test_coverage_includes_a_registered_backend(test_backend):
    coverage = ndflow.backends.coverage()
    assert sorted(coverage[test_backend]) == ["Add", "Reshape"]
