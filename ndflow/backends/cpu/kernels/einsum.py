"""Einstein summation: Einsum (the op has already checked the equation against the inputs)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ...shared.einsum import einsum_spec
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.Einsum)
def einsum(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    spec, dtype = einsum_spec(attrs["equation"], [t.dtype for t in inputs])
    arrays = [values_of(backend, t).astype(NUMPY_DTYPE[dtype], copy=False) for t in inputs]
    return out(backend, np.einsum(spec, *arrays), dtype)
