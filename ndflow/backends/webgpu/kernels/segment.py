"""Counting and segment sums on the GPU: UnsortedSegmentSum, Bincount, DenseBincount.

Design: WGSL has no float atomics, and atomic adds in any order would not reproduce the cpu kernels'
sums, so each output element gathers: one invocation per (row, bin or segment, inner position) scans the
ids of its row in order and adds the matching values. Float sums are compensated (TwoSum), which makes
them match the cpu kernels' float64 accumulation rounded once to float32 (a non-finite sum is returned
as it is: its compensation is NaN); the compensation steps pass
through ``opq``, an identity the shader compiler cannot see through (it would otherwise simplify
``(a + b) - a`` to ``b``, as Mesa does). Int32 sums wrap as the cpu kernel's int64 sums cast to int32;
bool weights mark a bin true when any true weight falls in it. The cost is (outputs x ids) reads.

Bincount's negative values raise as on the cpu backend when ``x``'s values are on the CPU (written from
Python, or read back); values only on the GPU are not read back for the check (negative values are then
dropped, as TF.js's GPU backends do).
"""

from __future__ import annotations

import math

from ....core import kernel_names as kn
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .forward import forward

MAIN = """
var<private> opaque_zero: u32;
fn opq(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) | opaque_zero); }
@compute @workgroup_size(WG_X, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  load_params();
  opaque_zero = nwg.z >> 20u;
  let index = i32(gid.x) + i32(gid.y) * i32(nwg.x) * WG_X;
  if (index >= total) { return; }
  compute(index);
}
"""

GATHER = """
fn compute(index: i32) {
  let j = index % inner;
  let t = index / inner;
  let s = t % nseg;
  let row = t / nseg;
  let first = row * n;
  INIT
  for (var i = first; i < first + n; i++) {
    if (load_ids(i) == s) { ADD }
  }
  STORE
}
"""

_FLOAT = (
    "var sum = 0.0; var comp = 0.0;",
    "let v = VALUE; let u = opq(sum + v); let b = opq(u - sum); comp += (sum - opq(u - b)) + (v - b); sum = u;",
    "store_out(index, select(sum + comp, sum, (bitcast<u32>(sum) & 0x7fffffffu) >= 0x7f800000u));",
)
_INT = ("var sum = 0i;", "sum += VALUE;", "store_out(index, sum);")
_ANY = ("var hit = 0i;", "hit = hit | VALUE;", "store_out(index, hit);")
_BINARY = ("var hit = 0i;", "hit = 1;", "store_out(index, OUT_T(hit));")


def _gather(
    backend: WebGPUBackend,
    name: str,
    ids: object,
    values: object | None,
    value_expr: str,
    mode: tuple[str, str, str],
    geometry: tuple[int, int, int, int],
    out_shape: tuple[int, ...],
    out_dtype: str,
) -> Output:
    """Run the gather program: ``geometry`` is (rows, nseg, inner, n) and ``value_expr`` reads value i."""
    rows, nseg, inner, n = geometry
    init, add, store = mode
    out_t = "f32" if out_dtype == "float32" else "i32"
    body = GATHER.replace("INIT", init).replace("ADD", add.replace("VALUE", value_expr)).replace("STORE", store)
    body = body.replace("OUT_T", out_t)
    inputs = [("ids", ids)] + ([("w", values)] if values is not None else [])
    key = ("gather_sum", name, body)
    total = rows * nseg * inner
    params = {"nseg": nseg, "inner": inner, "n": n, "total": total}
    groups = -(-total // 64)
    grid = backend.fold(groups) if total else (0, 1, 1)
    return backend.run(key, lambda: body + MAIN, inputs, [("out", out_shape, out_dtype)], params, grid=grid)[0]


@gpu_kernel(kn.UnsortedSegmentSum)
def unsorted_segment_sum(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, segment_ids = inputs
    if not on_gpu_dtypes(x):
        return forward("UnsortedSegmentSum", backend, inputs, attrs)
    nseg = attrs["num_segments"]
    rest = tuple(x.shape[segment_ids.rank :])
    inner = math.prod(rest)
    value = "f32(load_w(i * inner + j))"
    return _gather(
        backend, "segment_sum", segment_ids, x, value, _FLOAT, (1, nseg, inner, segment_ids.size), (nseg, *rest),
        "float32",
    )  # fmt: skip


def _check_non_negative(backend: WebGPUBackend, op: str, x: object) -> None:
    values = backend.data[x.data_id].values
    if values is not None and values.size and values.min() < 0:
        raise ValueError(f"{op}: argument 'x' must be non-negative, got {int(values.min())}")


def _mode(dtype: str) -> tuple[str, str, str]:
    return _FLOAT if dtype == "float32" else (_ANY if dtype == "bool" else _INT)


def _counts(backend: WebGPUBackend, op: str, x, w, size: int, rows: int, binary: bool, shape) -> Output:
    _check_non_negative(backend, op, x)
    n = x.size // rows if rows else 0
    weighted = w.size != 0 and not binary
    if binary:
        mode, value = _BINARY, "1"
    elif weighted:
        mode, value = _mode(w.dtype), "f32(load_w(i))" if w.dtype == "float32" else "load_w(i)"
    else:
        mode, value = _mode(w.dtype), "1.0" if w.dtype == "float32" else "1"
    return _gather(backend, op, x, w if weighted else None, value, mode, (rows, size, 1, n), shape, w.dtype)


@gpu_kernel(kn.Bincount)
def bincount(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    if not on_gpu_dtypes(x, w):
        return forward("Bincount", backend, inputs, attrs)
    size = attrs["size"]
    return _counts(backend, "bincount", x, w, size, 1, False, (size,))


@gpu_kernel(kn.DenseBincount)
def dense_bincount(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    x, w = inputs
    if not on_gpu_dtypes(x, w):
        return forward("DenseBincount", backend, inputs, attrs)
    size = attrs["size"]
    rows = 1 if x.rank == 1 else x.shape[0]
    shape = (size,) if x.rank == 1 else (rows, size)
    return _counts(backend, "dense_bincount", x, w, size, rows, attrs["binary_output"], shape)


__all__ = ["bincount", "dense_bincount", "unsorted_segment_sum"]
