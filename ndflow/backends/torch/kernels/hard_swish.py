"""``_NdflowHardSwish`` (ndflow's graph optimizer writes it; converter/passes/hard_swish.py): ``x * relu6(x + 3) * c``
as the four float32 ops it replaces, in their order (torch's own hardswish divides by 6: other bits)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


@torch_kernel(kn._NdflowHardSwish)
def hard_swish(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    x, three, scale = inputs
    if x.dtype != "float32" or three.size != 1 or scale.size != 1 or max(three.rank, scale.rank) > x.rank:
        raise ValueError("_NdflowHardSwish: x must be float32 and 3 and the scale one-value constants of lower rank")
    order = attrs.get("order", "scale_first")
    if order not in ("scale_first", "scale_last"):
        raise ValueError(f"_NdflowHardSwish: attribute 'order' must be 'scale_first' or 'scale_last', got {order!r}")
    v = values_of(backend, x)
    t3, c = values_of(backend, three).reshape(()), values_of(backend, scale).reshape(())
    t = torch.clamp(v + t3, 0, 6)  # NaN stays NaN, as the Relu6 kernel
    y = (v * c) * t if order == "scale_first" else (v * t) * c
    return out(backend, y, "float32", x.shape)
