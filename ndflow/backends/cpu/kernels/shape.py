"""Shape and dtype changes: Reshape, ExpandDims, Identity, Cast, Transpose."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ....core.kernel_registry import register_shared_output
from ...shared.numbers import to_int32
from ...shared.shape import register_view_kernels
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, share, values_of

register_view_kernels(cpu_kernel, share)  # Reshape, ExpandDims, Identity
register_shared_output(kn.Reshape, "cpu")  # compiled dispatch may share the buffer itself


@cpu_kernel(kn.Cast)
def cast(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dtype = attrs["dtype"]
    if dtype == x.dtype:
        return share(backend, x.data_id, x.shape, x.dtype)
    values = values_of(backend, x)
    if dtype == "int32" and values.dtype.kind in "fc":
        return out(backend, to_int32(np.real(values) if values.dtype.kind == "c" else values), dtype)
    if dtype == "bool":
        return out(backend, values != 0, dtype)
    if x.dtype == "complex64" and dtype == "float32":
        return out(backend, np.real(values), dtype)
    if x.dtype == "string" or dtype == "string":
        raise TypeError(f"cast: cannot cast between {x.dtype} and {dtype}")
    return out(backend, values.astype(NUMPY_DTYPE[dtype]), dtype)


@cpu_kernel(kn.Transpose)
def transpose(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, values.transpose(attrs["perm"]).copy(), x.dtype)
