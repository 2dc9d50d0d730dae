"""3-D convolutions: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (NDHWC).

The same im2col / col2im scheme as the 2-D kernels (``conv.py``). Conv3D keeps the dtype of x, as
TF.js does: integer and bool inputs are convolved exactly (int64), float mixes in float64, and the
result is stored like a JavaScript typed array stores numbers (truncation; int32 wraps, bool is
"non-zero modulo 256").
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.conv import check_dy, info_from_attrs
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out
from .conv import conv_backprop_filter, conv_backprop_input, conv_forward, values


def compute_dtype(*dtypes: str) -> type:
    """numpy dtype in which to convolve tensors of these TF.js dtypes exactly."""
    if all(d in ("int32", "bool") for d in dtypes):
        return np.int64
    if dtypes[0] in ("int32", "bool"):
        return np.float64  # float filter, integer input: exact, then truncated once
    return np.float32


def store_as(result: np.ndarray, dtype: str) -> np.ndarray:
    """``result`` stored as TF.js's typed array for ``dtype`` stores numbers (trunc; int32 wraps)."""
    if dtype == "float32":
        return result.astype(np.float32, copy=False)
    if result.dtype.kind == "f":
        result = np.trunc(result)
        result = np.where(np.isfinite(result), result, 0).astype(np.int64)
    if dtype == "bool":
        return (result % 256) != 0
    return result.astype(np.int32)


@cpu_kernel(kn.Conv3D)
def conv3d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; attributes ``strides``, ``pad``, ``dilations`` (NDHWC)."""
    x, f = inputs
    info = info_from_attrs(x.shape, f.shape, attrs, "Conv3D")
    dtype = compute_dtype(x.dtype, f.dtype)
    y = conv_forward(values(backend, x, dtype), values(backend, f, dtype), info)
    return out(backend, store_as(y, x.dtype), x.dtype)


@cpu_kernel(kn.Conv3DBackpropInputV2)
def conv3d_backprop_input(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv3D for x (conv3d_transpose)."""
    dy, f = inputs
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, "Conv3DBackpropInputV2")
    check_dy(dy.shape, info, "Conv3DBackpropInputV2")
    dtype = np.float64 if "int32" in (dy.dtype, f.dtype) or "bool" in (dy.dtype, f.dtype) else np.float32
    dx = conv_backprop_input(values(backend, dy, dtype), values(backend, f, dtype), info)
    return out(backend, dx, "float32")


@cpu_kernel(kn.Conv3DBackpropFilterV2)
def conv3d_backprop_filter(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv3D for its filter."""
    x, dy = inputs
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, "Conv3DBackpropFilterV2")
    check_dy(dy.shape, info, "Conv3DBackpropFilterV2")
    dw = conv_backprop_filter(values(backend, x), values(backend, dy), info, filter_shape)
    return out(backend, dw, "float32")
