"""The cpu backend (numpy): reference semantics, available everywhere.

``kernels/`` the kernel families (numpy; each registers its kernels), ``numba/`` the optional compiled kernels
and their entry points, ``plans/`` the per-call plans and bound calls of the compiled convolutions, ``native/``
the optional C module (``native/csrc/``) and the work split over threads, ``flags.py`` the backend's flags.
"""

from . import (
    flags,  # noqa: F401  (first: registers the backend's flags)
    kernels,  # noqa: F401  (registers the kernels)
)
from .backend import CPUBackend

__all__ = ["CPUBackend"]
