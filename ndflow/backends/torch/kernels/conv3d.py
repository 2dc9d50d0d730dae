"""3-D convolutions: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (NDHWC).

The same scheme as the 2-D kernels (``conv.py``): a channels_last_3d view into torch's conv3d.
Conv3D keeps the dtype of x, as TF.js does: integer and bool inputs are convolved in float64 (TF.js
computes in JavaScript numbers) and the result is stored like a typed array stores numbers
(truncation; int32 wraps, bool is "non-zero modulo 256").
"""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from ._threads import conv_forward_flops, conv_input_grad_flops, filter_grad_flops
from .binary import store
from .common import F, Output, out, torch_kernel
from .conv import (
    check_dy,
    conv_backprop_filter,
    conv_backprop_input,
    conv_forward,
    floats,
    from_torch_layout,
    from_torch_weight,
    geometry,
    to_torch_layout,
    torch_weight,
)


def compute_dtype(*dtypes: str) -> torch.dtype:
    """The torch dtype in which to convolve tensors of these TF.js dtypes."""
    return torch.float64 if any(d in ("int32", "bool") for d in dtypes) else F()


def store_as(result: torch.Tensor, dtype: str) -> torch.Tensor:
    """``result`` stored as TF.js's typed array for ``dtype`` stores numbers (trunc; int32 wraps)."""
    return result if dtype == "float32" else store(result, dtype)


@torch_kernel(kn.Conv3D, parallel=conv_forward_flops)
def conv3d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; attributes ``strides``, ``pad``, ``dilations`` (NDHWC)."""
    x, f = inputs
    geo = geometry(x.shape, f.shape, attrs, "Conv3D")
    info = geo[0]
    dtype = compute_dtype(x.dtype, f.dtype)
    y = conv_forward(to_torch_layout(floats(backend, x, dtype), info), torch_weight(floats(backend, f, dtype)), geo)
    return out(backend, store_as(from_torch_layout(y, info), x.dtype), x.dtype, info.out_shape)


@torch_kernel(kn.Conv3DBackpropInputV2, parallel=conv_input_grad_flops)
def conv3d_backprop_input(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv3D for x (conv3d_transpose)."""
    dy, f = inputs
    geo = geometry(tuple(attrs["input_shape"]), f.shape, attrs, "Conv3DBackpropInputV2")
    info = geo[0]
    check_dy(dy.shape, info, "Conv3DBackpropInputV2")
    dtype = compute_dtype(dy.dtype, f.dtype)
    dyv = to_torch_layout(floats(backend, dy, dtype), info)
    dx = conv_backprop_input(dyv, torch_weight(floats(backend, f, dtype)), geo)
    return out(backend, from_torch_layout(dx, info), "float32", info.in_shape)


@torch_kernel(kn.Conv3DBackpropFilterV2, parallel=filter_grad_flops)
def conv3d_backprop_filter(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv3D for its filter."""
    x, dy = inputs
    filter_shape = tuple(attrs["filter_shape"])
    geo = geometry(x.shape, filter_shape, attrs, "Conv3DBackpropFilterV2")
    info = geo[0]
    check_dy(dy.shape, info, "Conv3DBackpropFilterV2")
    weight_shape = (filter_shape[-1], filter_shape[-2], *filter_shape[:-2])
    xv = to_torch_layout(floats(backend, x), info)
    dw = conv_backprop_filter(xv, to_torch_layout(floats(backend, dy), info), geo, weight_shape)
    return out(backend, from_torch_weight(dw), "float32", filter_shape)
