"""Shape kernels (Reshape, ExpandDims, Identity, Transpose) and the index-map programs of the shape family.

Reshape, ExpandDims and Identity share the input's data (one more owner, no copy), as the cpu kernels do.
Every other kernel of the family (slicing, gathering, tiling, padding, space/batch rearrangements) writes
each output element from one input element (or a fill value), so they share two program shapes:

- :func:`strided_view`: ``out[c] = x[offset + sum(c[d] * strides[d])]`` with any strides (negative for
  reversed axes, 0 for broadcast ones); adjacent output dimensions that the strides allow are merged first,
  so that a transpose of two blocks or a slice of a contiguous range runs a low-rank program;
- :func:`index_map`: ``out[c] = x[src(c)]`` for a WGSL body computing ``src`` from the output coordinates
  ``c``; a negative ``src`` writes the fill value (padding, out-of-range indices).

Offsets, strides and shapes are parameters (shape uniforms), so one compiled program serves every shape
of a rank. complex64 and string tensors have no GPU storage: their Transpose is forwarded to the cpu kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ....core import kernel_names as kn
from ...shared.shape import register_view_kernels
from .common import (
    Output,
    Ref,
    WebGPUBackend,
    coords_fn,
    gpu_kernel,
    on_gpu_dtypes,
    share,
    size_of,
    strides_of,
)

__all__ = ["strided_view", "index_map", "fill_param", "max_bindings", "empty_output", "as_ref", "cpu_values"]


def max_bindings(backend: WebGPUBackend) -> int:
    """How many tensors one program may bind besides one more tensor and the parameter buffer."""
    limit = int(backend.gpu.limits.get("max-storage-buffers-per-shader-stage", 8))
    return max(limit - 2, 1)


def as_ref(t: object, shape: Sequence[int] | None = None) -> Ref:
    """A :class:`Ref` to a tensor's data, read as ``shape`` (default: the tensor's own shape)."""
    return Ref(t.data_id, tuple(t.shape if shape is None else shape), t.dtype)  # type: ignore[attr-defined]


def cpu_values(backend: WebGPUBackend, t: object) -> np.ndarray | None:
    """The values of ``t`` when the backend holds them on the CPU (no GPU round trip), else None.

    Kernels use them to check indices as the cpu kernels do when that is free; indices that live only on
    the GPU are not read back (their out-of-range entries give the fill value, as TF.js's GPU backends)."""
    values = backend.data[t.data_id].values  # type: ignore[attr-defined]
    if values is None:
        return None
    return values.reshape(t.shape)  # type: ignore[attr-defined]


def empty_output(backend: WebGPUBackend, shape: Sequence[int], dtype: str) -> Output:
    """A new zero-size output (nothing is dispatched)."""
    return backend.run(("empty",), lambda: "", [], [("out", tuple(shape), dtype)], invocations=0)[0]


def fill_param(dtype: str, value: float | int | bool) -> float | int:
    """A fill value as a program parameter of the compute type of ``dtype`` (f32 or i32)."""
    return float(value) if dtype == "float32" else int(value)


def _simplify(shape: Sequence[int], strides: Sequence[int]) -> tuple[list[int], list[int]]:
    """Drop size-1 dimensions and merge neighbours that one stride covers (the view stays the same)."""
    dims = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    merged: list[list[int]] = []
    for n, s in dims:
        if merged and merged[-1][1] == s * n:
            merged[-1] = [merged[-1][0] * n, s]
        else:
            merged.append([n, s])
    return [n for n, _ in merged], [s for _, s in merged]


def strided_view(
    backend: WebGPUBackend,
    x: object,
    out_shape: Sequence[int],
    offset: int,
    strides: Sequence[int],
) -> Output:
    """A new tensor of ``out_shape`` whose element ``c`` is ``x.flat[offset + sum(c[d] * strides[d])]``."""
    out_shape = tuple(int(n) for n in out_shape)
    if size_of(out_shape) == 0:
        return empty_output(backend, out_shape, x.dtype)  # type: ignore[attr-defined]
    shape, vstrides = _simplify(out_shape, strides)
    rank = len(shape)
    terms = "".join(f" + c[{d}] * view_strides[{d}]" for d in range(rank))
    # Four consecutive outputs per invocation when the innermost extent allows: one coordinate computation
    # (the integer divisions) serves four loads and stores.
    vec = 4 if rank and shape[-1] % 4 == 0 else 1

    def code() -> str:
        if vec == 1:
            run = "store_out(index, load_x(s));"
        else:
            run = f"let st = view_strides[{rank - 1}]; " + " ".join(
                f"store_out(index * 4 + {k}, load_x(s + {k} * st));" for k in range(4)
            )
        return (
            f"{coords_fn('out', rank)}\n"
            f"fn compute(index: i32) {{ let c = out_coords(index * {vec}); let s = view_offset{terms}; {run} }}"
        )

    params = {"out_shape": shape or [1], "view_strides": vstrides or [0], "view_offset": int(offset)}
    size = size_of(out_shape) // vec
    outputs = [("out", out_shape, x.dtype)]  # type: ignore[attr-defined]
    return backend.run(("view", rank, vec), code, [("x", x)], outputs, params, invocations=size)[0]


def index_map(
    backend: WebGPUBackend,
    key: tuple,
    x: object,
    out_shape: Sequence[int],
    body: str,
    params: dict,
    fill: float | int | None = None,
    out_dtype: str | None = None,
) -> Output:
    """A new tensor of ``out_shape``: element ``c`` is ``x.flat[src]`` where the WGSL ``body`` (statements
    ending in ``return src;``, with ``c: array<i32, R>`` the output coordinates and ``params`` in scope)
    computes ``src``; with ``fill`` given, a negative ``src`` writes ``fill`` instead. ``key`` must determine
    ``body``."""
    out_shape = tuple(int(n) for n in out_shape)
    dtype = out_dtype or x.dtype  # type: ignore[attr-defined]
    if size_of(out_shape) == 0:
        return empty_output(backend, out_shape, dtype)
    rank = len(out_shape)
    r = max(rank, 1)

    def code() -> str:
        if fill is None:
            store = "store_out(index, load_x(s));"
        else:
            store = "if (s < 0) { store_out(index, fill_value); } else { store_out(index, load_x(s)); }"
        return (
            f"{coords_fn('out', rank)}\n"
            f"fn src_index(c: array<i32, {r}>) -> i32 {{\n{body}\n}}\n"
            f"fn compute(index: i32) {{ let s = src_index(out_coords(index)); {store} }}"
        )

    all_params = {"out_shape": list(out_shape) or [1], **params}
    if fill is not None:
        all_params["fill_value"] = fill_param(dtype, fill)
    program = ("map", *key, rank, fill is not None)
    return backend.run(program, code, [("x", x)], [("out", out_shape, dtype)], all_params)[0]


# ----------------------------------------------------------------------------- kernels


register_view_kernels(gpu_kernel, share)  # Reshape, ExpandDims, Identity


@gpu_kernel(kn.Transpose)
def transpose(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        from .forward import forward

        return forward("Transpose", backend, inputs, attrs)
    perm = list(attrs["perm"])
    strides = strides_of(x.shape)
    return strided_view(backend, x, [x.shape[p] for p in perm], 0, [strides[p] for p in perm])
