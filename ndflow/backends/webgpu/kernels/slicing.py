"""Selecting and joining on the GPU: Slice, StridedSlice, GatherV2, Concat, Pack.

Slice and StridedSlice are strided views of the input (see ``shape.py``): the slice spec becomes an offset
and one stride per output axis (negative for negative steps, 0 for new axes). GatherV2 views the input as
``[batch, outer, axis, inner]`` and the output as ``[batch, outer, indices, inner]``. Concat views every
input as ``[outer, columns_i]`` and the output as ``[outer, sum(columns_i)]``: one program reads up to
``max_bindings`` inputs; more inputs are joined in groups, then the groups are joined (storage buffer
limit). Pack is Concat of the inputs read with a size-1 axis inserted (no copy for that).

Indices: when the indices are on the CPU (written from Python, as usual), out-of-range entries raise the cpu
kernel's IndexError at no cost; indices that live only on the GPU are not read back (that would be a round
trip for a value check): an out-of-range index gathers 0, as on TF.js's GPU backends.
complex64 and string tensors have no GPU storage: their kernels are forwarded to the cpu kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....core import kernel_names as kn
from ....core.slice_util import strided_slice_index
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes, size_of, strides_of
from .shape import as_ref, cpu_values, empty_output, max_bindings, strided_view


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


@gpu_kernel(kn.Slice)
def slice_(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("Slice", backend, inputs, attrs)
    strides = strides_of(x.shape)
    offset = sum(b * s for b, s in zip(attrs["begin"], strides, strict=False))
    return strided_view(backend, x, attrs["size"], offset, strides[: len(x.shape)])


def strided_slice_view(shape: tuple[int, ...], attrs: dict) -> tuple[list[int], int, list[int]]:
    """The output shape, offset and strides of ``tf.stridedSlice(x, ...)`` as a view of ``x`` (row-major)."""
    index = strided_slice_index(shape, attrs)
    x_strides = strides_of(shape)
    explicit = sum(1 for item in index if item is not None and item is not Ellipsis)
    out_shape: list[int] = []
    out_strides: list[int] = []
    offset, axis = 0, 0
    for item in index:
        if item is Ellipsis:
            for _ in range(len(shape) - explicit):
                out_shape.append(shape[axis])
                out_strides.append(x_strides[axis])
                axis += 1
        elif item is None:
            out_shape.append(1)
            out_strides.append(0)
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[axis])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(step * x_strides[axis])
            offset += start * x_strides[axis]
            axis += 1
        else:  # a shrunk axis: a single index
            offset += int(item) * x_strides[axis]
            axis += 1
    for rest in range(axis, len(shape)):  # numpy's implicit trailing full slices
        out_shape.append(shape[rest])
        out_strides.append(x_strides[rest])
    return out_shape, offset, out_strides


@gpu_kernel(kn.StridedSlice)
def strided_slice(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("StridedSlice", backend, inputs, attrs)
    out_shape, offset, strides = strided_slice_view(x.shape, attrs)
    if size_of(out_shape) == 0:
        return empty_output(backend, out_shape, x.dtype)
    return strided_view(backend, x, out_shape, offset, strides)


_GATHER = """
fn compute(index: i32) {
  let t = index % g_inner; let r1 = index / g_inner;
  let n = r1 % g_count; let r2 = r1 / g_count;
  let m = r2 % g_outer; let b = r2 / g_outer;
  let i = load_indices(b * g_count + n);
  if (i < 0 || i >= g_dim) { store_out(index, T(0)); return; }
  store_out(index, load_x(((b * g_outer + m) * g_dim + i) * g_inner + t));
}
"""


@gpu_kernel(kn.GatherV2)
def gather_v2(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, indices = inputs
    if not on_gpu_dtypes(x):
        return _forward("GatherV2", backend, inputs, attrs)
    axis, batch_dims = attrs["axis"], attrs["batch_dims"]
    dim = x.shape[axis]
    idx = cpu_values(backend, indices)
    if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= dim):
        bad = int(idx[(idx < 0) | (idx >= dim)].flat[0])
        raise IndexError(f"gather: index {bad} is not in [0, {dim - 1}] along axis {axis}")
    out_shape = tuple(x.shape[:axis]) + tuple(indices.shape[batch_dims:]) + tuple(x.shape[axis + 1 :])
    params = {
        "g_inner": size_of(x.shape[axis + 1 :]),
        "g_count": size_of(indices.shape[batch_dims:]),
        "g_outer": size_of(x.shape[batch_dims:axis]),
        "g_dim": dim,
    }
    t = "f32" if x.dtype == "float32" else "i32"

    def code() -> str:
        return _GATHER.replace("T(0)", f"{t}(0)")

    return backend.run(("gather",), code, [("x", x), ("indices", indices)], [("out", out_shape, x.dtype)], params)[0]


def _concat_program(k: int, vec: int) -> str:
    """Each invocation writes ``vec`` consecutive outputs (4 when every part's columns are a multiple of 4:
    then they come from one input)."""
    lines = [
        "fn compute(index: i32) {",
        f"  let base = index * {vec}; let o = base / total_cols; let col = base - o * total_cols;",
    ]
    for i in range(k):
        start = f" - col_ends[{i - 1}]" if i else ""
        copy = " ".join(f"store_out(base + {j}, load_x{i}(at + {j}));" for j in range(vec))
        read = f"let at = o * part_cols[{i}] + col{start}; {copy} return;"
        lines.append(f"  if (col < col_ends[{i}]) {{ {read} }}" if i < k - 1 else f"  {{ {read} }}")
    lines.append("}")
    return "\n".join(lines)


def _concat_group(backend: WebGPUBackend, parts: Sequence[Ref], axis: int, dtype: str) -> Output:
    """One program joining ``parts`` (at most ``max_bindings``, none empty) along ``axis``."""
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    cols = [size_of(p.shape[axis:]) for p in parts]
    ends = [sum(cols[: i + 1]) for i in range(len(cols))]
    params = {"total_cols": ends[-1], "col_ends": ends, "part_cols": cols}
    k = len(parts)
    vec = 4 if all(c % 4 == 0 for c in cols) else 1
    bindings = [(f"x{i}", p) for i, p in enumerate(parts)]
    outputs = [("out", tuple(shape), dtype)]
    size = size_of(shape) // vec
    return backend.run(
        ("concat", k, vec), lambda: _concat_program(k, vec), bindings, outputs, params, invocations=size
    )[0]


def concat_refs(backend: WebGPUBackend, parts: Sequence[Ref], axis: int, out_shape: Sequence[int]) -> Output:
    """Join ``parts`` along ``axis`` into a new tensor of ``out_shape``, in groups of ``max_bindings``."""
    dtype = parts[0].dtype
    parts = [p for p in parts if size_of(p.shape)]
    if size_of(out_shape) == 0 or not parts:
        return empty_output(backend, out_shape, dtype)
    group = max(max_bindings(backend), 2)
    temps: list[int] = []
    try:
        while len(parts) > group:
            joined = []
            for start in range(0, len(parts), group):
                chunk = parts[start : start + group]
                if len(chunk) == 1:
                    joined.append(chunk[0])
                    continue
                data_id, shape, _ = _concat_group(backend, chunk, axis, dtype)
                temps.append(data_id)
                joined.append(Ref(data_id, shape, dtype))
            parts = joined
        data_id, shape, _ = _concat_group(backend, parts, axis, dtype)
        return data_id, tuple(out_shape), dtype
    finally:
        for data_id in temps:
            backend.dispose_data(data_id)


@gpu_kernel(kn.Concat)
def concat(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    if not on_gpu_dtypes(*inputs):
        return _forward("Concat", backend, inputs, attrs)
    rank = len(inputs[0].shape)
    axis = attrs["axis"] % rank
    out_shape = list(inputs[0].shape)
    out_shape[axis] = sum(t.shape[axis] for t in inputs)
    return concat_refs(backend, [as_ref(t) for t in inputs], axis, out_shape)


@gpu_kernel(kn.Pack)
def pack(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    if not on_gpu_dtypes(*inputs):
        return _forward("Pack", backend, inputs, attrs)
    axis = attrs["axis"]
    shape = list(inputs[0].shape)
    expanded = shape[:axis] + [1] + shape[axis:]
    out_shape = shape[:axis] + [len(inputs)] + shape[axis:]
    return concat_refs(backend, [as_ref(t, expanded) for t in inputs], axis, out_shape)
