"""Debug mode (per-kernel timing and log, NaN/Inf checks) and the records of ``time`` / ``profile``."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from .trace_spans import Span

logger = logging.getLogger("ndflow")


class ComputationError(FloatingPointError):
    """Debug mode found NaN or Inf in the float output of a kernel."""


class MemoryInfo(SimpleNamespace):
    """What ``nf.memory()`` returns: ``num_tensors``, ``num_data_buffers``, ``num_bytes``,
    ``unreliable``, ``reasons``, plus fields of the active backend."""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


@dataclass
class TimingInfo:
    kernel_ms: float
    wall_ms: float
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class KernelProfile:
    name: str
    bytes_added: int
    total_bytes_snapshot: int
    tensors_added: int
    total_tensors_snapshot: int
    input_shapes: list[tuple[int, ...]]
    output_shapes: list[tuple[int, ...]]
    kernel_time_ms: float
    extra_info: str = ""
    #: For traces: the dtypes, the outputs' bytes, when the kernel started (``time.perf_counter`` seconds), its
    #: wall time, the calling thread and the backend's name.
    input_dtypes: list[str] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)
    output_bytes: int = 0
    start: float = 0.0
    wall_ms: float = 0.0
    thread: int = 0
    backend: str = ""


@dataclass
class ProfileInfo:
    new_bytes: int = 0
    new_tensors: int = 0
    peak_bytes: int = 0
    kernels: list[KernelProfile] = field(default_factory=list)
    result: Any = None
    #: The ops, graph nodes and layers around the kernels (core/trace_spans.py), the profile's own start and end
    #: (``time.perf_counter`` seconds), its thread, and how the backend timed kernels on its device: a
    #: description such as "CUDA events", or "" where it does not (kernel times are then wall times).
    spans: list[Span] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    thread: int = 0
    backend: str = ""
    gpu_timer: str = ""

    @property
    def kernel_names(self) -> list[str]:
        return list(dict.fromkeys(k.name for k in self.kernels))  # in order of first run, as TF.js

    def to_chrome_trace(self) -> dict[str, Any]:
        """The profile as Chrome's Trace Event Format (``{"traceEvents": [...], ...}``), which Chrome's
        Performance tab, ``chrome://tracing`` and Perfetto open: one slice per kernel, inside the op, graph node
        or layer that ran it; GPU time on its own track where the backend measured it."""
        from .chrome_trace import to_chrome_trace

        return to_chrome_trace(self)

    def save_trace(self, path: str | os.PathLike[str]) -> str:
        """Write :meth:`to_chrome_trace` as JSON to ``path``; returns the path written."""
        from .chrome_trace import save_trace

        return save_trace(self, path)


def device_timer(backend: Any) -> str:
    """How ``backend.time`` measures a kernel on a device: "CUDA events" for torch on CUDA, else "" (wall time:
    the CPU backends' own work, or WebGPU's submit-to-queue-done, whose timestamp queries ndflow does not use)."""
    if type(backend).__module__.startswith("ndflow.backends.torch") and getattr(backend, "is_cuda", False):
        return "CUDA events"
    return str(getattr(backend, "device_timer", "") or "")


def check_finite(kernel_name: str, values: np.ndarray, dtype: str) -> None:
    """Raise :class:`ComputationError` naming the kernel if a float output holds NaN or Inf."""
    if dtype not in ("float32", "complex64") or values.size == 0:
        return
    if np.isfinite(values).all():
        return
    what = "NaN" if np.isnan(values).any() else "Infinity"
    raise ComputationError(
        f"The result of the '{kernel_name}' kernel contains {what} (debug mode checks every float output)"
    )


def log_kernel(name: str, ms: float, out_shapes: list[tuple[int, ...]], input_shapes: list[tuple[int, ...]]) -> None:
    for shape in out_shapes:
        size = int(np.prod(shape, dtype=np.int64))
        inputs = ", ".join(str(list(s)) for s in input_shapes)
        logger.info("%-22s %9.3f ms  %dD %-16s size %-8d inputs: %s", name, ms, len(shape), list(shape), size, inputs)


def ensure_visible_logging() -> None:
    """Debug output goes through logging; give it a stderr handler if nobody configured one."""
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("ndflow %(message)s"))
        logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
