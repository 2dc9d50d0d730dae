"""The webgpu backend (wgpu-py): tensors in GPU storage buffers, WGSL programs compiled on first use.

Importing this package imports neither wgpu nor the kernels (it registers the ``WEBGPU_*`` flags);
``WebGPUBackend``, ``GPU_KERNELS`` and ``FORWARDED`` (or :func:`load`) register the kernels on first access,
and the adapter is opened when a backend is created.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import backend as _backend  # noqa: F401  (registers the WEBGPU_* flags; imports no wgpu)
from . import device
from .device import NoAdapterError

__all__ = ["FORWARDED", "GPU_KERNELS", "NoAdapterError", "WebGPUBackend", "device", "load"]


def load() -> type:
    """Register the webgpu kernels; the backend class."""
    importlib.import_module(f"{__name__}.kernels")
    importlib.import_module(f"{__name__}.serial").lock_kernels()  # one thread at a time in the backend
    return _backend.WebGPUBackend


def __getattr__(name: str) -> Any:
    if name == "WebGPUBackend":
        return load()
    if name == "GPU_KERNELS":
        load()
        return importlib.import_module(f"{__name__}.kernels.common").GPU_KERNELS
    if name == "FORWARDED":
        load()
        return importlib.import_module(f"{__name__}.kernels.forward").FORWARDED
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
