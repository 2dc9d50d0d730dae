"""Pooling on the GPU: MaxPool, AvgPool, MaxPool3D, AvgPool3D, MaxPoolWithArgmax and the four *Grad kernels.

One program family serves 2D and 3D: a 2D pool is a 3D pool of depth 1 (filter, stride and dilation 1, no
padding), so tensors are read as ``(batch, depth, height, width, channels)``. The geometry (filter size,
strides, dilations, padding before, output size) comes from the op's attributes (``ops/pool_util.py``) and
is passed as parameters; only the pooling kind, the dtypes and the tie rule are baked into the code.

Semantics are the cpu kernels' (``backends/cpu/kernels/pool.py``): max ignores NaN and gives -Infinity for a
window with no number (0 in int32/bool outputs); the 2D kernels return the input itself for a 1x1 filter
that keeps the shape; avg divides by the number of input positions in the window (NaN for an empty window
in 2D, 0 in 3D); arg-max positions are the first maximum in 2D and the last in 3D. Forward programs compute
one output element per invocation (neighbouring invocations read neighbouring channels). The max gradients
run two programs: the arg-max tap of every window, then one invocation per input element gathering the
``dy`` of the windows whose arg-max it is; the avg gradients gather ``dy / count`` directly.

Int32 average pools sum in i32 and divide with truncation (the exact truncated mean of the cpu kernel as
long as the window sum fits in int32). The WGSL helper ``TO_OUT`` (also used by the normalization and image
kernels) stores float results as TF.js's typed arrays do: int32 truncates (0 for NaN/±Infinity, modulo
2**32 beyond), bool is non-zero after truncation modulo 256.
"""

from __future__ import annotations

from typing import Any

from ....core import kernel_names as kn
from ._wgsl_math import with_math
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes, share

# -- WGSL shared with normalization.py and image.py ----------------------------------------------------

F32_HELPERS = """
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn not_finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u; }
fn nan_f32() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn inf_f32() -> f32 { return bitcast<f32>(0x7f800000u); }
fn js_round(v: f32) -> f32 { return floor(v + 0.5); }
fn js_i32(v: f32) -> i32 {
  if (not_finite(v)) { return 0i; }
  let t = trunc(v);
  if (abs(t) < 2147483648.0) { return i32(t); }
  let bits = bitcast<u32>(t);
  let e = i32((bits >> 23u) & 0xffu) - 150i;
  let m = (bits & 0x7fffffu) | 0x800000u;
  var low = 0u;
  if (e < 32i) { low = m << u32(e); }
  if (t < 0.0) { low = ~low + 1u; }
  return bitcast<i32>(low);
}
"""


def to_out_fn(dtype: str) -> str:
    """WGSL ``fn to_out(v: f32) -> T``: a float result as an output of ``dtype`` (needs ``F32_HELPERS``)."""
    if dtype == "float32":
        return "fn to_out(v: f32) -> f32 { return v; }"
    if dtype == "int32":
        return "fn to_out(v: f32) -> i32 { return js_i32(v); }"
    return "fn to_out(v: f32) -> i32 { return select(0i, 1i, (js_i32(v) & 255i) != 0i); }"


def compute_type(dtype: str) -> str:
    """The WGSL type a tensor of ``dtype`` is loaded as."""
    return "f32" if dtype == "float32" else "i32"


# -- geometry ------------------------------------------------------------------------------------------


def _geometry(attrs: dict, three_d: bool) -> dict[str, list[int]]:
    """The pooling parameters, 2D lifted to 3D (depth 1)."""
    lead = [] if three_d else [1]
    pad = [] if three_d else [0]
    return {
        "fsize": lead + list(attrs["filter_size"]),
        "fstride": lead + list(attrs["strides"]),
        "fdil": lead + list(attrs["dilations"]),
        "fpad": pad + [int(p) for p in attrs["pad_before"]],
        "osp": lead + list(attrs["out_size"]),
    }


def _as_5d(shape: tuple[int, ...], three_d: bool) -> list[int]:
    return list(shape) if three_d else [shape[0], 1, *shape[1:]]


def _out_shape(x_shape: tuple[int, ...], attrs: dict) -> tuple[int, ...]:
    return (x_shape[0], *attrs["out_size"], x_shape[-1])


