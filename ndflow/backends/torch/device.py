"""Where the torch backend runs, and whether it should be the default: decided without importing torch
unless a cheap sign says that a GPU may be there.

The flag ``TORCH_DEVICE`` (registered here, so that ``nf.env().set("TORCH_DEVICE", ...)`` works before
torch is imported) is ``cuda`` when ``torch.cuda.is_available()`` (NVIDIA CUDA, or AMD ROCm, which torch
also calls ``cuda``), else ``cpu``. The torch backend is the default only when its device is CUDA:
on a CPU, ndflow's cpu backend is faster (``benchmarks/import_time.py``). The backend runs on CPU or CUDA
(Apple's MPS is not used).

The flag ``TORCH_TF32`` (default False: float32 means float32 on CUDA, as TF.js promises) sets torch's
process-global TF32 switches (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``
and ``torch.set_float32_matmul_precision``) when the torch backend is created and whenever the flag is set
afterwards; before the backend exists, setting the flag changes nothing in torch (see docs/torch.md).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys

from ...core.flags import env

# Files that exist where a CUDA/ROCm driver is installed: NVIDIA's driver, its device nodes, AMD's compute
# driver (ROCm), and WSL2's GPU bridge.
DRIVER_PATHS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
DRIVER_TOOLS = ("nvidia-smi", "rocm-smi")


def gpu_driver_present() -> bool:
    """Cheap signs (no import, no subprocess) that torch may see a CUDA or ROCm device: a driver's files,
    or its tool on PATH; False when ``CUDA_VISIBLE_DEVICES`` hides every device."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    if any(os.path.exists(path) for path in DRIVER_PATHS) or glob.glob("/dev/nvidia[0-9]*"):
        return True
    return any(shutil.which(tool) is not None for tool in DRIVER_TOOLS)


def cuda_available() -> bool:
    """``torch.cuda.is_available()``; where torch is not imported yet, it is imported only when a driver is
    present (False otherwise, and when torch fails to import)."""
    torch = sys.modules.get("torch")
    if torch is None:
        if not gpu_driver_present():
            return False
        try:
            import torch
        except Exception:  # noqa: BLE001  # pragma: no cover - a broken torch: the backend fails later, loudly
            return False
    return bool(torch.cuda.is_available())


def default_device() -> str:
    """The value of ``TORCH_DEVICE`` when it is not set: ``cuda`` when torch sees a GPU, else ``cpu``."""
    return "cuda" if cuda_available() else "cpu"


def preferred() -> bool:
    """Whether the torch backend should come before cpu: its device (the ``TORCH_DEVICE`` flag, as set or
    as ``NDFLOW_FLAGS`` gives it, else its default) is a CUDA (or ROCm) GPU."""
    device = env().get_flags().get("TORCH_DEVICE")
    if device is None:  # not set: ask, without caching the flag (the backend asks torch itself once loaded)
        return cuda_available()
    return str(device).strip().lower().startswith("cuda")


def priority() -> int:
    """The torch backend's priority, evaluated when the engine first chooses a backend: 3 (above cpu's 1)
    when it runs on a GPU, else 0 (chosen only by name)."""
    return 3 if preferred() else 0


# Whether a torch backend was created: only then does TORCH_TF32 touch torch's global settings.
_STATE = {"started": False}


def _as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def apply_tf32(value: object | None = None, *, force: bool = False) -> None:
    """Set torch's TF32 switches from ``TORCH_TF32`` (``value``, else the flag): off means
    ``matmul.allow_tf32 = cudnn.allow_tf32 = False`` and matmul precision ``'highest'``; on means both
    allowed and ``'high'``. Does nothing before a torch backend started, unless ``force`` (the backend's
    constructor): ndflow never imports torch, nor changes it, for a flag alone."""
    if not (force or _STATE["started"]):
        return
    torch = sys.modules.get("torch")
    if torch is None:  # pragma: no cover - the backend imported it
        return
    allow = _as_bool(env().get("TORCH_TF32") if value is None else value)
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    _STATE["started"] = True


def tf32_allowed() -> bool:
    """The flag ``TORCH_TF32`` as a bool (what the convolution kernels allow on CUDA)."""
    return _as_bool(env().get("TORCH_TF32"))


env().register_flag("TORCH_DEVICE", default_device)
env().register_flag("TORCH_TF32", lambda: False, set_hook=apply_tf32)
