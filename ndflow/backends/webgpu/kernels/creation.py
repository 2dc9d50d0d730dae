"""Tensors made on the GPU from attributes: Fill, Range, LinSpace, ZerosLike, OnesLike.

The values are parameters of one program per dtype (no upload): Fill stores one value, Range and LinSpace
``start + step * i``. Range of int32 with int32 start and step adds in int32; an int32 Range with a
fractional start or step is computed by the cpu kernel (float64 values truncated: in f32, 0.7 * 90 truncates
to 63 instead of 62); float32 Range values are computed in f32 (the cpu kernel uses float64, then rounds to
float32: the results can differ in the last bit). String and complex64 tensors are forwarded to the cpu kernels.
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from .common import GPU_DTYPES, Output, WebGPUBackend, gpu_kernel
from .forward import forward

_CT = {"float32": "f32", "int32": "i32", "bool": "i32"}


def filled(backend: WebGPUBackend, shape: tuple[int, ...], dtype: str, value: float | int | bool) -> Output:
    """A new GPU tensor of ``shape`` and ``dtype`` (float32, int32 or bool) with every element ``value``."""
    param = float(value) if dtype == "float32" else int(bool(value) if dtype == "bool" else value)

    def code() -> str:
        return "fn compute(index: i32) { store_out(index, fill_value); }"

    return backend.run(("fill",), code, [], [("out", tuple(shape), dtype)], {"fill_value": param})[0]


@gpu_kernel(kn.Fill)
def fill(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    dtype = attrs["dtype"]
    if dtype not in GPU_DTYPES:
        return forward("Fill", backend, inputs, attrs)
    return filled(backend, tuple(attrs["shape"]), dtype, attrs["value"])


@gpu_kernel(kn.ZerosLike)
def zeros_like(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    if x.dtype not in GPU_DTYPES:
        return forward("ZerosLike", backend, inputs, attrs)
    return filled(backend, x.shape, x.dtype, 0)


@gpu_kernel(kn.OnesLike)
def ones_like(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    if x.dtype not in GPU_DTYPES:
        return forward("OnesLike", backend, inputs, attrs)
    return filled(backend, x.shape, x.dtype, 1)


def _sequence(backend: WebGPUBackend, n: int, dtype: str, start: float | int, step: float | int) -> Output:
    """``start + step * i`` for i < n, computed in ``dtype``'s compute type."""
    t = _CT[dtype]

    def code() -> str:
        return f"fn compute(index: i32) {{ store_out(index, seq_start + seq_step * {t}(index)); }}"

    params = {"seq_start": start, "seq_step": step}
    return backend.run(("sequence", t), code, [], [("out", (n,), dtype)], params)[0]


@gpu_kernel(kn.Range)
def range_(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    start, stop, step, dtype = attrs["start"], attrs["stop"], attrs["step"], attrs["dtype"]
    n = max(int(np.ceil((stop - start) / step)), 0)
    if dtype == "int32" and all(float(v).is_integer() and -(2**31) <= v < 2**31 for v in (start, step)):
        return _sequence(backend, n, "int32", int(start), int(step))
    if dtype == "int32":  # a fractional (or huge) start or step: float64 values truncated, on the CPU
        return forward("Range", backend, inputs, attrs)
    return _sequence(backend, n, "float32", float(start), float(step))


@gpu_kernel(kn.LinSpace)
def lin_space(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """``num`` values: float32 ``start + step * i``, as the cpu kernel (all in float32)."""
    start, stop, num = attrs["start"], attrs["stop"], int(attrs["num"])
    step = (stop - start) / (num - 1) if num > 1 else 0.0
    return _sequence(backend, num, "float32", float(np.float32(start)), float(np.float32(step)))
