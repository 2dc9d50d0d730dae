"""The cpu backend (numpy): reference semantics, available everywhere."""

from . import kernels  # noqa: F401  (registers the kernels)
from .backend import CPUBackend

__all__ = ["CPUBackend"]
