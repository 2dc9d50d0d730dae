"""Cast on the GPU between float32, int32 and bool.

float32 -> int32 truncates, gives 0 for NaN and infinities and wraps modulo 2**32 (TF.js's Int32Array);
any -> bool is ``x != 0`` (NaN is true); int32/bool -> float32 converts the value. A cast to the input's
own dtype shares the input's data. complex64 and string casts are forwarded to the cpu kernel.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from .binary import elementwise
from .common import GPU_DTYPES, Output, WebGPUBackend, gpu_kernel, share
from .forward import forward

_BODIES = {
    ("float32", "int32"): "return m_to_i32(x);",
    ("float32", "bool"): "return select(0i, 1i, m_truthy(x));",
    ("int32", "float32"): "return f32(x);",
    ("bool", "float32"): "return f32(x);",
    ("int32", "bool"): "return select(0i, 1i, x != 0i);",
    ("bool", "int32"): "return x;",
}


@gpu_kernel(kn.Cast)
def cast(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dtype = attrs["dtype"]
    if dtype == x.dtype:
        return share(backend, x.data_id, x.shape, x.dtype)
    if x.dtype not in GPU_DTYPES or dtype not in GPU_DTYPES:
        return forward("Cast", backend, inputs, attrs)
    return elementwise(backend, "Cast", [("x", x)], dtype, _BODIES[(x.dtype, dtype)])
