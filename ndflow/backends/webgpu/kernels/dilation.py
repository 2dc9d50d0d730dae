"""Grayscale morphological dilation on the GPU: Dilation2D, Dilation2DBackpropInput, Dilation2DBackpropFilter.

As the cpu kernel (``cpu/kernels/depthwise.py``), NHWC only:

- forward: one invocation per output element takes the maximum of ``x + filter`` over its window, starting
  from TF.js's ``Number.MIN_SAFE_INTEGER`` and skipping NaN and positions outside the input (``fmax``);
- the winner of an output element is its first tap with the largest ``x + filter`` (NaN counts as -inf); it
  "won" when that value exceeds MIN_SAFE_INTEGER;
- backprop input: one invocation per input element gathers ``dy`` from every output element whose winner
  sits there (an output element without a winner sends its gradient to its window's clamped corner);
- backprop filter: one workgroup per filter element, 64 invocations striding over the output positions whose
  winning tap it is (tap (0, 0) for those without a winner), partial sums added in workgroup memory.

float32 x and filter compute in f32, as the cpu kernel. int32/bool x and filter compute exactly: the cpu
kernel adds them in float64, so sums are kept as (high word, low word) pairs and compared as 64-bit
integers, and the results are stored modulo 2**32 (int32) or as "non-zero modulo 256" (bool), as a JS typed
array stores numbers. A float32 filter on an int32/bool x (or the reverse) runs on the cpu kernel: its
float64 sums cannot be reproduced in f32. Gradients accumulate ``dy`` in f32 (the cpu kernel in float64) and
are truncated for int32/bool targets.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ...shared.conv import check_dy, dilation_info
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .conv import geometry_params
from .forward import forward

MIN_SAFE_F32 = "-9007199254740992.0"  # Number.MIN_SAFE_INTEGER rounded to f32
MIN_SAFE_WIDE = "vec2<i32>(-2097152i, 1i)"  # -(2**53 - 1) as (high word, low word)

WIDE = """
fn wide_sum(a: i32, b: i32) -> vec2<i32> {  // a + b as (high word, low word), exact
  let s = a + b;
  let neg = (a < 0i && b < 0i) || ((a < 0i) != (b < 0i) && s < 0i);
  return vec2<i32>(select(0i, -1i, neg), s);
}
fn wide_gt(a: vec2<i32>, b: vec2<i32>) -> bool {
  return a.x > b.x || (a.x == b.x && bitcast<u32>(a.y) > bitcast<u32>(b.y));
}
"""

# x + filter at output (b, oh, ow, c), tap (th, tw): sets `inside` and `v`
_TAP = """
    let h = oh * cv_s[0] - cv_p[0] + th * cv_d[0];
    let w = ow * cv_s[1] - cv_p[1] + tw * cv_d[1];
    if (h < 0 || h >= cv_in[0] || w < 0 || w >= cv_in[1]) { continue; }
    let xi = ((b * cv_in[0] + h) * cv_in[1] + w) * dl_c + c;
    let fi = (th * cv_f[1] + tw) * dl_c + c;
"""


def _winner(integer: bool) -> str:
    """WGSL ``fn winner(b, oh, ow, c) -> vec2<i32>``: (winning tap index, whether it won)."""
    if integer:
        start, value, better, won = (
            "var best = vec2<i32>(-1073741824i, 0i);",
            "let v = wide_sum(load_x(xi), load_f(fi));",
            "wide_gt(v, best)",
            f"wide_gt(best, {MIN_SAFE_WIDE})",
        )
    else:
        start, value, better, won = (
            "var best = bitcast<f32>(0xff800000u);",
            "let v = load_x(xi) + load_f(fi);",
            "v > best",
            f"best > {MIN_SAFE_F32}",
        )
    return f"""
