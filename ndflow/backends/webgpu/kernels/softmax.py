"""Softmax and LogSoftmax along any axis on the GPU.

Each row along the axis (the input seen as ``outer x n x inner``) is reduced to its maximum (NaN wins, as
numpy's max in the cpu kernels) and to the sum of ``exp(x - max)``, then written as ``exp(x - max) / sum``
or ``(x - max) - log(sum)``. Short rows, and rows across inner dimensions when there are many of them,
take one invocation per row (``loop``); long rows one workgroup per row with tree reductions in workgroup
memory (``tree``).
"""

from __future__ import annotations

import math

from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .forward import forward
from .reduction import FLOAT_HELPERS, NEG_INF, _grid, tree_workgroup

HELPERS = (
    FLOAT_HELPERS
    + f"""
fn lowest() -> f32 {{ return {NEG_INF}; }}
fn nan_max(a: f32, b: f32) -> f32 {{
  if (is_nan(a)) {{ return a; }}
  if (is_nan(b)) {{ return b; }}
  return select(b, a, a >= b);
}}
fn row_base(row: i32) -> i32 {{ let o = row / inner; return o * n * inner + (row - o * inner); }}
"""
)

LOOP = """
fn compute(row: i32) {
  let base = row_base(row);
  var m = lowest();
  for (var k = 0; k < n; k++) { m = nan_max(m, f32(load_x(base + k * inner))); }
  var total = 0.0;
  for (var k = 0; k < n; k++) { total += exp(f32(load_x(base + k * inner)) - m); }
  for (var k = 0; k < n; k++) { let pos = base + k * inner; store_out(pos, result(f32(load_x(pos)) - m, total)); }
}
"""

TREE = """
var<workgroup> partial: array<f32, WG_X>;
@compute @workgroup_size(WG_X, 1, 1)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  load_params();
  let lid = i32(lid3.x);
  let row = i32(wid.x) + i32(wid.y) * i32(nwg.x);
  let valid = row < rows;
  let base = row_base(row);
  var m = lowest();
  if (valid) { for (var k = lid; k < n; k += WG_X) { m = nan_max(m, f32(load_x(base + k * inner))); } }
  partial[lid] = m;
  workgroupBarrier();
  for (var s = WG_X / 2; s > 0; s = s / 2) {
    if (lid < s) { partial[lid] = nan_max(partial[lid], partial[lid + s]); }
    workgroupBarrier();
  }
  let row_max = partial[0];
  workgroupBarrier();
  var total = 0.0;
  if (valid) { for (var k = lid; k < n; k += WG_X) { total += exp(f32(load_x(base + k * inner)) - row_max); } }
  partial[lid] = total;
  workgroupBarrier();
  for (var s = WG_X / 2; s > 0; s = s / 2) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let row_total = partial[0];
  if (valid) {
    for (var k = lid; k < n; k += WG_X) {
      let pos = base + k * inner;
      store_out(pos, result(f32(load_x(pos)) - row_max, row_total));
    }
  }
}
"""

RESULT = {
    "Softmax": "fn result(d: f32, total: f32) -> f32 { return exp(d) / total; }",
    "LogSoftmax": "fn result(d: f32, total: f32) -> f32 { return d - log(total); }",
}


def _softmax(kernel: str, axis_attr: str) -> None:
    @gpu_kernel(kernel)
    def run(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
        (x,) = inputs
        if not on_gpu_dtypes(x):
            return forward(kernel, backend, inputs, attrs)
        shape = tuple(x.shape)
        if not shape:  # a scalar is one row of one element
            shape_rows, axis = (1,), 0
        else:
            shape_rows, axis = shape, attrs[axis_attr]
        n = shape_rows[axis]
        inner = math.prod(shape_rows[axis + 1 :])
        rows = math.prod(shape_rows) // n if n else 0
        loop = n <= 64 or (inner > 1 and rows >= 2048)
        params = {"n": n, "inner": inner, "rows": rows}
        key = ("softmax", kernel, "loop" if loop else "tree")

        def code() -> str:
            return "\n".join([HELPERS, RESULT[kernel], LOOP if loop else TREE])

        outputs = [("out", shape, "float32")]
        if loop or rows == 0:
            return backend.run(key, code, [("x", x)], outputs, params, invocations=rows)[0]
        grid = _grid(rows, backend)
        return backend.run(key, code, [("x", x)], outputs, params, workgroup=(tree_workgroup(n), 1, 1), grid=grid)[0]

    run.__name__ = f"webgpu_{kernel.lower()}"


_softmax("Softmax", "dim")
_softmax("LogSoftmax", "axis")
