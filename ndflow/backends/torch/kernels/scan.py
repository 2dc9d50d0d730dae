"""Scans along one axis: Cumsum, Cumprod (exclusive and reverse)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import F, Output, out, torch_kernel, values_of


def _scan(backend: TorchBackend, inputs: tuple, attrs: dict, fn, identity: int) -> Output:
    (x,) = inputs
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]
    dtype = "float32" if x.dtype == "float32" else "int32"  # TF.js: upcast with int32 (bool -> int32)
    v = values_of(backend, x)
    work = F() if dtype == "float32" else torch.int32
    v = v.to(work)
    if reverse:
        v = torch.flip(v, (axis,))
    if exclusive and x.shape[axis]:  # each position sees the values before it: shift by one
        lead = v.narrow(axis, 0, x.shape[axis] - 1)
        first = torch.full_like(v.narrow(axis, 0, 1), identity)
        v = torch.cat([first, lead], dim=axis)
    result = fn(v, dim=axis, dtype=work)
    if reverse:
        result = torch.flip(result, (axis,))
    return out(backend, result, dtype, x.shape)


@torch_kernel(kn.Cumsum)
def cumsum(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _scan(backend, inputs, attrs, torch.cumsum, 0)


@torch_kernel(kn.Cumprod)
def cumprod(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    return _scan(backend, inputs, attrs, torch.cumprod, 1)
