"""The torch backend (PyTorch, CPU or CUDA): TF.js's native ``tensorflow`` backend, bound to torch."""

from . import kernels  # noqa: F401  (registers the kernels)
from .backend import TorchBackend
from .kernels.common import FALLBACKS

__all__ = ["FALLBACKS", "TorchBackend"]
