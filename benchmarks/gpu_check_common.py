"""Shared pieces of ``benchmarks/gpu_check.py``: the time budget, the backends under test, timing helpers.

A backend label is ``cpu``, ``torch-cuda`` (ndflow's torch backend with ``TORCH_DEVICE=cuda``) or ``webgpu``;
:func:`use` makes one active.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import ndflow as nf

GPU_LABELS = ("torch-cuda", "webgpu")


def set_flag(name: str, value: Any) -> bool:
    """Set a flag where ndflow has it (and it differs); whether the flag exists."""
    if not nf.env().has(name):
        return False
    if nf.env().get(name) != value:
        nf.env().set(name, value)
    return True


class Budget:
    """A running time budget in seconds: ``left()`` says what remains, ``enough(s)`` whether ``s`` seconds fit."""

    def __init__(self, total_s: float) -> None:
        self.total_s = float(total_s)
        self.start = time.perf_counter()

    def used(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.total_s - self.used()

    def enough(self, seconds: float) -> bool:
        return self.left() >= seconds


def use(label: str) -> None:
    """Make the backend behind ``label`` active; ``torch-cuda`` sets ``TORCH_DEVICE=cuda`` when it is not set so
    (only then: setting a flag bumps the flags' version, which plans and caches check)."""
    if label == "cpu":
        nf.set_backend("cpu")
    elif label == "torch-cuda":
        if nf.env().get("TORCH_DEVICE") != "cuda":
            nf.env().set("TORCH_DEVICE", "cuda")
        nf.set_backend("torch")
    elif label == "webgpu":
        nf.set_backend("webgpu")
    else:
        raise ValueError(f"gpu_check: unknown backend label {label!r}")


def sync() -> None:
    """Wait for the active backend's queued work (GPU backends have ``synchronize``)."""
    backend = nf.backend()
    if hasattr(backend, "synchronize"):
        backend.synchronize()


def read_back(out: Any) -> None:
    """Read every tensor of ``out`` (a tensor, list or dict) to the host, then dispose it."""
    tensors = out if isinstance(out, (list, tuple)) else list(out.values()) if isinstance(out, dict) else [out]
    for t in tensors:
        t.data_sync()
    nf.dispose(list(tensors))


def interleaved_ms(
    calls: dict[str, Callable[[], Any]], runs: int, warmup: int = 1, max_s: float | None = None
) -> dict[str, dict[str, float]]:
    """Median wall ms per backend label of ``calls[label]()`` (outputs read back and disposed), the backends
    taking turns call by call so that they share the machine's state; also the first call's ms. Past ``max_s``
    seconds the rounds stop early (after one timed round at least); ``runs`` says how many were timed."""
    times: dict[str, list[float]] = {label: [] for label in calls}
    first: dict[str, float] = {}
    begin = time.perf_counter()
    for i in range(warmup + runs):
        if max_s is not None and i > warmup and time.perf_counter() - begin > max_s:
            break
        for label, fn in calls.items():
            use(label)
            start = time.perf_counter()
            read_back(fn())
            elapsed = (time.perf_counter() - start) * 1000.0
            if i == 0:
                first[label] = elapsed
            if i >= warmup:
                times[label].append(elapsed)
    return {
        label: {"median_ms": statistics.median(t), "first_ms": first[label], "runs": len(t)}
        for label, t in times.items()
    }


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: numbers to ``digits`` significant figures, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)
