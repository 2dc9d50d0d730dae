"""The torch backend (PyTorch, CPU or CUDA): TF.js's native ``tensorflow`` backend, bound to torch.

Importing this package imports neither torch nor the kernels: ``device`` (the ``TORCH_DEVICE`` flag and the
default-backend rule) is light. ``TorchBackend`` and ``FALLBACKS`` (or :func:`load`) import torch and register
the kernels, on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import device

__all__ = ["FALLBACKS", "TorchBackend", "device", "load"]


def load() -> type:
    """Import torch and register the torch kernels; the backend class."""
    importlib.import_module(f"{__name__}.kernels")  # registers the kernels
    cls = importlib.import_module(f"{__name__}.backend").TorchBackend
    return importlib.import_module(f"{__name__}.cuda_graph").install(cls)  # graph models as CUDA graphs


def __getattr__(name: str) -> Any:
    if name == "TorchBackend":
        return load()
    if name == "FALLBACKS":
        load()
        return importlib.import_module(f"{__name__}.kernels.common").FALLBACKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