fn winner(b: i32, oh: i32, ow: i32, c: i32) -> vec2<i32> {{
  {start}
  var idx = 0;
  for (var th = 0; th < cv_f[0]; th++) {{
   for (var tw = 0; tw < cv_f[1]; tw++) {{
    {_TAP}
    {value}
    if ({better}) {{ best = v; idx = th * cv_f[1] + tw; }}
   }}
  }}
  return vec2<i32>(idx, select(0, 1, {won}));
}}
"""


def _mode(backend: WebGPUBackend, kernel: str, inputs: tuple, attrs: dict, x, f) -> bool | None:
    """Whether the program runs in integer mode; None when the call goes to the cpu kernel (see the docstring)."""
    if not on_gpu_dtypes(*inputs):
        return None
    floats = [t.dtype == "float32" for t in (x, f)]
    if floats[0] != floats[1]:
        return None
    return not floats[0]


def _store_target(dtype: str) -> str:
    """WGSL storing the f32 gradient sum ``acc`` as a ``dtype`` tensor (truncation for int32/bool)."""
    if dtype == "float32":
        return "store_out(index, acc);"
    t = "select(0i, i32(trunc(acc)), abs(acc) < 2147483648.0)"  # non-finite -> 0, as the cpu kernel
    return f"store_out(index, {t} & 255i);" if dtype == "bool" else f"store_out(index, {t});"


@gpu_kernel(kn.Dilation2D)
def dilation2d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``: the max over each window of ``x + filter`` (NHWC)."""
    x, f = inputs
    integer = _mode(backend, "Dilation2D", inputs, attrs, x, f)
    if integer is None:
        return forward("Dilation2D", backend, inputs, attrs)
    info = dilation_info(x.shape, f.shape, attrs, "Dilation2D")
    out_shape = (x.shape[0], *info.out_size, x.shape[-1])
    if integer:
        start, value, update = (
            f"var best = {MIN_SAFE_WIDE};",
            "let v = wide_sum(load_x(xi), load_f(fi));",
            "if (wide_gt(v, best)) { best = v; }",
        )
        store = "store_out(index, best.y & 255i);" if x.dtype == "bool" else "store_out(index, best.y);"
    else:
        start, value, update = (
            f"var best = {MIN_SAFE_F32};",
            "let v = load_x(xi) + load_f(fi);",
            "if (v > best) { best = v; }",
        )
        store = "store_out(index, best);"
    code = f"""{WIDE if integer else ""}
fn compute(index: i32) {{
  var rest = index;
  let c = rest % dl_c; rest = rest / dl_c;
  let ow = rest % cv_out[1]; rest = rest / cv_out[1];
  let oh = rest % cv_out[0]; let b = rest / cv_out[0];
  {start}
  for (var th = 0; th < cv_f[0]; th++) {{
   for (var tw = 0; tw < cv_f[1]; tw++) {{
    {_TAP}
    {value}
    {update}
   }}
  }}
  {store}
}}
"""
    params = {**geometry_params(info), "dl_c": x.shape[-1]}
    key = ("dilation2d", integer, x.dtype == "bool")
    return backend.run(key, lambda: code, [("x", x), ("f", f)], [("out", out_shape, x.dtype)], params)[0]


