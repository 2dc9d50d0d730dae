"""DLPack both ways: ``torch.from_dlpack(t)``, ``np.from_dlpack(t)`` and ``nf.from_dlpack(x)``."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.tensor import DisposedTensorError

torch = pytest.importorskip("torch")


def _released() -> None:
    gc.collect()


def test_torch_from_dlpack_is_zero_copy_and_values_match(backend):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    pt = torch.from_dlpack(t)
    assert pt.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    if backend != "webgpu":
        assert pt.data_ptr() == np.asarray(t).ctypes.data  # the tensor's own memory
    del pt
    t.dispose()
    _released()


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64"])
def test_numpy_from_dlpack_every_dtype_read_only(backend, dtype):
    t = nf.tensor([1, 0, 3], dtype=dtype)
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, t.numpy())
    if backend != "webgpu":
        assert not a.flags.writeable  # DLPack 1.0's read-only flag, honoured by numpy
        assert np.shares_memory(a, np.asarray(t))
    del a
    t.dispose()
    _released()


def test_export_keeps_buffer_alive_and_counted_after_dispose(backend):
    before = nf.memory()
    t = nf.tensor(np.arange(6, dtype=np.float32))
    pt = torch.from_dlpack(t)
    t.dispose()
    after = nf.memory()
    assert after.num_tensors == before.num_tensors
    if backend == "webgpu":  # a copy: nothing of the tensor's is held
        assert after.num_bytes == before.num_bytes
    else:
        assert after.num_bytes == before.num_bytes + 24
        assert after.num_data_buffers == before.num_data_buffers + 1
    assert pt.sum().item() == 15.0  # still readable
    del pt
    _released()
    end = nf.memory()
    assert (end.num_bytes, end.num_data_buffers) == (before.num_bytes, before.num_data_buffers)


def test_two_exports_and_a_reshape_share_one_buffer():
    before = nf.memory()
    t = nf.tensor([1.0, 2.0, 3.0, 4.0])
    r = t.reshape([2, 2])
    a, b = np.from_dlpack(r), torch.from_dlpack(t)
    nf.dispose([t, r])
    assert nf.memory().num_bytes == before.num_bytes + 16
    del a
    _released()
    assert nf.memory().num_bytes == before.num_bytes + 16
    del b
    _released()
    assert nf.memory().num_bytes == before.num_bytes


def test_legacy_consumer_gets_a_copy_and_copy_false_is_refused():
    t = nf.tensor([1.0, 2.0])
    legacy = torch.utils.dlpack.from_dlpack(t.__dlpack__())  # an unversioned capsule: cannot say read-only
    legacy[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(copy=False)
    copied = np.from_dlpack(t, copy=True)
    assert copied.flags.writeable and not np.shares_memory(copied, np.asarray(t))
    t.dispose()


def test_dlpack_device_and_errors():
    t = nf.tensor([1.0])
    assert t.__dlpack_device__() == (1, 0)
    s = nf.tensor(["a"])
    with pytest.raises(BufferError, match="string"):
        s.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    nf.dispose([t, s])
    with pytest.raises(DisposedTensorError):
        t.__dlpack__(max_version=(1, 0))


def test_from_dlpack_torch_and_numpy_zero_copy(backend):
    x = torch.arange(4, dtype=torch.float32)
    t = nf.from_dlpack(x)
    a = np.arange(3, dtype=np.int32)
    u = nf.from_dlpack(a)
    if backend != "webgpu":  # zero-copy: the source's memory is the tensor's
        x[0] = 9.0
        a[0] = 7
        assert t.tolist() == [9.0, 1.0, 2.0, 3.0]
        assert u.tolist() == [7, 1, 2]
    assert (t.dtype, u.dtype) == ("float32", "int32")
    nf.dispose([t, u])


def test_from_dlpack_converts_dtypes_and_detaches(backend):
    v = nf.from_dlpack(torch.arange(3))  # int64 -> int32
    w = nf.from_dlpack(torch.ones(2, dtype=torch.float64, requires_grad=True))
    c = nf.from_dlpack(torch.arange(4.0), copy=True)
    assert (v.dtype, v.tolist()) == ("int32", [0, 1, 2])
    assert (w.dtype, w.tolist()) == ("float32", [1.0, 1.0])
    assert c.dtype == "float32"
    nf.dispose([v, w, c])


def test_from_dlpack_errors():
    with pytest.raises(OverflowError, match="from_dlpack.*int32's range.*INT64_WRAP"):
        nf.from_dlpack(torch.tensor([2**40]))
    with pytest.raises(BufferError, match="copy=False"):
        nf.from_dlpack(np.arange(3.0), copy=False)  # float64 must be converted
    with pytest.raises(TypeError, match="DLPack"):
        nf.from_dlpack([1, 2])
    t = nf.tensor([1.0])
    with pytest.raises(TypeError, match="already an ndflow Tensor"):
        nf.from_dlpack(t)
    t.dispose()


def test_round_trip_through_torch():
    t = nf.tensor([[1, 2], [3, 4]], dtype="int32")
    back = nf.from_dlpack(torch.from_dlpack(t))
    assert back.tolist() == [[1, 2], [3, 4]] and back.dtype == "int32"
    nf.dispose([t, back])
    _released()


def test_tensor_of_torch_tensor_requiring_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = nf.tensor(x)
    i = nf.tensor(torch.tensor([1, 2]))
    assert (t.tolist(), t.dtype, i.dtype) == ([1.0, 2.0], "float32", "int32")
    nf.dispose([t, i])


def test_cuda_branch_exports_the_torch_tensor_itself(monkeypatch):
    """The torch-CUDA path (torch's own capsule of the stored tensor), run on a CPU torch backend posing as CUDA."""
    if nf.find_backend("torch") is None:
        pytest.skip("backend 'torch' is not available here")
    previous = nf.get_backend()
    nf.set_backend("torch")
    try:
        t = nf.tensor([1.0, 2.0, 3.0])
        monkeypatch.setattr(nf.backend(), "is_cuda", True, raising=False)
        assert t.__dlpack_device__() == (2, 0)
        stored = nf.backend().values(t.data_id)
        pt = torch.utils.dlpack.from_dlpack(t.__dlpack__(max_version=(1, 0)))
        assert pt.data_ptr() == stored.data_ptr() and pt.tolist() == [1.0, 2.0, 3.0]
        with pytest.raises(BufferError, match="copy=False"):
            t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
        monkeypatch.undo()
        t.dispose()
    finally:
        nf.set_backend(previous)


def test_export_outlives_the_tidy_that_disposed_its_tensor():
    before = nf.memory()
    held = {}

    def step():
        x = nf.ones([4]) * 3
        held["pt"] = torch.from_dlpack(x)

    nf.tidy(step)
    mid = nf.memory()
    assert (mid.num_tensors, mid.num_bytes) == (before.num_tensors, before.num_bytes + 16)
    assert held.pop("pt").tolist() == [3.0] * 4
    _released()
    assert nf.memory().num_bytes == before.num_bytes