def _keeps_shape(x: Any, attrs: dict) -> bool:
    """TF.js's 2D shortcut: a 1x1 filter that keeps the shape returns the input itself."""
    return all(f == 1 for f in attrs["filter_size"]) and tuple(attrs["out_size"]) == tuple(x.shape[1:-1])


_DECOMPOSE_OUT = """
  var rest = index;
  let ch = rest % xs[4]; rest = rest / xs[4];
  let ow = rest % osp[2]; rest = rest / osp[2];
  let oh = rest % osp[1]; rest = rest / osp[1];
  let od = rest % osp[0]; let b = rest / osp[0];
  let d0 = od * fstride[0] - fpad[0];
  let h0 = oh * fstride[1] - fpad[1];
  let w0 = ow * fstride[2] - fpad[2];
"""

_TAP_LOOPS = """
  for (var kd = 0i; kd < fsize[0]; kd++) {
    let d = d0 + kd * fdil[0];
    if (d < 0i || d >= xs[1]) { continue; }
    for (var kh = 0i; kh < fsize[1]; kh++) {
      let h = h0 + kh * fdil[1];
      if (h < 0i || h >= xs[2]) { continue; }
      for (var kw = 0i; kw < fsize[2]; kw++) {
        let w = w0 + kw * fdil[2];
        if (w < 0i || w >= xs[3]) { continue; }
        let t = (kd * fsize[1] + kh) * fsize[2] + kw;
        let xi = (((b * xs[1] + d) * xs[2] + h) * xs[3] + w) * xs[4] + ch;
        BODY
      }
    }
  }
"""


def _forward_code(kind: str, x_dtype: str, out_dtype: str, last: bool, empty_zero: bool) -> str:
    """The forward program: ``kind`` is 'max', 'avg', 'argmax' (max and its flat input index) or 'pos'
    (the arg-max tap, for the max gradients)."""
    t = compute_type(x_dtype)
    better = ">=" if last else ">"
    if kind == "avg":
        if x_dtype == "float32":
            init = "var acc = 0.0; var count = 0i;"
            body = "acc = acc + load_x(xi); count = count + 1i;"
            if empty_zero:
                finish = "store_out(index, to_out(acc / f32(max(count, 1i))));"
            else:
                finish = "store_out(index, to_out(select(acc / f32(count), nan_f32(), count == 0i)));"
        else:  # exact truncated mean in i32 (0 for an empty window, as NaN is stored in int32/bool)
            init = "var acc = 0i; var count = 0i;"
            body = "acc = acc + load_x(xi); count = count + 1i;"
            result = "m_idiv(acc, count)"  # not acc / count: see _wgsl_math (0 where count is 0)
            if out_dtype == "float32":
                finish = f"store_out(index, f32(acc) / f32({'max(count, 1i)' if empty_zero else 'count'}));"
            elif out_dtype == "bool":
                finish = f"store_out(index, select(0i, 1i, ({result} & 255i) != 0i));"
            else:
                finish = f"store_out(index, {result});"
        return with_math(
            F32_HELPERS
            + to_out_fn(out_dtype)
            + "\nfn compute(index: i32) {"
            + _DECOMPOSE_OUT
            + init
            + (_TAP_LOOPS.replace("BODY", body) + finish + "\n}")
        )
    init = f"var best = {'-inf_f32()' if t == 'f32' else '0i'}; var pos = -1i; var best_at = -1i;"
    cond = f"v {better} best" if t == "f32" else f"pos < 0i || v {better} best"
    body = f"let v = load_x(xi); if ({cond}) {{ best = v; pos = t; best_at = xi; }}"
    if kind == "pos":
        finish = "store_out(index, pos);"
    else:
        if out_dtype == "float32" and t == "i32":
            value = "select(-inf_f32(), f32(best), pos >= 0i)"
        elif out_dtype == "float32" or t == "i32":
            value = "best"
        else:
            value = "to_out(best)"
        finish = f"store_out(index, {value});"
        if kind == "argmax":
            finish += (
                " var flat_i = -1i; if (pos >= 0i) { flat_i = best_at - select(0i, b * xs[1] * xs[2] * xs[3] * xs[4],"
                " batch_in_index == 0i); } store_idx(index, flat_i);"
            )
    return (
        F32_HELPERS
        + to_out_fn(out_dtype)
        + "\nfn compute(index: i32) {"
        + _DECOMPOSE_OUT
        + init
        + (_TAP_LOOPS.replace("BODY", body) + finish + "\n}")
    )


