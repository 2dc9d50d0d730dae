"""Matrices: BatchMatMul (batch dims broadcast, as np.matmul), Diag, MatrixBandPart."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from ._threads import matmul_flops
from .common import Output, out, scalar, torch_kernel, values_of


def matmul(va: torch.Tensor, vb: torch.Tensor) -> torch.Tensor:
    """``va @ vb`` with numpy's broadcasting of batch dims; integers exact modulo 2**32 (int64 on the
    host, which every device supports), bools as "any a and b"."""
    if va.is_floating_point() or va.is_complex():
        return torch.matmul(va, vb)
    device = va.device
    wide = torch.matmul(va.cpu().long(), vb.cpu().long()).to(device)
    return wide != 0 if va.dtype is torch.bool else wide.to(torch.int32)


@torch_kernel(kn.BatchMatMul, parallel=matmul_flops)
def batch_mat_mul(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    a, b = inputs
    va, vb = values_of(backend, a), values_of(backend, b)
    if attrs.get("transpose_a"):
        va = va.transpose(-1, -2)
    if attrs.get("transpose_b"):
        vb = vb.transpose(-1, -2)
    return out(backend, matmul(va, vb), a.dtype)


@torch_kernel(kn.Diag, strings=True)
def diag(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The values of ``x`` on the diagonal of a ``x.shape + x.shape`` tensor, zeros elsewhere."""
    (x,) = inputs
    flat = values_of(backend, x).reshape(-1)
    n = flat.numel()
    result = torch.zeros((n, n), dtype=flat.dtype, device=flat.device)
    result.view(-1)[:: n + 1] = flat  # the diagonal of an n x n matrix is every (n + 1)-th value
    return out(backend, result.reshape(x.shape + x.shape), x.dtype, x.shape + x.shape)


def _bound(backend: TorchBackend, t: object, full: int) -> int:
    """A band bound from its int32 scalar tensor; a negative bound keeps the whole triangle."""
    value = int(scalar(backend, t))  # type: ignore[arg-type]
    return full if value < 0 else min(value, full)


@torch_kernel(kn.MatrixBandPart, strings=True)
def matrix_band_part(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Keep ``num_lower`` sub- and ``num_upper`` super-diagonals of each innermost matrix; zero the rest."""
    x, num_lower, num_upper = inputs
    v = values_of(backend, x)
    m, n = x.shape[-2:]
    lower, upper = _bound(backend, num_lower, m), _bound(backend, num_upper, n)
    rows = torch.arange(m, device=v.device)[:, None]
    cols = torch.arange(n, device=v.device)[None, :]
    offset = rows - cols
    in_band = (offset <= lower) & (-offset <= upper)
    return out(backend, torch.where(in_band, v, torch.zeros((), dtype=v.dtype, device=v.device)), x.dtype, x.shape)
