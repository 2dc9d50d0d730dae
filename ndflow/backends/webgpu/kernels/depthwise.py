"""Depthwise convolutions on the GPU: DepthwiseConv2dNative (+ FusedDepthwiseConv2D) and its backprops.

- forward: one invocation per output element ``(b, o, c * multiplier + q)`` sums its window's taps
  ``x[b, o * stride + tap * dilation - pad, c] * w[tap, c, q]``, then applies the epilogue (bias and
  activation for the fused kernel);
- backprop input: one invocation per input element sums ``dy * w`` over the taps (and multipliers) whose
  window covers it (``o = (i + pad - tap * dilation) / stride`` where that divides exactly);
- backprop filter: one workgroup per filter element ``(tap, c, q)``: its 64 invocations stride over the
  ``batch * out`` positions and add their partial sums in workgroup memory.

NHWC and NCHW (as the cpu kernel, which honours NCHW), geometry from ``core/conv_util``. The ops take
float32 only; other dtypes (which no op passes) run on the cpu kernel.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ....core.conv_util import ConvInfo
from ...shared.conv import check_dy, info_from_attrs
from .common import Output, WebGPUBackend, gpu_kernel, size_of
from .conv import geometry_params, tensor_params
from .forward import forward
from .fused import PLAIN, Epilogue


def _coords_lines(channels_last: bool, sizes: str, channels: str) -> list[str]:
    """WGSL lines splitting ``index`` into ``b``, ``p0``, ``p1`` and channel ``ch`` of a 4-D layout."""
    if channels_last:
        return [
            "var rest = index;",
            f"let ch = rest % {channels}; rest = rest / {channels};",
            f"let p1 = rest % {sizes}[1]; rest = rest / {sizes}[1];",
            f"let p0 = rest % {sizes}[0]; let b = rest / {sizes}[0];",
        ]
    return [
        "var rest = index;",
        f"let p1 = rest % {sizes}[1]; rest = rest / {sizes}[1];",
        f"let p0 = rest % {sizes}[0]; rest = rest / {sizes}[0];",
        f"let ch = rest % {channels}; let b = rest / {channels};",
    ]


def depthwise_forward_program(backend: WebGPUBackend, x, f, info: ConvInfo, ep: Epilogue = PLAIN) -> Output:
    """The depthwise convolution of ``x`` with ``f`` (``[fh, fw, in, multiplier]``), through ``ep``."""
    cl = info.channels_last
    lines = _coords_lines(cl, "cv_out", "dw_co")
    lines += [
        "let ci = ch / dw_m; let q = ch % dw_m;",
        "var acc = 0.0;",
        "for (var t0 = 0; t0 < cv_f[0]; t0++) {",
        "  let h = p0 * cv_s[0] + t0 * cv_d[0] - cv_p[0];",
        "  if (h < 0 || h >= cv_in[0]) { continue; }",
        "  for (var t1 = 0; t1 < cv_f[1]; t1++) {",
        "    let w = p1 * cv_s[1] + t1 * cv_d[1] - cv_p[1];",
        "    if (w < 0 || w >= cv_in[1]) { continue; }",
        "    let xv = f32(load_x(b * x_bs + h * x_sp[0] + w * x_sp[1] + ci * x_cs));",
        "    acc += xv * f32(load_w(((t0 * cv_f[1] + t1) * dw_ci + ci) * dw_m + q));",
        "  }",
        "}",
        f"let cc = array<i32, 4>({'b, p0, p1, ch' if cl else 'b, ch, p0, p1'});",
        "store_out(index, ep_apply(acc, cc));",
    ]
    code = ep.code("f32", 4) + "\nfn compute(index: i32) {\n  " + "\n  ".join(lines) + "\n}"
    params = {
        **geometry_params(info),
        "dw_ci": info.in_channels,
        "dw_co": info.out_channels,
        "dw_m": f.shape[3],
        **tensor_params("x", tuple(info.in_shape), cl),
        **ep.params(4),
    }
    key = ("depthwise_fwd", cl, ep is PLAIN, ep.key())
    outputs = [("out", tuple(info.out_shape), ep.out_dtype("float32"))]
    return backend.run(key, lambda: code, [("x", x), ("w", f), *ep.inputs()], outputs, params)[0]


def depthwise_program(backend: WebGPUBackend, x, f, attrs: dict, kernel: str, ep: Epilogue = PLAIN) -> Output:
    """DepthwiseConv2dNative (or the fused kernel with ``ep``): float32 on the GPU."""
    others = [t for _, t in ep.inputs()]
    if x.dtype != "float32" or f.dtype != "float32" or any(t.dtype != "float32" for t in others):
        return forward(kernel, backend, (x, f, *others), attrs)
    info = info_from_attrs(x.shape, f.shape, attrs, kernel, depthwise=True)
    return depthwise_forward_program(backend, x, f, info, ep)


def depthwise_backprop_input_program(backend: WebGPUBackend, dy, f, info: ConvInfo) -> Output:
    """The gradient of the depthwise convolution for its input."""
    cl = info.channels_last
    lines = _coords_lines(cl, "cv_in", "dw_ci")
    lines += [
        "var acc = 0.0;",
        "for (var t0 = 0; t0 < cv_f[0]; t0++) {",
        "  let q0 = p0 + cv_p[0] - t0 * cv_d[0];",
        "  if (q0 < 0 || q0 % cv_s[0] != 0) { continue; }",
        "  let o0 = q0 / cv_s[0];",
        "  if (o0 >= cv_out[0]) { continue; }",
        "  for (var t1 = 0; t1 < cv_f[1]; t1++) {",
        "    let q1 = p1 + cv_p[1] - t1 * cv_d[1];",
        "    if (q1 < 0 || q1 % cv_s[1] != 0) { continue; }",
        "    let o1 = q1 / cv_s[1];",
        "    if (o1 >= cv_out[1]) { continue; }",
        "    let base = b * dy_bs + o0 * dy_sp[0] + o1 * dy_sp[1];",
        "    let wbase = ((t0 * cv_f[1] + t1) * dw_ci + ch) * dw_m;",
        "    for (var q = 0; q < dw_m; q++) {",
        "      acc += f32(load_dy(base + (ch * dw_m + q) * dy_cs)) * f32(load_w(wbase + q));",
        "    }",
        "  }",
        "}",
        "store_out(index, acc);",
    ]
    code = "fn compute(index: i32) {\n  " + "\n  ".join(lines) + "\n}"
    params = {
        **geometry_params(info),
        "dw_ci": info.in_channels,
        "dw_m": f.shape[3],
        **tensor_params("dy", tuple(info.out_shape), cl),
    }
    outputs = [("out", tuple(info.in_shape), "float32")]
    return backend.run(("depthwise_bwd_input", cl), lambda: code, [("dy", dy), ("w", f)], outputs, params)[0]


REDUCE_MAIN = """
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  load_params();
  let e = i32(wid.x) + i32(wid.y) * i32(nwg.x);
  if (e >= dw_size) { return; }
  let q = e % dw_m; var rest = e / dw_m;
  let ci = rest % dw_ci; rest = rest / dw_ci;
  let t1 = rest % cv_f[1]; let t0 = rest / cv_f[1];
  let positions = dw_batch * cv_out[0] * cv_out[1];
  var acc = 0.0;
  for (var k = i32(li); k < positions; k += 64) {
    let o1 = k % cv_out[1]; let r2 = k / cv_out[1];
    let o0 = r2 % cv_out[0]; let b = r2 / cv_out[0];
    let h = o0 * cv_s[0] + t0 * cv_d[0] - cv_p[0];
    let w = o1 * cv_s[1] + t1 * cv_d[1] - cv_p[1];
    if (h < 0 || h >= cv_in[0] || w < 0 || w >= cv_in[1]) { continue; }
    let xv = f32(load_x(b * x_bs + h * x_sp[0] + w * x_sp[1] + ci * x_cs));
    acc += xv * f32(load_dy(b * dy_bs + o0 * dy_sp[0] + o1 * dy_sp[1] + (ci * dw_m + q) * dy_cs));
  }
  partial[li] = acc;
  workgroupBarrier();
  for (var stride = 32u; stride > 0u; stride = stride / 2u) {
    if (li < stride) { partial[li] += partial[li + stride]; }
    workgroupBarrier();
  }
  if (li == 0u) { store_out(e, partial[0]); }
}
"""


def depthwise_backprop_filter_program(backend: WebGPUBackend, x, dy, info: ConvInfo, filter_shape: tuple) -> Output:
    """The gradient of the depthwise convolution for its filter: one workgroup per filter element."""
    cl = info.channels_last
    size = size_of(filter_shape)
    params = {
        **geometry_params(info),
        "dw_ci": info.in_channels,
        "dw_m": filter_shape[3],
        "dw_batch": info.batch,
        "dw_size": size,
        **tensor_params("x", tuple(info.in_shape), cl),
        **tensor_params("dy", tuple(info.out_shape), cl),
    }
    grid = backend.fold(size)
    outputs = [("out", tuple(filter_shape), "float32")]
    return backend.run(
        ("depthwise_bwd_filter",), lambda: REDUCE_MAIN, [("x", x), ("dy", dy)], outputs, params, grid=grid
    )[0]


@gpu_kernel(kn.DepthwiseConv2dNative)
def depthwise_conv2d_native(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; one filter (times a channel multiplier) per input channel."""
    x, f = inputs
    return depthwise_program(backend, x, f, attrs, "DepthwiseConv2dNative")


@gpu_kernel(kn.DepthwiseConv2dNativeBackpropInput)
def depthwise_conv2d_native_backprop_input(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of DepthwiseConv2dNative for x."""
    dy, f = inputs
    kernel = "DepthwiseConv2dNativeBackpropInput"
    if dy.dtype != "float32" or f.dtype != "float32":
        return forward(kernel, backend, inputs, attrs)
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, kernel, depthwise=True)
    check_dy(dy.shape, info, kernel)
    return depthwise_backprop_input_program(backend, dy, f, info)


@gpu_kernel(kn.DepthwiseConv2dNativeBackpropFilter)
def depthwise_conv2d_native_backprop_filter(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of DepthwiseConv2dNative for its filter."""
    x, dy = inputs
    kernel = "DepthwiseConv2dNativeBackpropFilter"
    if x.dtype != "float32" or dy.dtype != "float32":
        return forward(kernel, backend, inputs, attrs)
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, kernel, depthwise=True)
    check_dy(dy.shape, info, kernel)
    return depthwise_backprop_filter_program(backend, x, dy, info, filter_shape)
