"""Gathering and scattering by index tuples on the GPU: GatherNd, ScatterNd, TensorScatterUpdate.

GatherNd: each output element finds its slice's row from its index tuple (``sum(index[j] * stride[j])``).

Scatters: WGSL has no float atomics, and the cpu kernel's results depend on the order in which duplicate
updates are applied (float sums are not associative; TensorScatterUpdate keeps the last update). So a first
program turns each index tuple into its row (``-1`` when out of range), and a second one computes each
output element itself, scanning the rows in update order: ScatterNd adds the matching updates from 0 in that
order (exactly the cpu kernel's ``np.add.at``; int32 wraps, bool ORs), TensorScatterUpdate takes the last
matching update (scanning backwards) or keeps the tensor's value. No atomics, deterministic, the cpu
kernel's results bit for bit; the cost is ``output size x number of updates`` comparisons of int32 rows,
which suits the usual small update counts (a sort by row would bound it for very large ones).

Indices on the CPU are checked as the cpu kernels do (IndexError naming the op); indices that live only on
the GPU are not read back: an out-of-range tuple gathers 0 / is skipped, as on TF.js's GPU backends.
complex64 and string tensors have no GPU storage: their kernels are forwarded to the cpu kernels.
"""

from __future__ import annotations

import math

from ....core import kernel_names as kn
from ...shared.indexing import flat_indices, scatter_layout
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes, size_of, strides_of
from .shape import cpu_values, empty_output


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


def _row_code(rank: int) -> str:
    """WGSL ``fn tuple_row(u) -> i32``: the row of index tuple ``u`` (``-1`` when out of range)."""
    lines = ["fn tuple_row(u: i32) -> i32 {", "  var row = 0; var i = 0;"]
    for j in range(rank):
        lines.append(f"  i = load_indices(u * {rank} + {j});")
        lines.append(f"  if (i < 0 || i >= nd_dims[{j}]) {{ return -1; }}")
        lines.append(f"  row = row + i * nd_strides[{j}];")
    lines.append("  return row;\n}")
    return "\n".join(lines)


def _row_params(shape: tuple[int, ...], rank: int) -> dict:
    dims = list(shape[:rank])
    return {"nd_dims": dims or [1], "nd_strides": strides_of(dims)}


_GATHER_ND = """
fn compute(index: i32) {
  let n = index / slice_size;
  let row = tuple_row(n);
  if (row < 0) { store_out(index, T(0)); return; }
  store_out(index, load_x(row * slice_size + index - n * slice_size));
}
"""


@gpu_kernel(kn.GatherNd)
def gather_nd(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    x, indices = inputs
    if not on_gpu_dtypes(x):
        return _forward("GatherNd", backend, inputs, attrs)
    rank = indices.shape[-1]
    batch_shape = tuple(indices.shape[:-1])
    tail = tuple(x.shape[rank:])
    idx = cpu_values(backend, indices)
    if idx is not None:
        flat_indices(idx.reshape(math.prod(batch_shape), rank), x.shape, rank, "gather_nd")
    t = "f32" if x.dtype == "float32" else "i32"
    params = {"slice_size": size_of(tail), **_row_params(x.shape, rank)}

    def code() -> str:
        return _row_code(rank) + _GATHER_ND.replace("T(0)", f"{t}(0)")

    outputs = [("out", batch_shape + tail, x.dtype)]
    return backend.run(("gather_nd", rank), code, [("x", x), ("indices", indices)], outputs, params)[0]


def _rows(backend: WebGPUBackend, indices: object, shape: tuple[int, ...], op: str) -> tuple[Output, int]:
    """The row of every index tuple (an int32 tensor on the GPU, -1 when out of range) and the slice rank."""
    ishape = tuple(indices.shape)  # type: ignore[attr-defined]
    rank = ishape[-1] if len(ishape) > 1 else 1
    count = size_of(ishape) // rank if rank else math.prod(ishape[:-1])
    idx = cpu_values(backend, indices)
    if idx is not None and size_of(shape):
        layout, _ = scatter_layout(idx, shape)
        flat_indices(layout, shape, layout.shape[1], op)
    flat = Ref(indices.data_id, (count, rank), "int32")  # type: ignore[attr-defined]

    def code() -> str:
        return _row_code(rank) + "\nfn compute(index: i32) { store_out(index, tuple_row(index)); }"

    out = backend.run(("nd_rows", rank), code, [("indices", flat)], [("out", (count,), "int32")],
                      _row_params(shape, rank))[0]  # fmt: skip
    return out, count


_SCATTER_ND = """
fn compute(index: i32) {
  let row = index / slice_size;
  let s = index - row * slice_size;
  var acc = T(0);
  for (var u = 0; u < num_updates; u = u + 1) {
    if (load_rows(u) == row) { acc = combine(acc, load_updates(u * slice_size + s)); }
  }
  store_out(index, acc);
}
"""


@gpu_kernel(kn.ScatterNd)
def scatter_nd(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    indices, updates = inputs
    if not on_gpu_dtypes(updates):
        return _forward("ScatterNd", backend, inputs, attrs)
    shape = tuple(int(n) for n in attrs["shape"])
    if size_of(shape) == 0:
        return empty_output(backend, shape, updates.dtype)
    rows, count = _rows(backend, indices, shape, "scatter_nd")
    rank = indices.shape[-1] if len(indices.shape) > 1 else 1
    t = "f32" if updates.dtype == "float32" else "i32"
    add = "a | b" if updates.dtype == "bool" else "a + b"
    params = {"slice_size": size_of(shape[rank:]), "num_updates": count}

    def code() -> str:
        combine = f"fn combine(a: {t}, b: {t}) -> {t} {{ return {add}; }}"
        return combine + _SCATTER_ND.replace("T(0)", f"{t}(0)")

    try:
        bindings = [("rows", Ref(*rows)), ("updates", updates)]
        return backend.run(("scatter_nd",), code, bindings, [("out", shape, updates.dtype)], params)[0]
    finally:
        backend.dispose_data(rows[0])


_SCATTER_UPDATE = """
fn compute(index: i32) {
  let row = index / slice_size;
  for (var u = num_updates - 1; u >= 0; u = u - 1) {
    if (load_rows(u) == row) { store_out(index, load_updates(u * slice_size + index - row * slice_size)); return; }
  }
  store_out(index, load_x(index));
}
"""


@gpu_kernel(kn.TensorScatterUpdate)
def tensor_scatter_update(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    x, indices, updates = inputs
    if not on_gpu_dtypes(x, updates):
        return _forward("TensorScatterUpdate", backend, inputs, attrs)
    shape = tuple(x.shape)
    if size_of(shape) == 0:
        return empty_output(backend, shape, x.dtype)
    rows, count = _rows(backend, indices, shape, "tensor_scatter_update")
    rank = indices.shape[-1] if len(indices.shape) > 1 else 1
    params = {"slice_size": size_of(shape[rank:]), "num_updates": count}
    try:
        bindings = [("x", x), ("rows", Ref(*rows)), ("updates", updates)]
        return backend.run(("scatter_update",), lambda: _SCATTER_UPDATE, bindings, [("out", shape, x.dtype)],
                           params)[0]  # fmt: skip
    finally:
        backend.dispose_data(rows[0])
