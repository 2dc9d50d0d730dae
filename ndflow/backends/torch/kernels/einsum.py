"""Einstein summation: Einsum (the op has already checked the equation against the inputs)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ...shared.einsum import einsum_spec
from ..backend import TorchBackend
from .common import Output, out, torch_dtype, torch_kernel, values_of


@torch_kernel(kn.Einsum)
def einsum(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    spec, dtype = einsum_spec(attrs["equation"], [t.dtype for t in inputs])
    if dtype in ("int32", "bool"):  # exact integer products modulo 2**32, on the host (int64)
        arrays = [values_of(backend, t).cpu().long() for t in inputs]
        wide = torch.einsum(spec, *arrays).to(backend.device)
        return out(backend, wide != 0 if dtype == "bool" else wide.to(torch.int32), dtype)
    arrays = [values_of(backend, t).to(torch_dtype(dtype)) for t in inputs]
    return out(backend, torch.einsum(spec, *arrays), dtype)
