"""Scans along one axis on the GPU: Cumsum and Cumprod (exclusive and reverse).

One invocation per line along the axis (the input seen as ``outer x n x inner``) folds the line in order,
so float32 results equal the cpu kernel's running float32 values exactly, and int32 wraps around as it does.
``exclusive`` and ``reverse`` are parameters: one program serves every combination.
"""

from __future__ import annotations

import math

from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .forward import forward

SCAN = """
fn compute(index: i32) {
  let o = index / inner;
  let base = o * n * inner + (index - o * inner);
  var acc = IDENTITY;
  for (var k = 0; k < n; k++) {
    let pos = base + select(k, n - 1 - k, reverse != 0) * inner;
    let v = T(load_x(pos));
    if (exclusive != 0) { store_out(pos, acc); acc = acc OP v; } else { acc = acc OP v; store_out(pos, acc); }
  }
}
"""


def _scan(kernel: str, op: str, identity: str) -> None:
    @gpu_kernel(kernel)
    def run(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
        (x,) = inputs
        if not on_gpu_dtypes(x):
            return forward(kernel, backend, inputs, attrs)
        axis = attrs["axis"]
        dtype = "float32" if x.dtype == "float32" else "int32"  # as the cpu kernel: bool scans as int32
        shape = tuple(x.shape)
        n = shape[axis]
        inner = math.prod(shape[axis + 1 :])
        lines = math.prod(shape) // n if n else 0
        t = "f32" if dtype == "float32" else "i32"

        def code() -> str:
            return SCAN.replace("IDENTITY", f"{t}({identity})").replace("OP", op).replace("T(", f"{t}(")

        params = {
            "n": n,
            "inner": inner,
            "reverse": int(bool(attrs["reverse"])),
            "exclusive": int(bool(attrs["exclusive"])),
        }
        key = ("scan", kernel, t)
        return backend.run(key, code, [("x", x)], [("out", shape, dtype)], params, invocations=lines)[0]

    run.__name__ = f"webgpu_{kernel.lower()}"


_scan("Cumsum", "+", "0")
_scan("Cumprod", "*", "1")
