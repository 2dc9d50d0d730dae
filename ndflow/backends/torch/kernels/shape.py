"""Shape and dtype changes: Reshape, ExpandDims, Identity, Cast, Transpose.

Transpose returns a permuted view of its input (torch reads strided tensors everywhere; a matrix
product takes a transposed operand as it is).
"""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ....core.kernel_registry import register_shared_output
from ...shared.shape import register_view_kernels
from ..backend import TorchBackend
from ._bools import from_bool
from .binary import to_int32
from .common import Output, out, share, torch_dtype, torch_kernel, values_of

register_view_kernels(torch_kernel, share)  # Reshape, ExpandDims, Identity
register_shared_output(kn.Reshape, "torch")  # compiled dispatch may share the buffer itself


@torch_kernel(kn.Cast)
def cast(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dtype = attrs["dtype"]
    if dtype == x.dtype:
        return share(backend, x.data_id, x.shape, x.dtype)
    if x.dtype == "string" or dtype == "string":
        raise TypeError(f"cast: cannot cast between {x.dtype} and {dtype}")
    v = values_of(backend, x)
    if dtype == "int32" and (v.is_floating_point() or v.is_complex()):
        return out(backend, to_int32(torch.real(v) if v.is_complex() else v), dtype, x.shape)
    if dtype == "bool":  # non-zero (NaN included) is true: what a cast to torch.bool gives too
        return out(backend, v != 0 if v.is_complex() else v.to(torch.bool), dtype, x.shape)
    if x.dtype == "complex64" and dtype == "float32":
        return out(backend, torch.real(v).clone(), dtype, x.shape)
    if x.dtype == "bool":
        return out(backend, from_bool(v, torch_dtype(dtype)), dtype, x.shape)
    return out(backend, v.to(torch_dtype(dtype)), dtype, x.shape)


@torch_kernel(kn.Transpose, strings=True)
def transpose(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    perm = tuple(attrs["perm"])
    shape = tuple(x.shape[p] for p in perm)
    # A permuted view: no copy, and no memory pinned beyond the input's own (same size).
    return out(backend, values_of(backend, x).permute(perm), x.dtype, shape)