def _pool(
    backend: WebGPUBackend, x: Any, attrs: dict, kind: str, *, three_d: bool, out_dtype: str, last: bool = False
) -> list[Output]:
    """Run a forward program over ``x``; outputs in the kernel's shape (two for 'argmax')."""
    shape = _out_shape(x.shape, attrs)
    params: dict[str, Any] = {"xs": _as_5d(x.shape, three_d), **_geometry(attrs, three_d)}
    outputs = [("out", shape, "int32" if kind == "pos" else out_dtype)]
    if kind == "argmax":
        params["batch_in_index"] = int(bool(attrs.get("include_batch_in_index")))
        outputs.append(("idx", shape, "int32"))
    empty_zero = three_d
    key = ("pool", kind, x.dtype, out_dtype, last, empty_zero)
    return backend.run(
        key, lambda: _forward_code(kind, x.dtype, out_dtype, last, empty_zero), [("x", x)], outputs, params
    )


def _not_on_gpu(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output | list[Output] | None:
    """Forward the call when an input has no GPU storage (complex64/string); None otherwise."""
    if on_gpu_dtypes(*[t for t in inputs if t is not None]):
        return None
    from .forward import forward

    return forward(name, backend, inputs, attrs)


@gpu_kernel(kn.MaxPool)
def max_pool(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """2D max pool; keeps the dtype."""
    (x,) = inputs
    if (other := _not_on_gpu("MaxPool", backend, inputs, attrs)) is not None:
        return other  # type: ignore[return-value]
    if _keeps_shape(x, attrs):
        return share(backend, x.data_id, x.shape, x.dtype)
    return _pool(backend, x, attrs, "max", three_d=False, out_dtype=x.dtype)[0]


@gpu_kernel(kn.AvgPool)
def avg_pool(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """2D average pool over the input positions of each window; keeps the dtype."""
    (x,) = inputs
    if (other := _not_on_gpu("AvgPool", backend, inputs, attrs)) is not None:
        return other  # type: ignore[return-value]
    if _keeps_shape(x, attrs):
        return share(backend, x.data_id, x.shape, x.dtype)
    return _pool(backend, x, attrs, "avg", three_d=False, out_dtype=x.dtype)[0]


@gpu_kernel(kn.MaxPool3D)
def max_pool3d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """3D max pool; float32."""
    if (other := _not_on_gpu("MaxPool3D", backend, inputs, attrs)) is not None:
        return other  # type: ignore[return-value]
    return _pool(backend, inputs[0], attrs, "max", three_d=True, out_dtype="float32")[0]


@gpu_kernel(kn.AvgPool3D)
def avg_pool3d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """3D average pool (0 for an empty window); float32."""
    if (other := _not_on_gpu("AvgPool3D", backend, inputs, attrs)) is not None:
        return other  # type: ignore[return-value]
    return _pool(backend, inputs[0], attrs, "avg", three_d=True, out_dtype="float32")[0]


@gpu_kernel(kn.MaxPoolWithArgmax)
def max_pool_with_argmax(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Maxima and the flat index ``((b * H + y) * W + x) * C + c`` of the first maximum (``b`` only with
    ``include_batch_in_index``); -1 where a window holds no number."""
    (x,) = inputs
    if (other := _not_on_gpu("MaxPoolWithArgmax", backend, inputs, attrs)) is not None:
        return other  # type: ignore[return-value]
    return _pool(backend, x, attrs, "argmax", three_d=False, out_dtype=x.dtype)


# -- gradients -------------------------------------------------------------------------------------------

_DECOMPOSE_IN = """
  var rest = index;
  let ch = rest % xs[4]; rest = rest / xs[4];
  let w = rest % xs[3]; rest = rest / xs[3];
  let h = rest % xs[2]; rest = rest / xs[2];
  let d = rest % xs[1]; let b = rest / xs[1];
"""

_WINDOW_LOOPS = """
  for (var kd = 0i; kd < fsize[0]; kd++) {
    let nd = d + fpad[0] - kd * fdil[0];
    if (nd < 0i || nd % fstride[0] != 0i) { continue; }
    let od = nd / fstride[0];
    if (od >= osp[0]) { continue; }
    for (var kh = 0i; kh < fsize[1]; kh++) {
      let nh = h + fpad[1] - kh * fdil[1];
      if (nh < 0i || nh % fstride[1] != 0i) { continue; }
      let oh = nh / fstride[1];
      if (oh >= osp[1]) { continue; }
      for (var kw = 0i; kw < fsize[2]; kw++) {
        let nw = w + fpad[2] - kw * fdil[2];
        if (nw < 0i || nw % fstride[2] != 0i) { continue; }
        let ow = nw / fstride[2];
        if (ow >= osp[2]) { continue; }
        let o = (((b * osp[0] + od) * osp[1] + oh) * osp[2] + ow) * xs[4] + ch;
        BODY
      }
    }
  }
"""

_AXIS_COUNT = """
fn axis_count(axis: i32, o: i32) -> i32 {
  let start = o * fstride[axis] - fpad[axis];
  var n = 0i;
  for (var k = 0i; k < fsize[axis]; k++) {
    let p = start + k * fdil[axis];
    if (p >= 0i && p < xs[axis + 1]) { n = n + 1i; }
  }
  return n;
}
"""


def _max_grad_code() -> str:
    body = "if (load_pos(o) == (kd * fsize[1] + kh) * fsize[2] + kw) { acc = acc + load_dy(o); }"
    return (
        "fn compute(index: i32) {"
        + _DECOMPOSE_IN
        + "var acc = 0.0;"
        + (_WINDOW_LOOPS.replace("BODY", body) + "store_out(index, acc);\n}")
    )


def _avg_grad_code() -> str:
    body = "acc = acc + load_dy(o) / f32(axis_count(0i, od) * axis_count(1i, oh) * axis_count(2i, ow));"
    return (
        _AXIS_COUNT
        + "fn compute(index: i32) {"
        + _DECOMPOSE_IN
        + "var acc = 0.0;"
        + (_WINDOW_LOOPS.replace("BODY", body) + "store_out(index, acc);\n}")
    )


def _max_grad(backend: WebGPUBackend, name: str, inputs: tuple, attrs: dict, three_d: bool) -> Output:
    dy, x, _ = inputs
    if (other := _not_on_gpu(name, backend, (dy, x), attrs)) is not None:
        return other  # type: ignore[return-value]
    pos_id, pos_shape, _ = _pool(backend, x, attrs, "pos", three_d=three_d, out_dtype="int32", last=three_d)[0]
    try:
        params = {"xs": _as_5d(x.shape, three_d), **_geometry(attrs, three_d)}
        inputs_ = [("dy", dy), ("pos", Ref(pos_id, pos_shape, "int32"))]
        return backend.run(("pool_max_grad",), _max_grad_code, inputs_, [("out", x.shape, "float32")], params)[0]
    finally:
        backend.dispose_data(pos_id)


def _avg_grad(backend: WebGPUBackend, name: str, inputs: tuple, attrs: dict, three_d: bool) -> Output:
    dy, x = inputs
    if (other := _not_on_gpu(name, backend, (dy,), attrs)) is not None:
        return other  # type: ignore[return-value]
    params = {"xs": _as_5d(x.shape, three_d), **_geometry(attrs, three_d)}
    return backend.run(("pool_avg_grad",), _avg_grad_code, [("dy", dy)], [("out", x.shape, "float32")], params)[0]


@gpu_kernel(kn.MaxPoolGrad)
def max_pool_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the first maximum of each window."""
    return _max_grad(backend, "MaxPoolGrad", inputs, attrs, three_d=False)


@gpu_kernel(kn.MaxPool3DGrad)
def max_pool3d_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the last maximum of each window (TF.js's 3D convention)."""
    return _max_grad(backend, "MaxPool3DGrad", inputs, attrs, three_d=True)


@gpu_kernel(kn.AvgPoolGrad)
def avg_pool_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    return _avg_grad(backend, "AvgPoolGrad", inputs, attrs, three_d=False)


@gpu_kernel(kn.AvgPool3DGrad)
def avg_pool3d_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    return _avg_grad(backend, "AvgPool3DGrad", inputs, attrs, three_d=True)
