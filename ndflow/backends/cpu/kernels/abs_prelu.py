"""``_NdflowAbsPrelu`` (ndflow's graph optimizer writes it; converter/passes/abs_prelu.py): a PReLU written with
``Abs``, ``x + (x - |x|) * c``, in one pass: the float32 operations of the four ops it replaces, in their
order (the same bits)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.broadcast_util import broadcasts_to
from .. import numba as jit
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _check(x, c) -> None:
    if x.dtype != "float32" or c.dtype != "float32" or not broadcasts_to(c.shape, x.shape):
        raise ValueError(
            f"_NdflowAbsPrelu: x must be float32 and c a float32 tensor that broadcasts to x's shape, got x "
            f"{x.dtype} {list(x.shape)} and c {c.dtype} {list(c.shape)}"
        )


@cpu_kernel(kn._NdflowAbsPrelu)
def abs_prelu(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    x, c = inputs
    _check(x, c)
    values, cv = values_of(backend, x), values_of(backend, c)
    channels = x.shape[-1] if x.rank else 1
    per_channel = cv.size == 1 or (cv.ndim >= 1 and cv.shape[-1] == channels and cv.size == channels)
    k = jit.kernels()
    if k is not None and per_channel and values.size >= 2048 and channels > 0:
        y = np.empty(values.shape, np.float32)
        slopes = np.ascontiguousarray(np.broadcast_to(cv.reshape(-1), (channels,)))
        k.abs_prelu(np.ascontiguousarray(values).reshape(-1, channels), y.reshape(-1, channels), slopes)
        return out(backend, y, "float32")
    return out(backend, values + (values - np.abs(values)) * cv, "float32")
