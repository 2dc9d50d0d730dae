"""3-D convolutions on the GPU: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (NDHWC).

The implicit-GEMM programs of ``conv.py`` with three spatial dimensions. Conv3D keeps x's dtype, as the
cpu kernel: int32/bool inputs (with an int32/bool filter) accumulate in i32, which wraps exactly as the cpu
kernel's int64 sum stored into int32; a bool result is "non-zero modulo 256". A float32 x takes any filter
(converted to f32, as the cpu kernel). An int32/bool x with a float32 filter runs on the cpu kernel: it
accumulates in float64 before truncating, which f32 cannot reproduce. The backprops give float32 and read
any real dtype as f32.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ...shared.conv import check_dy, info_from_attrs
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .conv import conv_backprop_filter_program, conv_backprop_input_program, conv_forward_program
from .forward import forward


@gpu_kernel(kn.Conv3D)
def conv3d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; attributes ``strides``, ``pad``, ``dilations`` (NDHWC)."""
    x, f = inputs
    integer_x = x.dtype in ("int32", "bool")
    if not on_gpu_dtypes(x, f) or (integer_x and f.dtype == "float32"):
        return forward("Conv3D", backend, inputs, attrs)
    info = info_from_attrs(x.shape, f.shape, attrs, "Conv3D")
    return conv_forward_program(backend, x, f, info, t="i32" if integer_x else "f32", out_dtype=x.dtype)


@gpu_kernel(kn.Conv3DBackpropInputV2)
def conv3d_backprop_input(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv3D for x (conv3d_transpose)."""
    dy, f = inputs
    if not on_gpu_dtypes(dy, f):
        return forward("Conv3DBackpropInputV2", backend, inputs, attrs)
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, "Conv3DBackpropInputV2")
    check_dy(dy.shape, info, "Conv3DBackpropInputV2")
    return conv_backprop_input_program(backend, dy, f, info)


@gpu_kernel(kn.Conv3DBackpropFilterV2)
def conv3d_backprop_filter(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv3D for its filter."""
    x, dy = inputs
    if not on_gpu_dtypes(x, dy):
        return forward("Conv3DBackpropFilterV2", backend, inputs, attrs)
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, "Conv3DBackpropFilterV2")
    check_dy(dy.shape, info, "Conv3DBackpropFilterV2")
    return conv_backprop_filter_program(backend, x, dy, info, filter_shape)
