"""``_NdflowHardSwish`` (ndflow's graph optimizer writes it; converter/passes/hard_swish.py): MobileNetV3's
``x * relu6(x + 3) * c`` in one pass, the float32 operations of the four ops it replaces in their order."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from .. import numba as jit
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _four_ops(x: np.ndarray, three: np.float32, scale: np.float32, scale_first: bool) -> np.ndarray:
    t = np.clip(x + three, np.float32(0), np.float32(6))  # NaN stays NaN, as the Relu6 kernel
    return (x * scale) * t if scale_first else (x * t) * scale


@cpu_kernel(kn._NdflowHardSwish)
def hard_swish(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, three, scale = inputs
    values = values_of(backend, x)
    if x.dtype != "float32" or three.size != 1 or scale.size != 1 or max(three.rank, scale.rank) > x.rank:
        raise ValueError("_NdflowHardSwish: x must be float32 and 3 and the scale one-value constants of lower rank")
    order = attrs.get("order", "scale_first")
    if order not in ("scale_first", "scale_last"):
        raise ValueError(f"_NdflowHardSwish: attribute 'order' must be 'scale_first' or 'scale_last', got {order!r}")
    t3 = np.float32(values_of(backend, three).reshape(-1)[0])
    c = np.float32(values_of(backend, scale).reshape(-1)[0])
    first = order == "scale_first"
    k = jit.kernels()
    if k is not None and values.size >= 2048:
        y = np.empty(values.shape, np.float32)
        k.hard_swish(np.ascontiguousarray(values).reshape(-1), y.reshape(-1), t3, c, first)
        return out(backend, y, "float32")
    return out(backend, _four_ops(values, t3, c, first), "float32")
