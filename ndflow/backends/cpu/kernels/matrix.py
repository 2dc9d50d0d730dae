"""Matrix products: BatchMatMul (batch dims broadcast)."""

from __future__ import annotations

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel("BatchMatMul")
def batch_mat_mul(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    a, b = inputs
    va = values_of(backend, a)
    vb = values_of(backend, b)
    if attrs.get("transpose_a"):
        va = np.swapaxes(va, -1, -2)
    if attrs.get("transpose_b"):
        vb = np.swapaxes(vb, -1, -2)
    return out(backend, np.matmul(va, vb), a.dtype)
