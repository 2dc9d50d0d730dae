"""The cpu backend (numpy): reference semantics, available everywhere."""

from . import kernels, parallel  # noqa: F401  (registers the kernels and the CPU_THREADS flag)
from .backend import CPUBackend

__all__ = ["CPUBackend"]
