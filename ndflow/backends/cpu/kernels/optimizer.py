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
    shape = tuple(inputs[0].shape)  # (np.ascontiguousarray makes a 0-d array 1-d: the outputs take this shape)
    value, m, v, g = (np.ascontiguousarray(values_of(backend, t), dtype=np.float32).reshape(-1) for t in inputs)
    k = kernels()
    if k is not None and value.size:
        new = [np.empty(value.size, np.float32) for _ in range(3)]
        k.adam_update(value, m, v, g, *new, *shared_adam.scalars(attrs))
    else:
        new = list(shared_adam.adam_update(value, m, v, g, attrs, np.sqrt))
    return [out(backend, r.reshape(shape), "float32") for r in new]
