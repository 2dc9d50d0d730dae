"""Argument checks shared by the reduction kernels of every backend (the error messages are TF.js's)."""

from __future__ import annotations

from collections.abc import Sequence


def check_arg_axis(op: str, shape: Sequence[int], axis: int) -> None:
    """ArgMax/ArgMin need at least one value along ``axis``."""
    if shape[axis] == 0:
        raise ValueError(f"{op}: cannot reduce an empty axis of shape {list(shape)}")
