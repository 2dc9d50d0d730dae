"""The webgpu backend: tensor values in GPU storage buffers (wgpu-py), programs compiled on first use.

Data: each data id has a :class:`Record` holding its values on the CPU (``values``, a numpy array in the
shape it was written in), on the GPU (``buffer``), or both. Values written from Python stay on the CPU until
a GPU program first reads them (lazy upload); reading GPU values back keeps the buffer (no re-upload later)
and caches the copy. Kernels the GPU has no program for run on the CPU values (see ``kernels/forward.py``)
and leave their outputs on the CPU. Dtypes complex64 and string always stay on the CPU.

Programs: compiled by :meth:`WebGPUBackend.run`, cached by a key of the kernel's program key, dtypes,
parameter layout (and parameter values when shape uniforms are off), workgroup size and float16 mode.
Command batching: compute passes are recorded into one command encoder and submitted every
``WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE`` kernels, or when values are read. Buffers freed while commands that use
them are still unsubmitted go back to the pool only after the next submission.

Device limits: a program whose buffers exceed ``maxStorageBufferBindingSize`` / ``maxBufferSize``, whose
dispatch exceeds ``maxComputeWorkgroupsPerDimension`` (element-wise programs fold their workgroups into x, y
and z first) or that binds more than ``maxStorageBuffersPerShaderStage`` buffers raises :class:`.limits.LimitError`
before anything is allocated or recorded; the kernel then runs the cpu kernel (``kernels/common.py``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...core.backend import Backend, RefCountedStore, new_data_id
from ...core.coroutines import sleep as _sleep
from ...core.dtypes import NUMPY_DTYPE
from ...core.flags import env
from .buffers import BufferPool
from .device import open_gpu
from .limits import DeviceLimits
from .program import GPU_DTYPES, Param, build_source, pack_params, param_layout
from .serial import serialized

env().register_flag("WEBGPU_FLOAT16", lambda: False)
env().register_flag("WEBGPU_USE_SHAPES_UNIFORMS", lambda: True)
env().register_flag("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE", lambda: 16)
env().register_flag("WEBGPU_FLOAT32_CAPABLE", lambda: True)  # WebGPU storage buffers always hold f32

BIND_GROUP_CACHE = 4096  # bind groups kept for reuse (least recently used dropped first)
PARAM_CACHE = 4096  # distinct parameter buffers kept

Output = tuple[int, tuple[int, ...], str]


class Ref(NamedTuple):
    """Something a program reads: a data id with the shape and dtype to read it as."""

    data_id: int
    shape: tuple[int, ...]
    dtype: str


class Record:
    """One data buffer: CPU values and/or a GPU buffer, the number of tensors sharing it, its dtype."""

    __slots__ = ("values", "buffer", "ref_count", "shape", "dtype", "f16")

    def __init__(self, values: np.ndarray | None, buffer: Any, ref_count: int, shape: tuple[int, ...], dtype: str):
        self.values = values
        self.buffer = buffer
        self.ref_count = ref_count
        self.shape = shape
        self.dtype = dtype
        self.f16 = False  # the GPU buffer holds f16 values


def _as_numpy(values: Any, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.asarray(values, dtype=NUMPY_DTYPE[dtype]).reshape(shape)


class WebGPUBackend(DeviceLimits, RefCountedStore, Backend):
    """GPU storage buffers on a wgpu device; see the module docstring."""

    name = "webgpu"
    releases_records = True  # GPU buffers go back to the pool
    record_type = Record

    def __init__(self) -> None:
        import wgpu

        self.wgpu = wgpu
        self.lock = threading.RLock()  # one thread at a time (serial.py)
        self.gpu = open_gpu()
        self.device = self.gpu.device
        self.queue = self.device.queue
        self.pool = BufferPool(self.device, self.gpu.limits)
        self.data: dict[int, Record] = {}
        self.programs: dict[tuple, tuple[Any, Any]] = {}
        self._layouts: dict[tuple[int, int, bool], Any] = {}
        # Bind groups by (layout, buffers): a buffer reused from the pool keeps its bind groups valid.
        self._bind_groups: OrderedDict[tuple, Any] = OrderedDict()
        self._param_buffers: OrderedDict[bytes, Any] = OrderedDict()
        self._retired: list[Any] = []
        self.param_bytes = 0
        self.encoder: Any = None
        self.compute_pass: Any = None
        self._bound_pipeline: Any = None
        self.pending = 0
        self.in_flight: list[Any] = []  # buffers freed while unsubmitted commands still use them
        self.num_submits = 0
        self.num_uploads = 0
        self.compile_ms = 0.0
        usage = wgpu.BufferUsage
        self.storage_usage = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        self.read_usage = usage.MAP_READ | usage.COPY_DST
        self._dummy = self.device.create_buffer(size=16, usage=self.storage_usage)

    # -- modes -----------------------------------------------------------------------------------
    @property
    def float16(self) -> bool:
        """Whether float32 tensors are stored as f16 (flag WEBGPU_FLOAT16 on an adapter with shader-f16)."""
        return bool(env().get("WEBGPU_FLOAT16")) and self.gpu.has_f16

    def float_precision(self) -> int:
        return 16 if self.float16 else 32

    @property
    def num_compiled_programs(self) -> int:
        """How many distinct programs have been compiled (a warm-up check)."""
        return len(self.programs)

    def description(self) -> str:
        from .kernels.forward import FORWARDED

        return f"{len(FORWARDED)} of them run by the cpu kernels; wgpu {self.wgpu.__version__} on {self.gpu.name}"

    # -- data store ------------------------------------------------------------------------------
    @serialized
    def write(self, values: Any, shape: tuple[int, ...], dtype: str) -> int:
        data_id = new_data_id()
        self.data[data_id] = Record(_as_numpy(values, shape, dtype), None, 1, tuple(shape), dtype)
        return data_id

    @serialized
    def store(self, array: np.ndarray, dtype: str) -> int:
        """Keep CPU values computed by a kernel (already of ``dtype``'s numpy type)."""
        data_id = new_data_id()
        self.data[data_id] = Record(array, None, 1, tuple(array.shape), dtype)
        return data_id

    @serialized
    def move(self, data_id: int, values: Any, shape: tuple[int, ...], dtype: str, ref_count: int) -> None:
        self.data[data_id] = Record(_as_numpy(values, shape, dtype), None, ref_count, tuple(shape), dtype)

    @serialized
    def read_sync(self, data_id: int) -> np.ndarray:
        record = self.data[data_id]
        if record.values is None:
            staging, nbytes = self._start_read(record)
            staging.map_sync(self.wgpu.MapMode.READ)
            record.values = self._finish_read(record, staging, nbytes)
        return record.values

    async def read(self, data_id: int) -> np.ndarray:
        record = self.data[data_id]
        if record.values is None:
            staging, nbytes = self._start_read(record)
            await _sleep(0)  # let other tasks run while the GPU works
            await staging.map_async(self.wgpu.MapMode.READ)
            if record.values is None:  # a synchronous read may have finished first
                record.values = self._finish_read(record, staging, nbytes)
            else:
                staging.unmap()
                self.pool.release(staging)
        return record.values

    @serialized
    def _start_read(self, record: Record) -> tuple[Any, int]:
        size = math.prod(record.shape)
        nbytes = size * (2 if record.f16 else 4)
        staging = self.pool.acquire(nbytes, self.read_usage)
        encoder = self._encoder()
        if nbytes:
            encoder.copy_buffer_to_buffer(record.buffer, 0, staging, 0, (nbytes + 3) & ~3)
        self.flush()
        return staging, nbytes

    @serialized
    def _finish_read(self, record: Record, staging: Any, nbytes: int) -> np.ndarray:
        raw = staging.read_mapped(0, max(16, (nbytes + 15) & ~15)) if nbytes else b""
        stored = np.float16 if record.f16 else (np.float32 if record.dtype == "float32" else np.int32)
        flat = np.frombuffer(raw, dtype=stored, count=nbytes // np.dtype(stored).itemsize).copy()
        staging.unmap()
        self.pool.release(staging)
        if record.dtype == "bool":
            flat = flat != 0
        elif flat.dtype != NUMPY_DTYPE[record.dtype]:
            flat = flat.astype(NUMPY_DTYPE[record.dtype])
        return flat.reshape(record.shape)

    @serialized
    def release_record(self, record: Record) -> None:
        """A freed record's GPU buffer goes back to the pool."""
        if record.buffer is not None:
            self._free(record.buffer)

    def _free(self, buffer: Any) -> None:
        if self.encoder is not None:
            self.in_flight.append(buffer)
        else:
            self.pool.release(buffer)

    def on_gpu(self, data_id: int) -> bool:
        """Whether the data has a GPU buffer (it was uploaded or computed there)."""
        return self.data[data_id].buffer is not None

    def on_cpu(self, data_id: int) -> bool:
        """Whether the data has CPU values (written from Python, read back, or computed on the CPU)."""
        return self.data[data_id].values is not None

    # -- GPU buffers -------------------------------------------------------------------------------
    def buffer_of(self, ref: Ref | Any) -> Any:
        """The GPU buffer of an input, uploaded on first use (a small dummy buffer for empty tensors)."""
        record = self.data[ref.data_id]
        if record.buffer is not None and record.f16 != (record.dtype == "float32" and self.float16):
            self.read_sync(ref.data_id)  # stored in the other float mode (WEBGPU_FLOAT16 changed): convert
            self._free(record.buffer)
            record.buffer = None
        if record.buffer is None:
            if record.dtype not in GPU_DTYPES:
                raise TypeError(f"webgpu: {record.dtype} tensors have no GPU storage")
            values = record.values
            if values.size == 0:
                return self._dummy
            if record.dtype == "float32":
                with np.errstate(over="ignore"):  # beyond f16's range is Infinity, as the GPU stores it
                    stored = values.astype(np.float16 if self.float16 else np.float32, copy=False)
            else:
                stored = values.astype(np.int32, copy=False)
            stored = np.ascontiguousarray(stored).reshape(-1)
            buffer = self.pool.acquire(stored.nbytes, self.storage_usage)
            data = stored.tobytes()
            if len(data) % 4:
                data += b"\0" * (4 - len(data) % 4)
            self.queue.write_buffer(buffer, 0, data)
            record.buffer = buffer
            record.f16 = stored.dtype == np.float16
            self.num_uploads += 1
        return record.buffer

    def _encoder(self) -> Any:
        """The open command encoder, with no compute pass open (for copies)."""
        if self.compute_pass is not None:
            self.compute_pass.end()
            self.compute_pass = None
            self._bound_pipeline = None
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        return self.encoder

    @serialized
    def flush(self) -> None:
        """Submit the recorded commands; buffers freed meanwhile return to the pool."""
        if self.encoder is not None:
            self._encoder()  # ends the open compute pass
            self.queue.submit([self.encoder.finish()])
            self.encoder = None
            self.pending = 0
            self.num_submits += 1
        if self.in_flight:
            for buffer in self.in_flight:
                self.pool.release(buffer)
            self.in_flight.clear()
        if self._retired:
            for buffer in self._retired:
                buffer.destroy()
            self._retired.clear()

    @serialized
    def synchronize(self) -> None:
        """Submit and wait until the GPU finished everything."""
        staging = self.pool.acquire(16, self.read_usage)  # mapping waits for all earlier submissions
        self._encoder().copy_buffer_to_buffer(self._dummy, 0, staging, 0, 16)
        self.flush()
        staging.map_sync(self.wgpu.MapMode.READ)
        staging.unmap()
        self.pool.release(staging)

    # -- programs --------------------------------------------------------------------------------
    @serialized
    def run(
        self,
        key: tuple,
        code: Callable[[], str],
        inputs: Sequence[tuple[str, Any]],
        outputs: Sequence[tuple[str, tuple[int, ...], str]],
        params: dict[str, Param] | None = None,
        *,
        invocations: int | None = None,
        workgroup: tuple[int, int, int] = (64, 1, 1),
        grid: tuple[int, int, int] | None = None,
    ) -> list[Output]:
        """Run a program; return its outputs (new data ids on the GPU).

        ``key`` names the program's code (what ``code()`` returns depends only on it); ``inputs`` are
        (binding name, tensor or :class:`Ref`); ``outputs`` (binding name, shape, dtype). Element-wise programs
        (no ``grid``) run ``invocations`` invocations (default: the first output's size) of ``compute``;
        others give ``grid`` (workgroups in x, y, z) and write their own ``main``.
        """
        params = dict(params or {})
        elementwise = grid is None
        if elementwise:
            if invocations is None:
                invocations = math.prod(outputs[0][1]) if outputs else 0
            params["invocations"] = invocations
        if (invocations == 0) if elementwise else (0 in grid):  # type: ignore[operator]
            return [(data_id, shape, dtype) for data_id, shape, dtype, _ in map(self._new_output_of, outputs)]
        if elementwise:
            grid = self.fold(-(-invocations // workgroup[0]), 3)  # type: ignore[operator]
        float16 = self.float16
        uniforms = bool(env().get("WEBGPU_USE_SHAPES_UNIFORMS"))
        slots = param_layout(params)
        self._check_limits(key, inputs, outputs, grid, len(inputs) + len(outputs) + bool(uniforms and slots), float16)
        results = [self._new_output(shape, dtype) for _, shape, dtype in outputs]
        in_dtypes = tuple(t.dtype for _, t in inputs)
        full_key = (key, in_dtypes, tuple(d for _, _, d in outputs), slots, float16, uniforms, workgroup, elementwise)
        if not uniforms:
            full_key += (tuple(pack_params(slots, params)),)
        compiled = self.programs.get(full_key)
        if compiled is None:
            start = time.perf_counter()
            source = build_source(
                code(),
                [(name, t.dtype) for name, t in inputs],
                [(name, dtype) for name, _, dtype in outputs],
                slots,
                params,
                float16=float16,
                uniforms=uniforms,
                workgroup=workgroup,
                elementwise=elementwise,
            )
            try:
                module = self.device.create_shader_module(code=source)
                layout = self._layout(len(inputs), len(outputs), bool(uniforms and slots))
                pipeline = self.device.create_compute_pipeline(
                    layout=self.device.create_pipeline_layout(bind_group_layouts=[layout]),
                    compute={"module": module, "entry_point": "main"},
                )
            except Exception as exc:
                raise RuntimeError(f"webgpu: program {key!r} failed to compile: {exc}\n{source}") from exc
            compiled = self.programs[full_key] = (pipeline, layout)
            self.compile_ms += (time.perf_counter() - start) * 1000.0
        pipeline, layout = compiled
        entries = []
        binding = 0
        for _, t in inputs:
            buffer = self.buffer_of(t)
            entries.append({"binding": binding, "resource": {"buffer": buffer, "offset": 0, "size": buffer.size}})
            binding += 1
        for data_id, _, _, _ in results:
            buffer = self.data[data_id].buffer
            entries.append({"binding": binding, "resource": {"buffer": buffer, "offset": 0, "size": buffer.size}})
            binding += 1
        if uniforms and slots:
            pbuf = self._param_buffer(np.asarray(pack_params(slots, params), dtype=np.int64).astype(np.int32))
            entries.append({"binding": binding, "resource": {"buffer": pbuf, "offset": 0, "size": pbuf.size}})
        bind_key = (id(layout), *(id(e["resource"]["buffer"]) for e in entries))
        cached = self._bind_groups.get(bind_key)
        if cached is None:
            bind_group = self.device.create_bind_group(layout=layout, entries=entries)
            # the buffers are kept with it, so that their ids are not reused while the entry exists
            self._bind_groups[bind_key] = (bind_group, [e["resource"]["buffer"] for e in entries])
            if len(self._bind_groups) > BIND_GROUP_CACHE:
                self._bind_groups.popitem(last=False)
        else:
            bind_group = cached[0]
            self._bind_groups.move_to_end(bind_key)
        compute_pass = self.compute_pass
        if compute_pass is None:  # one pass for consecutive programs (wgpu orders their buffer accesses)
            compute_pass = self.compute_pass = self._encoder().begin_compute_pass()
        if self._bound_pipeline is not pipeline:
            compute_pass.set_pipeline(pipeline)
            self._bound_pipeline = pipeline
        compute_pass.set_bind_group(0, bind_group)
        compute_pass.dispatch_workgroups(*grid)
        self.pending += 1
        if self.pending >= int(env().get("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE")):
            self.flush()
        return [(data_id, shape, dtype) for data_id, shape, dtype, _ in results]

    def _param_buffer(self, words: np.ndarray) -> Any:
        """A buffer holding a program's parameters: one per distinct parameter set (the programs of a model
        see the same ones at every run), written once, never changed while a cached bind group uses it."""
        data = words.tobytes()
        buffer = self._param_buffers.get(data)
        if buffer is not None:
            self._param_buffers.move_to_end(data)
            return buffer
        buffer = self.device.create_buffer_with_data(data=data + b"\0" * (-len(data) % 16), usage=self.storage_usage)
        self._param_buffers[data] = buffer
        self.param_bytes += buffer.size
        if len(self._param_buffers) > PARAM_CACHE:
            _, old = self._param_buffers.popitem(last=False)
            self.param_bytes -= old.size
            self._retired.append(old)  # destroyed after the commands that may use it are submitted
        return buffer

    def _layout(self, n_in: int, n_out: int, with_params: bool) -> Any:
        """The bind group layout of a program: inputs, outputs, then the parameter buffer."""
        key = (n_in, n_out, with_params)
        layout = self._layouts.get(key)
        if layout is None:
            visibility = self.wgpu.ShaderStage.COMPUTE
            kinds = ["read-only-storage"] * n_in + ["storage"] * n_out + ["read-only-storage"] * with_params
            entries = [{"binding": i, "visibility": visibility, "buffer": {"type": k}} for i, k in enumerate(kinds)]
            layout = self._layouts[key] = self.device.create_bind_group_layout(entries=entries)
        return layout

    def _new_output_of(self, output: tuple[str, tuple[int, ...], str]) -> tuple[int, tuple[int, ...], str, int]:
        return self._new_output(output[1], output[2])

    def _new_output(self, shape: tuple[int, ...], dtype: str) -> tuple[int, tuple[int, ...], str, int]:
        size = math.prod(shape)
        data_id = new_data_id()
        if size == 0:
            self.data[data_id] = Record(np.zeros(shape, NUMPY_DTYPE[dtype]), None, 1, tuple(shape), dtype)
            return data_id, tuple(shape), dtype, 0
        f16 = dtype == "float32" and self.float16
        nbytes = size * (2 if f16 else 4)
        record = Record(None, self.pool.acquire(nbytes, self.storage_usage), 1, tuple(shape), dtype)
        record.f16 = f16
        self.data[data_id] = record
        return data_id, tuple(shape), dtype, nbytes

    # -- measurement -----------------------------------------------------------------------------
    def memory(self) -> dict[str, Any]:
        in_use = sum(r.buffer.size for r in self.data.values() if r.buffer is not None)
        return {
            "unreliable": False,
            "reasons": [],
            "num_bytes_in_gpu": in_use,
            "num_bytes_in_gpu_allocated": self.pool.num_bytes_allocated + self.param_bytes,
            "num_bytes_in_gpu_free": self.pool.num_bytes_free,
        }

    def time(self, fn: Callable[[], Any]) -> dict[str, float]:
        self.synchronize()
        start = time.perf_counter()
        fn()
        self.synchronize()
        return {"kernel_ms": (time.perf_counter() - start) * 1000.0}

    @serialized
    def dispose(self) -> None:
        self.flush()
        self._bind_groups.clear()
        for buffer in self._param_buffers.values():
            buffer.destroy()
        self._param_buffers.clear()
        self.param_bytes = 0
        for record in self.data.values():
            if record.buffer is not None:
                self.pool.release(record.buffer)
        self.data.clear()
        self.pool.clear()