@gpu_kernel(kn.Dilation2DBackpropInput)
def dilation2d_backprop_input(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for x (to each window's winning position)."""
    x, f, dy = inputs
    kernel = "Dilation2DBackpropInput"
    integer = _mode(backend, kernel, inputs, attrs, x, f)
    if integer is None:
        return forward(kernel, backend, inputs, attrs)
    info = dilation_info(x.shape, f.shape, attrs, kernel)
    check_dy(dy.shape, info, kernel)
    code = f"""{WIDE if integer else ""}
{_winner(integer)}
fn compute(index: i32) {{
  var rest = index;
  let c = rest % dl_c; rest = rest / dl_c;
  let w0 = rest % cv_in[1]; rest = rest / cv_in[1];
  let h0 = rest % cv_in[0]; let b = rest / cv_in[0];
  // output rows whose window (or, without a winner, clamped corner) can reach h0
  var oh_lo = 0;
  let lo_h = h0 + cv_p[0] - (cv_f[0] - 1) * cv_d[0];
  if (h0 > 0 && lo_h > 0) {{ oh_lo = (lo_h + cv_s[0] - 1) / cv_s[0]; }}
  let oh_hi = select(-1, min(cv_out[0] - 1, (h0 + cv_p[0]) / cv_s[0]), h0 + cv_p[0] >= 0);
  var ow_lo = 0;
  let lo_w = w0 + cv_p[1] - (cv_f[1] - 1) * cv_d[1];
  if (w0 > 0 && lo_w > 0) {{ ow_lo = (lo_w + cv_s[1] - 1) / cv_s[1]; }}
  let ow_hi = select(-1, min(cv_out[1] - 1, (w0 + cv_p[1]) / cv_s[1]), w0 + cv_p[1] >= 0);
  var acc = 0.0;
  for (var oh = oh_lo; oh <= oh_hi; oh++) {{
    for (var ow = ow_lo; ow <= ow_hi; ow++) {{
      let win = winner(b, oh, ow, c);
      let hs = oh * cv_s[0] - cv_p[0];
      let ws = ow * cv_s[1] - cv_p[1];
      var h: i32;  // assigned on both branches: naga does not re-initialize loop-local vars
      var w: i32;
      if (win.y == 1) {{
        h = hs + (win.x / cv_f[1]) * cv_d[0];
        w = ws + (win.x % cv_f[1]) * cv_d[1];
      }} else {{
        h = max(hs, 0);
        w = max(ws, 0);
      }}
      if (h == h0 && w == w0) {{
        acc += f32(load_dy(((b * cv_out[0] + oh) * cv_out[1] + ow) * dl_c + c));
      }}
    }}
  }}
  {_store_target(x.dtype)}
}}
"""
    params = {**geometry_params(info), "dl_c": x.shape[-1]}
    key = ("dilation2d_bwd_input", integer, x.dtype)
    inputs_ = [("x", x), ("f", f), ("dy", dy)]
    return backend.run(key, lambda: code, inputs_, [("out", tuple(x.shape), x.dtype)], params)[0]


@gpu_kernel(kn.Dilation2DBackpropFilter)
def dilation2d_backprop_filter(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter, dy)``: the gradient of Dilation2D for its filter (to each winning tap)."""
    x, f, dy = inputs
    kernel = "Dilation2DBackpropFilter"
    integer = _mode(backend, kernel, inputs, attrs, x, f)
    if integer is None:
        return forward(kernel, backend, inputs, attrs)
    info = dilation_info(x.shape, f.shape, attrs, kernel)
    check_dy(dy.shape, info, kernel)
    code = f"""{WIDE if integer else ""}
{_winner(integer)}
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
  load_params();
  let index = i32(wid.x) + i32(wid.y) * i32(nwg.x);
  if (index >= dl_size) {{ return; }}
  let c = index % dl_c;
  let tap = index / dl_c;
  let positions = dl_batch * cv_out[0] * cv_out[1];
  var acc = 0.0;
  for (var k = i32(li); k < positions; k += 64) {{
    let ow = k % cv_out[1]; let r2 = k / cv_out[1];
    let oh = r2 % cv_out[0]; let b = r2 / cv_out[0];
    let win = winner(b, oh, ow, c);
    if (select(0, win.x, win.y == 1) == tap) {{
      acc += f32(load_dy(k * dl_c + c));
    }}
  }}
  partial[li] = acc;
  workgroupBarrier();
  for (var stride = 32u; stride > 0u; stride = stride / 2u) {{
    if (li < stride) {{ partial[li] += partial[li + stride]; }}
    workgroupBarrier();
  }}
  if (li == 0u) {{
    let acc = partial[0];
    {_store_target(f.dtype)}
  }}
}}
"""
    size = f.size
    params = {**geometry_params(info), "dl_c": x.shape[-1], "dl_batch": x.shape[0], "dl_size": size}
    grid = backend.fold(size)
    key = ("dilation2d_bwd_filter", integer, f.dtype)
    inputs_ = [("x", x), ("f", f), ("dy", dy)]
    return backend.run(key, lambda: code, inputs_, [("out", tuple(f.shape), f.dtype)], params, grid=grid)[0]
