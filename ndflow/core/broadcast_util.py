"""Broadcasting checks shared by ops, kernels and graph mappers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether an operand of ``shape`` broadcasts to ``target`` without growing it (no more dimensions, each
    1 or ``target``'s)."""
    if len(shape) > len(target):
        return False
    try:
        return tuple(np.broadcast_shapes(tuple(shape), tuple(target))) == tuple(target)
    except ValueError:
        return False
