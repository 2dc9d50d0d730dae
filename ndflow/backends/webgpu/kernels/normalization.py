"""Normalization on the GPU: FusedBatchNorm, LRN and LRNGrad (LogSoftmax lives with the reductions).

Semantics are the cpu kernels' (``backends/cpu/kernels/normalization.py``), computed in f32:

- FusedBatchNorm: ``offset + (x - mean) * scale / sqrt(variance + epsilon)``, each parameter broadcast over x
  by numpy's rules (leading 1-dims dropped first), one invocation per element of x;
- LRN on channels-last 4D x: ``x * (bias + alpha * sum of x**2 over channels c - r .. c + r) ** -beta``, the
  window clipped to the channels (empty when ``depth_radius`` < 0); the power is ``Math.pow``'s (negative
  bases with integer exponents, ``x ** 0 == 1``);
- LRNGrad in two programs: the norm of every element, then
  ``dx_k = dy_k * norm_k ** -beta - 2 alpha beta x_k * sum over the window of k of dy_c * y_c / norm_c``.

Results are stored through ``to_out`` (``pool.py``) as TF.js stores them for int32/bool tensors.
"""

from __future__ import annotations

from typing import Any

from ....core import kernel_names as kn
from .common import (
    Output,
    Ref,
    WebGPUBackend,
    broadcast_index_fn,
    broadcast_strides,
    coords_fn,
    gpu_kernel,
    on_gpu_dtypes,
)
from .pool import F32_HELPERS, to_out_fn

JS_POW = """
fn js_pow(x: f32, y: f32) -> f32 {
  if (y == 0.0) { return 1.0; }
  if (is_nan(x) || is_nan(y)) { return nan_f32(); }
  if (x > 0.0) {
    if (not_finite(x)) { return select(0.0, inf_f32(), y > 0.0); }
    return exp2(y * log2(x));
  }
  let odd = trunc(y) == y && abs(y) < 16777216.0 && (i32(abs(y)) & 1i) == 1i;
  if (x == 0.0) {
    if (y > 0.0) { return select(0.0, x, odd); }
    return select(inf_f32(), select(inf_f32(), -inf_f32(), bitcast<u32>(x) == 0x80000000u), odd);
  }
  if (trunc(y) != y) { return nan_f32(); }
  let r = js_pow_pos(-x, y);
  return select(r, -r, odd);
}
fn js_pow_pos(x: f32, y: f32) -> f32 {
  if (not_finite(x)) { return select(0.0, inf_f32(), y > 0.0); }
  return exp2(y * log2(x));
}
"""


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


def _core_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without its leading 1-dims (how the cpu kernel broadcasts batch-norm parameters)."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return tuple(shape[lead:])


@gpu_kernel(kn.FusedBatchNorm)
def fused_batch_norm(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, mean, variance[, offset][, scale]) as ``has_offset``/``has_scale`` say."""
    if not on_gpu_dtypes(*inputs):
        return _forward("FusedBatchNorm", backend, inputs, attrs)
    x, mean, variance, *rest = inputs
    names = ["mean", "variance"]
    tensors = [mean, variance]
    if attrs.get("has_offset"):
        names.append("shift")
        tensors.append(rest.pop(0))
    if attrs.get("has_scale"):
        names.append("gain")
        tensors.append(rest.pop(0))
    rank = len(x.shape)
    cores = [_core_shape(t.shape) for t in tensors]
    channels = x.shape[-1] if rank else 1
    per_channel = all(core in ((), (1,), (channels,)) for core in cores) and rank > 0
    params: dict[str, Any] = {"eps": float(attrs["variance_epsilon"])}
    if per_channel:  # the common case: one value per channel (or one for all)
        params["chans"] = channels
        index_of = {
            n: ("0i" if size <= 1 else "index % chans") for n, size in zip(names, map(_size, cores), strict=True)
        }
        layout: tuple = ("channel", tuple(v != "0i" for v in index_of.values()))
        prelude = ""
    else:
        params["x_shape"] = list(x.shape) or [1]
        for n, core in zip(names, cores, strict=True):
            params[f"{n}_bstrides"] = broadcast_strides(core)
        index_of = {n: f"{n}_bindex(c)" for n in names}
        layout = ("broadcast", rank, tuple(len(c) for c in cores))
        prelude = "\n".join(
            [coords_fn("x", rank)]
            + [broadcast_index_fn(n, len(core), rank) for n, core in zip(names, cores, strict=True)]
        )

    def code() -> str:
        def val(n: str, default: str) -> str:
            return f"f32(load_{n}({index_of[n]}))" if n in index_of else default

        head = "let c = x_coords(index);" if not per_channel else ""
        return (
            F32_HELPERS + to_out_fn(x.dtype) + prelude + "\nfn compute(index: i32) {" + head
            + f"let v = (f32(load_x(index)) - {val('mean', '0.0')}) * {val('gain', '1.0')}"
            + f" / sqrt({val('variance', '0.0')} + eps) + {val('shift', '0.0')};"
            + " store_out(index, to_out(v)); }"
        )  # fmt: skip

    bindings = [("x", x)] + list(zip(names, tensors, strict=True))
    key = ("batch_norm", x.dtype, tuple(names), layout)
    return backend.run(key, code, bindings, [("out", x.shape, x.dtype)], params)[0]


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


_SQUARES = "  var acc = 0.0;\n  for (var k = lo; k <= hi; k++) { let v = f32(load_x(base + k)); acc = acc + v * v; }\n"
_WINDOW = """
  let ch = index % chans;
  let base = index - ch;
  let lo = max(ch - radius, 0i);
  let hi = min(ch + radius, chans - 1i);
