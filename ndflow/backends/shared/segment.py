"""Argument checks shared by the counting kernels (Bincount, DenseBincount) of every backend."""

from __future__ import annotations

import math
from typing import Any


def in_bins(op: str, x: Any, size: int) -> Any:
    """Which values of ``x`` (a numpy array or a torch tensor) fall in ``[0, size)``, checking that none is
    negative."""
    if math.prod(x.shape):
        low = int(x.min())
        if low < 0:
            raise ValueError(f"{op}: argument 'x' must be non-negative, got {low}")
    return x < size
