"""Backend registration: cpu always; others register themselves when their library imports."""

from __future__ import annotations

import os
import sys

from ..core.engine import ENGINE
from ..core.kernel_registry import kernel_table
from . import cpu


def coverage() -> dict[str, list[str]]:
    """Kernel names registered for each registered backend."""
    return {name: sorted(kernel_table(name)) for name in ENGINE.backend_names()}


ENGINE.register_backend("cpu", cpu.CPUBackend, priority=1)

# torch's OpenMP threads spin after every parallel op by default (OMP_WAIT_POLICY=ACTIVE behaviour): on a
# machine where another process holds a core, an op then waits for a descheduled spinning thread, and models
# ran 10-40x slower (facemesh 14 -> 607 ms per inference on 2 cores next to a busy process); numpy's kernels
# in the same process lose their core to the spinning too. Passive waiting costs a thread wake-up per op
# instead. OpenMP reads the variable once, when torch loads: a user's own setting, or a torch imported
# before ndflow, keeps its policy.
if "torch" not in sys.modules:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:  # the torch backend is an optional extra (`pip install ndflow[torch]`); a missing or broken torch
    import torch as _torch  # noqa: F401  leaves ndflow on cpu
except Exception:  # noqa: BLE001  # pragma: no cover - depends on the environment
    pass
else:
    from . import torch as _torch_backend

    ENGINE.register_backend("torch", _torch_backend.TorchBackend, priority=2)

try:  # the webgpu backend is an optional extra (`pip install ndflow[webgpu]`)
    import wgpu as _wgpu  # noqa: F401
except Exception:  # noqa: BLE001  # pragma: no cover - depends on the environment
    pass
else:
    from . import webgpu as _webgpu_backend

    # Opt-in (nf.set_backend("webgpu")): below cpu, so that a machine whose only adapter is a software driver
    # does not run on it by default. The adapter is opened when the backend is first set.
    ENGINE.register_backend("webgpu", _webgpu_backend.WebGPUBackend, priority=0)
