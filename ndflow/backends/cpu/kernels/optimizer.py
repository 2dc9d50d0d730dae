"""Optimizer updates in one kernel: ``_NdflowAdamUpdate`` (Adam's update of one variable, train/adam.py).

numba's loop (``numba/_grad_kernels.adam_update``) makes one pass where the op-by-op update made eleven (4.7 ms a
step for an LSTM text model's 640,000 embedding values); numpy's expressions where numba is not available. Both are
the op-by-op update's float32 operations in its order."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared import adam as shared_adam
from ..backend import CPUBackend
from ..numba import kernels
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn._NdflowAdamUpdate)
def adam_update(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    value, m, v, g = (np.ascontiguousarray(values_of(backend, t), dtype=np.float32) for t in inputs)
    k = kernels()
    if k is not None and value.size:
        shape = value.shape
        flat = [a.reshape(-1) for a in (value, m, v, g)]
        new = [np.empty(value.size, np.float32) for _ in range(3)]
        k.adam_update(*flat, *new, *shared_adam.scalars(attrs))
        results = [a.reshape(shape) for a in new]
    else:
        results = list(shared_adam.adam_update(value, m, v, g, attrs, np.sqrt))
    return [out(backend, r, "float32") for r in results]
