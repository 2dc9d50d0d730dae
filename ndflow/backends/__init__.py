"""Backend registration: cpu always; others register themselves when their library imports."""

from __future__ import annotations

from ..core.engine import ENGINE
from ..core.kernel_registry import kernel_table
from . import cpu


def coverage() -> dict[str, list[str]]:
    """Kernel names registered for each registered backend."""
    return {name: sorted(kernel_table(name)) for name in ENGINE.backend_names()}


ENGINE.register_backend("cpu", cpu.CPUBackend, priority=1)
