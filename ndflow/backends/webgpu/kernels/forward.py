"""Kernels without a GPU program run on the CPU: the inputs' values are read back (a no-op for values that
are still on the CPU), the cpu backend's kernel computes the outputs, and they stay on the CPU until a GPU
program reads them (then they are uploaded once).

TF.js's GPU backends do the same for the kernels that do not suit a GPU (strings, NMS, unique, sparse and
ragged bookkeeping, ...): same results as the cpu backend by construction. ``FORWARDED`` lists the kernels
that take this path; ``ndflow info`` and docs/ops.md show which kernels have GPU programs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....core.engine import ENGINE
from ....core.kernel_registry import kernel_table, register_kernel
from ..backend import Output, WebGPUBackend
from .common import GPU_KERNELS

FORWARDED: set[str] = set()

_STATE: dict[str, Any] = {}


def _cpu() -> Any:
    """A cpu backend of its own (the registered cpu backend's class, made once): the data store the cpu kernels
    see holds the inputs, for the length of one call."""
    cpu = _STATE.get("cpu")
    if cpu is None:
        cpu = _STATE["cpu"] = type(ENGINE.find_backend("cpu"))()
    return cpu


def forwarder(name: str, cpu_fn: Callable) -> Callable:
    """A webgpu kernel that runs the cpu kernel ``cpu_fn`` on CPU copies of the inputs."""

    def run(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output | list[Output]:
        cpu = _cpu()
        store, record_type = cpu.data, cpu.record_type
        placed = []
        try:
            for t in inputs:
                if t is None or t.data_id in store:
                    continue
                store[t.data_id] = record_type(backend.read_sync(t.data_id), 1)
                placed.append(t.data_id)
            result = cpu_fn(cpu, inputs, attrs)
            single = isinstance(result, tuple)
            outputs = [result] if single else list(result)
            converted = []
            for data_id, shape, dtype in outputs:
                if data_id in placed:
                    backend.inc_ref(data_id)  # the cpu kernel shared an input's data (reshape, identity)
                    record = store[data_id]
                    record.ref_count -= 1
                    converted.append((data_id, shape, dtype))
                    continue
                record = store.pop(data_id)
                backend.data[data_id] = _adopt(record.values, dtype)
                converted.append((data_id, shape, dtype))
            return converted[0] if single else converted
        finally:
            for data_id in placed:
                store.pop(data_id, None)

    run.__name__ = f"forward_{name}"
    return run


def _adopt(values, dtype: str):
    from ..backend import Record

    return Record(values, None, 1, tuple(values.shape), dtype)


def register_forwarders() -> None:
    """Register a forwarder for every cpu kernel that has no GPU program (but the ``_Ndflow*`` fusions of the
    graph optimizer, whose mappers run their ops instead where the backend lacks the kernel)."""
    webgpu = kernel_table("webgpu")
    for name, config in kernel_table("cpu").items():
        if name not in webgpu and name not in GPU_KERNELS and not name.startswith("_Ndflow"):
            register_kernel(name, "webgpu", forwarder(name, config.kernel_func))
            FORWARDED.add(name)


def forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output | list[Output]:
    """Run the cpu kernel ``name`` on CPU copies of the inputs (for the cases a GPU program leaves out)."""
    return forwarder(name, kernel_table("cpu")[name].kernel_func)(backend, inputs, attrs)
