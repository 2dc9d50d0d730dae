"""Helpers shared by the webgpu kernels: registration, shapes, and WGSL snippets for indexing.

A kernel is ``fn(backend, inputs, attrs) -> Output | list[Output]`` as on every backend. GPU kernels call
:meth:`WebGPUBackend.run` with a program key, a function returning the program's WGSL code, the inputs
by binding name, the outputs and the parameters (see ``program.py`` for what the code can use).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from ....core.kernel_registry import kernel_table, register_kernel
from ..backend import Output, Ref, WebGPUBackend
from ..limits import LimitError
from ..program import GPU_DTYPES

__all__ = [
    "GPU_DTYPES", "Output", "Ref", "WebGPUBackend", "gpu_kernel", "size_of", "strides_of", "on_gpu_dtypes",
    "coords_fn", "index_fn", "broadcast_index_fn", "wgsl_float", "share",
]  # fmt: skip

# Kernels that have a GPU program (the rest are forwarded to the cpu kernels).
GPU_KERNELS: set[str] = set()


def gpu_kernel(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the webgpu kernel ``name``."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output | list[Output]:
            try:
                return fn(backend, inputs, attrs)
            except LimitError as exc:
                return over_limit(name, exc, backend, inputs, attrs)

        register_kernel(name, "webgpu", kernel)
        GPU_KERNELS.add(name)
        return fn

    return wrap


logger = logging.getLogger(__name__)
_WARNED: set[str] = set()


def over_limit(name: str, exc: LimitError, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Any:
    """A GPU kernel hit a device limit (:class:`LimitError`, raised before the program was recorded): run the
    cpu kernel on the CPU values instead (a warning, once per kernel), or, without one, raise naming the kernel."""
    if name not in kernel_table("cpu"):
        raise LimitError(f"webgpu kernel {name}: {exc} (and the cpu backend has no {name} kernel)") from exc
    if name not in _WARNED:
        _WARNED.add(name)
        logger.warning("webgpu kernel %s runs on the CPU: %s", name, exc)
    from .forward import forward

    return forward(name, backend, inputs, attrs)


def size_of(shape: Sequence[int]) -> int:
    return math.prod(shape)


def strides_of(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of ``shape`` (at least one entry, so WGSL arrays are never empty)."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides or [1]


def on_gpu_dtypes(*tensors: object) -> bool:
    """Whether every tensor has a dtype that GPU programs handle (float32, int32, bool)."""
    return all(getattr(t, "dtype", None) in GPU_DTYPES for t in tensors)


def share(backend: WebGPUBackend, data_id: int, shape: tuple[int, ...], dtype: str) -> Output:
    """An output that reuses an input's data (reshape, identity): one more owner of it."""
    backend.inc_ref(data_id)
    return data_id, tuple(shape), dtype


def wgsl_float(value: float) -> str:
    """A WGSL f32 expression with exactly ``value`` (infinities and NaN included)."""
    if math.isfinite(value):
        return f"f32({float(value)!r})"
    if math.isnan(value):
        return "bitcast<f32>(0x7fc00000u)"
    return "bitcast<f32>(0x7f800000u)" if value > 0 else "bitcast<f32>(0xff800000u)"


def coords_fn(name: str, rank: int, shape_param: str | None = None) -> str:
    """WGSL ``fn <name>_coords(index: i32) -> array<i32, R>``: the coordinates of a flat index, by the
    parameter ``<name>_shape`` (``shape_param`` to use another), an ``array<i32, R>`` (R = max(rank, 1))."""
    shape = shape_param or f"{name}_shape"
    r = max(rank, 1)
    lines = [f"fn {name}_coords(index: i32) -> array<i32, {r}> {{", f"  var c: array<i32, {r}>;", "  var rest = index;"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"  c[{d}] = rest % {shape}[{d}]; rest = rest / {shape}[{d}];")
    lines.append("  c[0] = rest;")
    lines.append("  return c;\n}")
    return "\n".join(lines)


def index_fn(name: str, rank: int, strides_param: str | None = None) -> str:
    """WGSL ``fn <name>_index(c: array<i32, R>) -> i32``: the flat index of coordinates, by the parameter
    ``<name>_strides`` (``strides_param`` to use another)."""
    strides = strides_param or f"{name}_strides"
    r = max(rank, 1)
    terms = " + ".join(f"c[{d}] * {strides}[{d}]" for d in range(rank)) or "0"
    return f"fn {name}_index(c: array<i32, {r}>) -> i32 {{ return {terms}; }}"


def broadcast_index_fn(name: str, rank: int, out_rank: int) -> str:
    """WGSL ``fn <name>_bindex(c: array<i32, OR>) -> i32``: the flat index in input ``name`` (rank ``rank``)
    of the output coordinates ``c`` under numpy broadcasting, by the parameter ``<name>_bstrides``: the
    input's strides aligned right, 0 for broadcast dimensions (see :func:`broadcast_strides`)."""
    r = max(out_rank, 1)
    offset = out_rank - rank
    terms = " + ".join(f"c[{d}] * {name}_bstrides[{d - offset}]" for d in range(offset, out_rank)) or "0"
    return f"fn {name}_bindex(c: array<i32, {r}>) -> i32 {{ return {terms}; }}"


def broadcast_strides(shape: Sequence[int]) -> list[int]:
    """The strides of ``shape`` with 0 for its size-1 dimensions (the ``_bstrides`` parameter)."""
    return [0 if n == 1 else s for n, s in zip(shape, strides_of(shape), strict=False)] or [0]