"""


def _lrn_attrs(attrs: dict) -> dict[str, Any]:
    return {
        "radius": int(attrs["depth_radius"]),
        "bias": float(attrs["bias"]),
        "alpha": float(attrs["alpha"]),
        "beta": float(attrs["beta"]),
    }


@gpu_kernel(kn.LRN)
def lrn(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Local response normalization over the channels of a 4D channels-last x."""
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return _forward("LRN", backend, inputs, attrs)
    params = {"chans": x.shape[-1], **_lrn_attrs(attrs)}

    def code() -> str:
        return (
            F32_HELPERS + JS_POW + to_out_fn(x.dtype) + "\nfn compute(index: i32) {" + _WINDOW
            + _SQUARES
            + "  let norm = bias + alpha * acc;\n"
            + "  store_out(index, to_out(f32(load_x(index)) * js_pow(norm, -beta)));\n}"
        )  # fmt: skip

    return backend.run(("lrn", x.dtype), code, [("x", x)], [("out", x.shape, x.dtype)], params)[0]


@gpu_kernel(kn.LRNGrad)
def lrn_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (x, y, dy) -> dx of LRN, with the forward's attributes."""
    x, y, dy = inputs
    if not on_gpu_dtypes(*inputs):
        return _forward("LRNGrad", backend, inputs, attrs)
    params = {"chans": x.shape[-1] if x.shape else 1, **_lrn_attrs(attrs)}

    def norm_code() -> str:
        return (
            "fn compute(index: i32) {" + _WINDOW
            + _SQUARES
            + "  store_out(index, alpha * acc + bias);\n}"
        )  # fmt: skip

    def grad_code() -> str:
        return (
            F32_HELPERS + JS_POW + to_out_fn(x.dtype) + "\nfn compute(index: i32) {" + _WINDOW
            + "  var acc = 0.0;\n  for (var k = lo; k <= hi; k++) {\n"
            + "    acc = acc + f32(load_dy(base + k)) * f32(load_y(base + k)) / load_norm(base + k);\n  }\n"
            + "  var r = -2.0 * alpha * beta * f32(load_x(index)) * acc;\n"
            + "  if (radius >= 0i) { r = r + f32(load_dy(index)) * js_pow(load_norm(index), -beta); }\n"
            + "  store_out(index, to_out(r));\n}"
        )  # fmt: skip

    if 0 in x.shape:
        return backend.run(("lrn_grad", x.dtype), grad_code, [], [("out", dy.shape, x.dtype)], params)[0]
    norm_id, shape, _ = backend.run(
        ("lrn_norm", x.dtype), norm_code, [("x", x)], [("out", x.shape, "float32")], params
    )[0]
    try:
        bindings = [("x", x), ("y", y), ("dy", dy), ("norm", Ref(norm_id, shape, "float32"))]
        return backend.run(("lrn_grad", x.dtype), grad_code, bindings, [("out", dy.shape, x.dtype)], params)[0]
    finally:
        backend.dispose_data(norm_id)
