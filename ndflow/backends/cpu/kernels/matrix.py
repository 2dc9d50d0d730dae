"""Matrices: BatchMatMul (batch dims broadcast), Diag, MatrixBandPart."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct_product
from ..backend import CPUBackend
from ..native import parallel
from ..plans.product import product
from .common import Output, cpu_kernel, out, values_of

_F32 = np.dtype(np.float32)

#: Dimensions from which a product with a transposed operand copies it contiguous for the C module's route (an MLP's
#: weight gradient x.T @ dy ran on numpy's single-threaded products in Python threads: 0.53 ms of a 2.6 ms step).
TRANSPOSED_COPY_MIN = 16


@cpu_kernel(kn.BatchMatMul)
def batch_mat_mul(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    a, b = inputs
    va = values_of(backend, a)
    vb = values_of(backend, b)
    transpose_a, transpose_b = attrs.get("transpose_a"), attrs.get("transpose_b")
    if transpose_a:
        va = np.swapaxes(va, -1, -2)
    if transpose_b:
        vb = np.swapaxes(vb, -1, -2)
    if va.ndim == 2 and vb.ndim == 2 and va.dtype == _F32 == vb.dtype:
        if not (transpose_a or transpose_b):
            return out(backend, product(va, vb), a.dtype)  # parallel.matmul's route, decided once per shapes
        m, k, n = va.shape[0], va.shape[1], vb.shape[1]
        if min(m, n) >= TRANSPOSED_COPY_MIN and k >= TRANSPOSED_COPY_MIN:
            # a gradient's transposed operand (x.T @ dy, dy @ w.T): copied contiguous, the product takes the C
            # module's route (the AVX-512 kernel, split over the cores); the copy is 1/n (1/m) of the product's work
            return out(backend, product(np.ascontiguousarray(va), np.ascontiguousarray(vb)), a.dtype)
        return out(backend, parallel.matmul(va, vb), a.dtype)  # large products over the cores
    return out(backend, np.matmul(va, vb), a.dtype)


register_direct_product(kn.BatchMatMul, "cpu", product)  # compiled dispatch's nf.mat_mul(a, b)


@cpu_kernel(kn.Diag)
def diag(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The values of ``x`` on the diagonal of a ``x.shape + x.shape`` tensor, zeros elsewhere."""
    (x,) = inputs
    flat = values_of(backend, x).reshape(-1)
    n = flat.size
    result = np.zeros((n, n), dtype=flat.dtype)
    result.reshape(-1)[:: n + 1] = flat  # the diagonal of an n x n matrix is every (n + 1)-th value
    return out(backend, result.reshape(x.shape + x.shape), x.dtype)


def _bound(backend: CPUBackend, t: object, full: int) -> int:
    """A band bound from its int32 scalar tensor; a negative bound keeps the whole triangle."""
    value = int(values_of(backend, t).reshape(-1)[0])
    return full if value < 0 else min(value, full)


@cpu_kernel(kn.MatrixBandPart)
def matrix_band_part(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Keep ``num_lower`` sub- and ``num_upper`` super-diagonals of each innermost matrix; zero the rest."""
    x, num_lower, num_upper = inputs
    values = values_of(backend, x)
    m, n = x.shape[-2:]
    lower, upper = _bound(backend, num_lower, m), _bound(backend, num_upper, n)
    offset = np.arange(m)[:, None] - np.arange(n)[None, :]  # row - column
    in_band = (offset <= lower) & (-offset <= upper)
    return out(backend, np.where(in_band, values, np.zeros((), values.dtype)), x.dtype)
