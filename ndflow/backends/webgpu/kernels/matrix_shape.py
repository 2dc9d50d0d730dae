"""Matrix-shaped selections on the GPU: Diag, MatrixBandPart.

Diag writes each element of the ``n x n`` result (``n = x.size``) from ``x`` on the diagonal, 0 elsewhere.
MatrixBandPart reads its two bounds (int32 scalar tensors) inside the program, so they are never read back:
each element keeps its value when ``row - col <= num_lower`` and ``col - row <= num_upper`` (a negative
bound keeps the whole triangle), 0 otherwise.
complex64 and string tensors have no GPU storage: their kernels are forwarded to the cpu kernels.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes, size_of


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


def _zero(dtype: str) -> str:
    return "f32(0)" if dtype == "float32" else "i32(0)"


_DIAG = """
fn compute(index: i32) {
  let r = index / diag_n;
  if (r == index - r * diag_n) { store_out(index, load_x(r)); } else { store_out(index, ZERO); }
}
"""


@gpu_kernel(kn.Diag)
def diag(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("Diag", backend, inputs, attrs)
    out_shape = tuple(x.shape) + tuple(x.shape)
    code = _DIAG.replace("ZERO", _zero(x.dtype))
    return backend.run(
        ("diag",), lambda: code, [("x", x)], [("out", out_shape, x.dtype)], {"diag_n": size_of(x.shape)}
    )[0]


_BAND = """
fn compute(index: i32) {
  let col = index % band_cols;
  let row = (index / band_cols) % band_rows;
  let lower = load_lower(0);
  let upper = load_upper(0);
  let keep = (lower < 0 || row - col <= lower) && (upper < 0 || col - row <= upper);
  if (keep) { store_out(index, load_x(index)); } else { store_out(index, ZERO); }
}
"""


@gpu_kernel(kn.MatrixBandPart)
def matrix_band_part(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    x, num_lower, num_upper = inputs
    if not on_gpu_dtypes(x):
        return _forward("MatrixBandPart", backend, inputs, attrs)
    m, n = x.shape[-2:]
    code = _BAND.replace("ZERO", _zero(x.dtype))
    bindings = [("x", x), ("lower", num_lower), ("upper", num_upper)]
    params = {"band_rows": m, "band_cols": n}
    return backend.run(("band_part",), lambda: code, bindings, [("out", tuple(x.shape), x.dtype)], params)[0]
