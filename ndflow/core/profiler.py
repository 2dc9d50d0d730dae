"""Debug mode (per-kernel timing and log, NaN/Inf checks) and the records of ``time`` / ``profile``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

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


@dataclass
class ProfileInfo:
    new_bytes: int = 0
    new_tensors: int = 0
    peak_bytes: int = 0
    kernels: list[KernelProfile] = field(default_factory=list)
    result: Any = None

    @property
    def kernel_names(self) -> list[str]:
        return list(dict.fromkeys(k.name for k in self.kernels))  # in order of first run, as TF.js


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
