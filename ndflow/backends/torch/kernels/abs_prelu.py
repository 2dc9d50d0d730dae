"""``_NdflowAbsPrelu`` (ndflow's graph optimizer writes it; converter/passes/abs_prelu.py): a PReLU written with
``Abs``, ``x + (x - |x|) * c``, as the four float32 ops it replaces, in their order."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ....core.broadcast_util import broadcasts_to
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


@torch_kernel(kn._NdflowAbsPrelu)
def abs_prelu(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    x, c = inputs
    if x.dtype != "float32" or c.dtype != "float32" or not broadcasts_to(c.shape, x.shape):
        raise ValueError(
            f"_NdflowAbsPrelu: x must be float32 and c a float32 tensor that broadcasts to x's shape, got x "
            f"{x.dtype} {list(x.shape)} and c {c.dtype} {list(c.shape)}"
        )
    v, cv = values_of(backend, x), values_of(backend, c)
    return out(backend, v + (v - torch.abs(v)) * cv, "float32", x.shape)
