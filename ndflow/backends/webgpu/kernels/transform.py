"""Splitting, tiling, padding and broadcasting on the GPU: SplitV, Unpack, Tile, Reverse, PadV2, MirrorPad,
BroadcastTo, OneHot.

SplitV and Unpack write several outputs from one pass over the input (viewed as ``[outer, columns]``):
each invocation copies one input element to the output whose column range holds it; one program binds at
most ``max_bindings`` outputs, so more parts are written by several programs, each over its own columns.
Reverse, BroadcastTo and Tile are strided views (negative and zero strides; Tile's output axes split into
(repeat, position)); PadV2 and MirrorPad are index maps (see ``shape.py``); OneHot compares each index
with its output column.

BroadcastArgs stays forwarded: it computes a shape from two small shape vectors (host-side bookkeeping, as on
TF.js's GPU backends). complex64 and string tensors have no GPU storage: their kernels are forwarded.
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.numbers import js_number_as
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes, share, size_of, strides_of
from .shape import empty_output, fill_param, index_map, max_bindings, strided_view


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output | list[Output]:
    from .forward import forward

    return forward(name, backend, inputs, attrs)


def _split_program(k: int) -> str:
    lines = [
        "fn compute(index: i32) {",
        "  let o = index / split_width; let col = split_first + index - o * split_width;",
        "  let at = o * split_total + col;",
    ]
    for j in range(k):
        write = f"store_o{j}(o * part_cols[{j}] + col - part_starts[{j}], load_x(at)); return;"
        lines.append(f"  if (col < part_ends[{j}]) {{ {write} }}" if j < k - 1 else f"  {write}")
    lines.append("}")
    return "\n".join(lines)


def split_columns(backend: WebGPUBackend, x: object, axis: int, sizes: list[int], shapes: list[tuple]) -> list[Output]:
    """Split ``x`` along ``axis`` into parts of ``sizes`` with output shapes ``shapes`` (same sizes)."""
    dtype = x.dtype  # type: ignore[attr-defined]
    shape = tuple(x.shape)  # type: ignore[attr-defined]
    outer = size_of(shape[:axis])
    inner = size_of(shape[axis + 1 :])
    total = size_of(shape[axis:])
    results: list[Output | None] = [None] * len(sizes)
    live = []
    start = 0
    for j, (n, out_shape) in enumerate(zip(sizes, shapes, strict=True)):
        if size_of(out_shape) == 0:
            results[j] = empty_output(backend, out_shape, dtype)
        else:
            live.append((j, start * inner, (start + n) * inner, out_shape))
        start += n
    group = max_bindings(backend)
    for g in range(0, len(live), group):
        chunk = live[g : g + group]
        first, last = chunk[0][1], chunk[-1][2]
        params = {
            "split_width": last - first,
            "split_total": total,
            "split_first": first,
            "part_starts": [lo for _, lo, _, _ in chunk],
            "part_ends": [hi for _, _, hi, _ in chunk],
            "part_cols": [hi - lo for _, lo, hi, _ in chunk],
        }
        k = len(chunk)
        outputs = [(f"o{i}", out_shape, dtype) for i, (_, _, _, out_shape) in enumerate(chunk)]
        produced = backend.run(
            ("split", k), lambda k=k: _split_program(k), [("x", x)], outputs, params, invocations=outer * (last - first)
        )
        for (j, _, _, _), output in zip(chunk, produced, strict=True):
            results[j] = output
    return results  # type: ignore[return-value]


@gpu_kernel(kn.SplitV)
def split_v(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("SplitV", backend, inputs, attrs)  # type: ignore[return-value]
    axis = attrs["axis"] % max(len(x.shape), 1)
    sizes = [int(n) for n in attrs["num_or_size_splits"]]
    shapes = [tuple(x.shape[:axis]) + (n,) + tuple(x.shape[axis + 1 :]) for n in sizes]
    return split_columns(backend, x, axis, sizes, shapes)


@gpu_kernel(kn.Unpack)
def unpack(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("Unpack", backend, inputs, attrs)  # type: ignore[return-value]
    axis = attrs["axis"]
    n = x.shape[axis]
    shape = tuple(x.shape[:axis]) + tuple(x.shape[axis + 1 :])
    return split_columns(backend, x, axis, [1] * n, [shape] * n)


@gpu_kernel(kn.Tile)
def tile(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("Tile", backend, inputs, attrs)  # type: ignore[return-value]
    reps = [int(r) for r in attrs["reps"]]
    out_shape = [n * r for n, r in zip(x.shape, reps, strict=True)]
    if size_of(out_shape) == 0:
        return empty_output(backend, out_shape, x.dtype)
    # Output axis d split into (repeat, position) is a view of x with stride 0 along the repeats.
    view_shape, view_strides = [], []
    for n, r, s in zip(x.shape, reps, strides_of(x.shape), strict=False):
        view_shape += [r, n]
        view_strides += [0, s]
    data_id, _, dtype = strided_view(backend, x, view_shape, 0, view_strides)
    return data_id, tuple(out_shape), dtype


@gpu_kernel(kn.Reverse)
def reverse(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dims = {d % max(len(x.shape), 1) for d in attrs["dims"]}
    if not dims:
        return share(backend, x.data_id, x.shape, x.dtype)
    if not on_gpu_dtypes(x):
        return _forward("Reverse", backend, inputs, attrs)  # type: ignore[return-value]
    strides = strides_of(x.shape)[: len(x.shape)]
    offset = sum((x.shape[d] - 1) * strides[d] for d in dims if x.shape[d] > 0)
    view = [-s if d in dims else s for d, s in enumerate(strides)]
    return strided_view(backend, x, x.shape, offset, view)


def _pad_body(rank: int, mirror: bool) -> str:
    lines = ["  var s = 0; var xc = 0;"]
    for d in range(rank):
        lines.append(f"  xc = c[{d}] - pad_before[{d}];")
        if mirror:
            lines.append("  if (xc < 0) { xc = -xc - mirror_shift; }")
            lines.append(f"  if (xc >= x_shape[{d}]) {{ xc = 2 * x_shape[{d}] - 2 + mirror_shift - xc; }}")
        else:
            lines.append(f"  if (xc < 0 || xc >= x_shape[{d}]) {{ return -1; }}")
        lines.append(f"  s = s + xc * x_strides[{d}];")
    lines.append("  return s;")
    return "\n".join(lines)


def _pad_params(x: object, paddings: list) -> tuple[list[int], dict]:
    shape = list(x.shape)  # type: ignore[attr-defined]
    out_shape = [n + int(p[0]) + int(p[1]) for n, p in zip(shape, paddings, strict=True)]
    params = {
        "x_shape": shape or [1],
        "x_strides": strides_of(shape),
        "pad_before": [int(p[0]) for p in paddings] or [0],
    }
    return out_shape, params


@gpu_kernel(kn.PadV2)
def pad_v2(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("PadV2", backend, inputs, attrs)  # type: ignore[return-value]
    paddings = [tuple(p) for p in attrs["paddings"]]
    out_shape, params = _pad_params(x, paddings)
    value = js_number_as(float(attrs["constant_value"]), x.dtype)
    body = _pad_body(len(x.shape), mirror=False)
    if size_of(x.shape) == 0:  # nothing to copy: every element is the constant
        return index_map(backend, ("fill",), x, out_shape, "  return -1;", {}, fill=fill_param(x.dtype, value))
    return index_map(backend, ("pad",), x, out_shape, body, params, fill=fill_param(x.dtype, value))


@gpu_kernel(kn.MirrorPad)
def mirror_pad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("MirrorPad", backend, inputs, attrs)  # type: ignore[return-value]
    paddings = [tuple(p) for p in attrs["paddings"]]
    out_shape, params = _pad_params(x, paddings)
    params["mirror_shift"] = 0 if attrs["mode"] == "reflect" else 1
    return index_map(backend, ("mirror_pad",), x, out_shape, _pad_body(len(x.shape), mirror=True), params)


@gpu_kernel(kn.BroadcastTo)
def broadcast_to(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("BroadcastTo", backend, inputs, attrs)  # type: ignore[return-value]
    shape = [int(n) for n in attrs["shape"]]
    lead = len(shape) - len(x.shape)
    x_strides = strides_of(x.shape)
    strides = [0] * lead + [0 if n == 1 else s for n, s in zip(x.shape, x_strides, strict=False)]
    return strided_view(backend, x, shape, 0, strides)


_ONE_HOT = """
fn compute(index: i32) {
  let i = index / depth;
  store_out(index, select(off_value, on_value, load_indices(i) == index - i * depth));
}
"""


@gpu_kernel(kn.OneHot)
def one_hot(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """On/off values go through float32, then ``dtype``'s typed array, as the cpu kernel (TF.js)."""
    (indices,) = inputs
    dtype, depth = attrs["dtype"], int(attrs["depth"])
    on = js_number_as(float(np.float32(attrs["on_value"])), dtype)
    off = js_number_as(float(np.float32(attrs["off_value"])), dtype)
    params = {"depth": depth, "on_value": fill_param(dtype, on), "off_value": fill_param(dtype, off)}
    out_shape = tuple(indices.shape) + (depth,)
    return backend.run(("one_hot",), lambda: _ONE_HOT, [("indices", indices)], [("out", out_shape, dtype)], params)[0]
