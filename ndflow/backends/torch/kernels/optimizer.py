"""``_NdflowAdamUpdate`` (Adam's update of one variable in one kernel, train/adam.py) with torch's operations, in the
op-by-op update's order (``backends/shared/adam.py``)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ...shared import adam as shared_adam
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


@torch_kernel(kn._NdflowAdamUpdate)
def adam_update(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    value, m, v, g = (values_of(backend, t).float() for t in inputs)
    with torch.no_grad():
        results = shared_adam.adam_update(value, m, v, g, attrs, torch.sqrt)
    return [out(backend, r, "float32", tuple(r.shape)) for r in results]
