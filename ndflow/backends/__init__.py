"""Backend registration: cpu always; torch and webgpu when their library is installed, imported lazily.

The default backend is the fastest one where ndflow runs, decided on first use (not at ``import ndflow``,
which imports neither torch nor wgpu):

- ``torch`` (priority 3) when its device is a GPU: torch sees CUDA (or ROCm), or ``TORCH_DEVICE`` asks
  for a GPU. torch is imported to ask only where a GPU driver is visible (``torch/device.py``).
- ``webgpu`` (priority 2) when the adapter it would open is a GPU, not a software rasterizer (lavapipe,
  llvmpipe, SwiftShader); wgpu is imported to ask only where a GPU driver may exist (``webgpu/device.py``).
- ``cpu`` (priority 1) otherwise: on a CPU it is faster than torch's CPU kernels and than a software adapter,
  which stay available by name (priority 0).

``NDFLOW_BACKEND=<name>`` in the environment picks the backend of first use over the priorities;
``nf.set_backend(name)`` switches at any time.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable

from ..core.backend import Backend
from ..core.engine import ENGINE
from ..core.kernel_registry import kernel_table, register_kernel_loader
from . import cpu

# The optional backends: name -> the library it needs.
OPTIONAL = {"torch": "torch", "webgpu": "wgpu"}


def installed(library: str) -> bool:
    """Whether ``library`` can be imported (found on the path; not imported). One that ``sys.modules`` maps to
    None is blocked (``import`` raises ImportError): not installed, as far as ndflow is concerned."""
    if library in sys.modules:
        return sys.modules[library] is not None
    try:
        return importlib.util.find_spec(library) is not None
    except (ImportError, ValueError):  # pragma: no cover - a broken package
        return False


def load(name: str) -> type:
    """Import an optional backend and register its kernels; its backend class."""
    return importlib.import_module(f"{__name__}.{name}").load()


def _factory(name: str) -> Callable[[], Backend]:
    def create() -> Backend:
        return load(name)()

    create.__name__ = create.__qualname__ = f"create_{name}_backend"
    return create


def _priority(name: str) -> Callable[[], int]:
    def evaluate() -> int:
        return importlib.import_module(f"{__name__}.{name}.device").priority()

    return evaluate


def coverage() -> dict[str, list[str]]:
    """Kernel names registered for each registered backend (optional backends load their kernels)."""
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

for _name, _library in OPTIONAL.items():  # extras: `pip install ndflow[torch]`, `ndflow[webgpu]`
    if installed(_library):
        importlib.import_module(f"{__name__}.{_name}")  # light: the backend's flags and its device probe
        register_kernel_loader(_name, lambda name=_name: load(name))
        ENGINE.register_backend(_name, _factory(_name), priority=_priority(_name))
