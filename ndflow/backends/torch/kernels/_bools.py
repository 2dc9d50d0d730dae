"""Faster forms of torch's bool-valued work on the CPU.

torch 2.13's CPU kernels that write or read ``bool`` tensors element by element are far slower than their float
forms: on the reference machine (AVX-512, one thread), for 173056 float32 values ``x > 0`` takes 80-90 us but
the same comparison written into a float32 tensor 18 us, and a bool -> float32 cast 88 us but the same bytes
read as uint8 13 us. The results are identical (1.0 / 0.0 become True / False exactly, and a bool is one byte
holding 0 or 1), so the kernels take these routes for tensors of at least :data:`MIN_VALUES` values.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

MIN_VALUES = 4096  # below this, the one extra op costs more than it saves

Compare = Callable[..., torch.Tensor]


def compare(fn: Compare, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``fn(a, b)`` (a torch comparison such as ``torch.gt``) as a bool tensor, broadcasting."""
    if (a.numel() < MIN_VALUES and b.numel() < MIN_VALUES) or a.is_cuda or not a.is_floating_point():
        return fn(a, b)
    if b.dtype is not a.dtype:
        return fn(a, b)
    shape = a.shape if a.shape == b.shape else torch.broadcast_shapes(a.shape, b.shape)
    result = torch.empty(shape, dtype=a.dtype, device=a.device)
    return fn(a, b, out=result).to(torch.bool)


def from_bool(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A bool tensor as ``dtype`` (1 and 0)."""
    if v.is_cuda or v.numel() < MIN_VALUES:
        return v.to(dtype)
    return v.view(torch.uint8).to(dtype)
