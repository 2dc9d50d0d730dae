"""The torch backend: torch tensors (CPU or CUDA) in a dict keyed by data id, with reference counts.

String tensors have no torch counterpart: they stay numpy object arrays in the same store. The
device comes from the flag ``TORCH_DEVICE`` (``cuda`` when available, else ``cpu``), read when the
backend is created. On CPU every kernel completes before it returns (as TF.js's node backend); on
CUDA kernels are queued, ``read_sync`` blocks and ``read`` awaits the copy without blocking the
event loop.

Creating the backend applies the flag ``TORCH_TF32`` (default False) to torch's process-global TF32
settings (``device.apply_tf32``): float32 matmuls and convolutions stay float32 on CUDA.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ...core.backend import Backend, RefCountedStore, StoreLayout, new_data_id
from ...core.dtypes import NUMPY_DTYPE
from ...core.flags import env
from .device import apply_tf32, default_device  # noqa: F401  (TORCH_DEVICE's default; registered there)

# numpy dtype -> torch dtype (float64 appears while tests run the cpu-style float64 mode).
NUMPY_TO_TORCH: dict[np.dtype, torch.dtype] = {
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.bool_): torch.bool,
    np.dtype(np.complex64): torch.complex64,
    np.dtype(np.complex128): torch.complex128,
    np.dtype(np.uint8): torch.uint8,
}


class Record:
    """One data buffer: the values (a torch tensor, or a numpy object array for strings), the
    number of tensors sharing it, the shape it was written in (a tuple, cheap to compare), and
    forms of the values that kernels prepared once and keep while the buffer lives (``prepared``,
    by key: a convolution filter in torch's layout). Data never changes, so they never go stale."""

    __slots__ = ("values", "ref_count", "shape", "prepared")

    def __init__(self, values: Any, ref_count: int, shape: tuple[int, ...]) -> None:
        self.values = values
        self.ref_count = ref_count
        self.shape = shape
        self.prepared: dict[Any, Any] | None = None


def _as_numpy(values: Any, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """``values`` as a numpy array of ``dtype``'s storage type and ``shape``."""
    array = np.asarray(values, dtype=NUMPY_DTYPE[dtype]).reshape(shape)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C", copy=True)  # torch.from_numpy wants both
    return array


class TorchBackend(RefCountedStore, Backend):
    """Values are torch tensors of the tensor's dtype, on ``device`` (numpy object arrays for strings)."""

    name = "torch"
    record_type = Record

    def __init__(self, device: str | torch.device | None = None) -> None:
        self.device = torch.device(device if device is not None else str(env().get("TORCH_DEVICE")))
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("torch backend: TORCH_DEVICE is 'cuda' but torch sees no CUDA device")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
        self.is_cuda = self.device.type == "cuda"
        apply_tf32(force=True)  # TORCH_TF32: process-global torch settings, set on every device (docs/torch.md)
        self.data: dict[int, Record] = {}

    # -- data store ------------------------------------------------------------------------------
    def to_torch(self, array: np.ndarray) -> torch.Tensor:
        """A numpy array (C-contiguous, writable) as a tensor on this backend's device."""
        t = torch.from_numpy(array)
        return t.to(self.device, non_blocking=False) if self.is_cuda else t

    def write(self, values: Any, shape: tuple[int, ...], dtype: str) -> int:
        """Store values from Python or numpy under a new data id (reference count one)."""
        data_id = new_data_id()
        self.data[data_id] = Record(self._convert(values, shape, dtype), 1, tuple(shape))
        return data_id

    def _convert(self, values: Any, shape: tuple[int, ...], dtype: str) -> Any:
        if isinstance(values, torch.Tensor):
            from .kernels.common import torch_dtype

            return values.to(device=self.device, dtype=torch_dtype(dtype)).reshape(shape)
        array = _as_numpy(values, shape, dtype)
        return array if dtype == "string" else self.to_torch(array)

    def store(self, values: Any, shape: tuple[int, ...]) -> int:
        """Keep a kernel's output (already of the right dtype and shape) under a new data id."""
        data_id = new_data_id()
        self.data[data_id] = Record(values, 1, shape)
        return data_id

    def move(self, data_id: int, values: Any, shape: tuple[int, ...], dtype: str, ref_count: int) -> None:
        """Take data arriving from another backend, under its existing data id."""
        self.data[data_id] = Record(self._convert(values, shape, dtype), ref_count, tuple(shape))

    def values(self, data_id: int) -> Any:
        """The stored tensor (or object array) of a data id, in the shape it was written in."""
        return self.data[data_id].values

    # -- direct kernel forms (the engine's fast path for float32 element-wise ops) -----------------
    # torch computes a float32 tensor with a Python number in float32, the number rounded to float32 first:
    # what TF.js does with the float32 scalar tensor it makes of the number.
    def direct_unary(self, fn: Any, x: Any) -> int | None:
        data = self.data
        r = data[x.data_id]
        if r.shape != x.shape:
            return None
        data_id = new_data_id()
        data[data_id] = Record(fn(r.values), 1, r.shape)
        return data_id

    def direct_binary(self, fn: Any, a: Any, b: Any) -> int | None:
        data = self.data
        ra, rb = data[a.data_id], data[b.data_id]
        if ra.shape != a.shape or rb.shape != b.shape:
            return None
        data_id = new_data_id()
        data[data_id] = Record(fn(ra.values, rb.values), 1, ra.shape)
        return data_id

    def direct_scalar(self, fn: Any, a: Any, s: float) -> int | None:
        data = self.data
        r = data[a.data_id]
        if r.shape != a.shape:
            return None
        data_id = new_data_id()
        data[data_id] = Record(fn(r.values, s), 1, r.shape)
        return data_id

    def store_layout(self) -> StoreLayout | None:
        """The store for compiled dispatch: direct kernels run as ``direct_*`` run them."""
        base = super().store_layout()
        return None if base is None else base._replace(value_type=torch.Tensor)

    def read_sync(self, data_id: int) -> np.ndarray:
        """The values as numpy (shares memory with the tensor on CPU; copies from a GPU)."""
        values = self.data[data_id].values
        if values.__class__ is np.ndarray:
            return values
        if self.is_cuda:
            values = values.cpu()
        return values.resolve_conj().numpy()

    async def read(self, data_id: int) -> np.ndarray:
        """The values as numpy; on CUDA the copy runs asynchronously while the event loop goes on."""
        values = self.data[data_id].values
        if values.__class__ is np.ndarray or not self.is_cuda:
            return self.read_sync(data_id)
        source = values.contiguous()
        host = torch.empty(source.shape, dtype=source.dtype, pin_memory=True)
        host.copy_(source, non_blocking=True)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(self.device))
        polls = 0
        while not done.query():  # yield to other tasks; back off a little once the copy takes long
            await asyncio.sleep(0 if polls < 64 else 1e-4)
            polls += 1
        del source  # kept alive until the copy finished
        return host.numpy()

    # -- measurement -----------------------------------------------------------------------------
    def memory(self) -> dict[str, Any]:
        """Backend fields of ``nf.memory()``; on CUDA the bytes of the stored tensors on the GPU."""
        fields: dict[str, Any] = {"unreliable": False, "reasons": []}
        if self.is_cuda:
            storages: dict[int, int] = {}
            for record in self.data.values():
                values = record.values
                if values.__class__ is not np.ndarray:
                    storage = values.untyped_storage()
                    storages[storage.data_ptr()] = storage.nbytes()
            fields["num_bytes_in_gpu"] = sum(storages.values())
            fields["num_bytes_in_gpu_allocated"] = torch.cuda.memory_allocated(self.device)
        return fields

    def time(self, fn: Callable[[], Any]) -> dict[str, float]:
        """Run ``fn``; ``kernel_ms`` is the GPU time between CUDA events, or the wall time on CPU."""
        if not self.is_cuda:
            start = time.perf_counter()
            fn()
            return {"kernel_ms": (time.perf_counter() - start) * 1000.0}
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream(self.device)
        begin.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        return {"kernel_ms": begin.elapsed_time(end)}

    def synchronize(self) -> None:
        """Wait until the queued GPU work is done (nothing to wait for on CPU)."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)

    def dispose(self) -> None:
        """Release every stored buffer."""
        self.data.clear()
