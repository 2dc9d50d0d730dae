"""Convolutions on the GPU as implicit GEMM: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter.

Each pass is one tiled GEMM program (``matrix.py``) whose operand loaders compute im2col indices on the
fly, so the column matrix never exists in memory. For ``n`` spatial dimensions (2 here, 3 in ``conv3d.py``):

- forward: rows are output positions ``(b, o...)``, columns output channels, K runs over
  ``(taps..., in channel)``; A reads the input at ``o * stride + tap * dilation - pad_before`` (0 outside),
  B is the filter ``[*taps, in, out]`` as a ``[K, out]`` matrix;
- backprop input: rows are input positions ``(b, i...)``, columns input channels, K runs over
  ``(taps..., out channel)``; A reads ``dy`` at ``o = (i + pad - tap * dilation) / stride`` where that
  divides exactly and lies inside the output, B the filter transposed per tap;
- backprop filter: rows ``(taps..., in channel)``, columns output channels, K runs over ``(b, o...)``.

Layouts (NHWC/NCHW, NDHWC) are strides passed as parameters; geometry comes from ``core/conv_util``
(as the cpu kernel). Conv2D and its backprops take float32 (the ops refuse other dtypes); other dtypes,
which no op passes, run on the cpu kernel.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ....core.conv_util import ConvInfo
from ...shared.conv import check_dy, info_from_attrs
from .common import Output, WebGPUBackend, gpu_kernel, size_of, strides_of
from .forward import forward
from .fused import PLAIN, Epilogue
from .matrix import gemm


def layout_strides(shape: tuple[int, ...], channels_last: bool) -> tuple[int, list[int], int]:
    """(batch stride, spatial strides, channel stride) of a ``[B, *spatial, C]`` or ``[B, C, *spatial]`` tensor."""
    st = strides_of(shape)
    if channels_last:
        return st[0], st[1:-1], st[-1]
    return st[0], st[2:], st[1]


def geometry_params(info: ConvInfo) -> dict:
    """The convolution's geometry as program parameters (arrays over the spatial dimensions)."""
    return {
        "cv_in": list(info.in_size),
        "cv_out": list(info.out_size),
        "cv_f": list(info.filter_size),
        "cv_s": list(info.strides),
        "cv_d": list(info.dilations),
        "cv_p": [b for b, _ in info.pads],
    }


def tensor_params(name: str, shape: tuple[int, ...], channels_last: bool) -> dict:
    bs, sp, cs = layout_strides(shape, channels_last)
    return {f"{name}_bs": bs, f"{name}_sp": sp, f"{name}_cs": cs}


def _split(var: str, sizes: str, n: int, prefix: str) -> list[str]:
    """WGSL lines splitting ``var`` (a mutable ``var``) into ``n`` coordinates ``prefix0..`` (last fastest)."""
    lines = []
    for d in range(n - 1, -1, -1):
        lines.append(f"let {prefix}{d} = {var} % {sizes}[{d}]; {var} = {var} / {sizes}[{d}];")
    return lines


def _coords(n: int, channels_last: bool, pos: str, channel: str) -> str:
    """WGSL array literal of output coordinates from batch ``b``, positions ``pos0..`` and ``channel``."""
    spatial = [f"{pos}{d}" for d in range(n)]
    items = ["b", *spatial, channel] if channels_last else ["b", channel, *spatial]
    return f"array<i32, {n + 2}>({', '.join(items)})"


def conv_forward_program(
    backend: WebGPUBackend,
    x,
    f,
    info: ConvInfo,
    ep: Epilogue = PLAIN,
    t: str = "f32",
    out_dtype: str = "float32",
) -> Output:
    """The forward convolution of ``x`` with ``f`` (``[*taps, in, out]``) as an implicit-GEMM program."""
    n = len(info.in_size)
    cl = info.channels_last
    out_shape = tuple(info.out_shape)
    a_lines = ["var rest = r;", "var kr = k / cv_ci;", "let ci = k % cv_ci;", "var off = 0;"]
    for d in range(n - 1, -1, -1):
        a_lines.append(f"let o{d} = rest % cv_out[{d}]; rest = rest / cv_out[{d}];")
        a_lines.append(f"let t{d} = kr % cv_f[{d}]; kr = kr / cv_f[{d}];")
        a_lines.append(f"let p{d} = o{d} * cv_s[{d}] + t{d} * cv_d[{d}] - cv_p[{d}];")
        a_lines.append(f"if (p{d} < 0 || p{d} >= cv_in[{d}]) {{ return {t}(0); }}")
        a_lines.append(f"off += p{d} * x_sp[{d}];")
    a_lines.append(f"return {t}(load_x(rest * x_bs + off + ci * x_cs));")
    out_lines = ["var rest = r;", *_split("rest", "cv_out", n, "o"), "let b = rest;"]
    out_lines.append(_store_line("out", n, "o", "c", cl, t, out_dtype))
    code = "\n".join(
        [
            "fn mm_setup(z: i32) {}",
            f"fn mm_a(z: i32, r: i32, k: i32) -> {t} {{\n  " + "\n  ".join(a_lines) + "\n}",
            f"fn mm_b(z: i32, k: i32, c: i32) -> {t} {{ return {t}(load_w(k * mm_n + c)); }}",
            ep.code(t, n + 2),
            f"fn mm_out(z: i32, r: i32, c: i32, acc: {t}) {{\n  " + "\n  ".join(out_lines) + "\n}",
        ]
    )
    params = {
        **geometry_params(info),
        "cv_ci": info.in_channels,
        **tensor_params("x", tuple(info.in_shape), cl),
        **tensor_params("out", out_shape, cl),
        **ep.params(n + 2),
    }
    m = info.batch * size_of(info.out_size)
    k = size_of(info.filter_size) * info.in_channels
    key = ("conv_fwd", n, cl, t, out_dtype, ep is PLAIN, ep.key())
    outputs = [("out", out_shape, ep.out_dtype(out_dtype))]
    inputs = [("x", x), ("w", f), *ep.inputs()]
    return gemm(backend, key, code, inputs, outputs, params, (1, m, info.out_channels, k), t, cl, True)[0]


def _store_line(name: str, n: int, pos: str, channel: str, channels_last: bool, t: str, out_dtype: str) -> str:
    offset = " + ".join([f"b * {name}_bs", *(f"{pos}{d} * {name}_sp[{d}]" for d in range(n)), f"{channel} * {name}_cs"])
    value = "ep_apply(acc, cc)"
    if out_dtype == "bool" and t == "i32":
        value = "(ep_apply(acc, cc) & 255i)"  # a JS typed-array store into a bool tensor: non-zero modulo 256
    return f"let cc = {_coords(n, channels_last, pos, channel)};\n  store_{name}({offset}, {value});"


def conv_backprop_input_program(backend: WebGPUBackend, dy, f, info: ConvInfo) -> Output:
    """The gradient of the forward convolution for its input (``conv2d_transpose``), float32."""
    n = len(info.in_size)
    cl = info.channels_last
    a_lines = ["var rest = r;", "var kr = k / cv_co;", "let co = k % cv_co;", "var off = 0;"]
    for d in range(n - 1, -1, -1):
        a_lines.append(f"let i{d} = rest % cv_in[{d}]; rest = rest / cv_in[{d}];")
        a_lines.append(f"let t{d} = kr % cv_f[{d}]; kr = kr / cv_f[{d}];")
        a_lines.append(f"let q{d} = i{d} + cv_p[{d}] - t{d} * cv_d[{d}];")
        a_lines.append(f"if (q{d} < 0 || q{d} % cv_s[{d}] != 0) {{ return 0.0; }}")
        a_lines.append(f"let o{d} = q{d} / cv_s[{d}];")
        a_lines.append(f"if (o{d} >= cv_out[{d}]) {{ return 0.0; }}")
        a_lines.append(f"off += o{d} * dy_sp[{d}];")
    a_lines.append("return f32(load_dy(rest * dy_bs + off + co * dy_cs));")
    b_body = "let tap = k / cv_co; let co = k % cv_co; return f32(load_w((tap * mm_n + c) * cv_co + co));"
    out_lines = ["var rest = r;", *_split("rest", "cv_in", n, "i"), "let b = rest;"]
    out_lines.append(_store_line("out", n, "i", "c", cl, "f32", "float32"))
    code = "\n".join(
        [
            "fn mm_setup(z: i32) {}",
            "fn mm_a(z: i32, r: i32, k: i32) -> f32 {\n  " + "\n  ".join(a_lines) + "\n}",
            f"fn mm_b(z: i32, k: i32, c: i32) -> f32 {{ {b_body} }}",
            PLAIN.code("f32", n + 2),
            "fn mm_out(z: i32, r: i32, c: i32, acc: f32) {\n  " + "\n  ".join(out_lines) + "\n}",
        ]
    )
    params = {
        **geometry_params(info),
        "cv_co": info.out_channels,
        **tensor_params("dy", tuple(info.out_shape), cl),
        **tensor_params("out", tuple(info.in_shape), cl),
    }
    m = info.batch * size_of(info.in_size)
    k = size_of(info.filter_size) * info.out_channels
    outputs = [("out", tuple(info.in_shape), "float32")]
    key = ("conv_bwd_input", n, cl)
    sizes = (1, m, info.in_channels, k)
    return gemm(backend, key, code, [("dy", dy), ("w", f)], outputs, params, sizes, "f32", cl, False)[0]


def conv_backprop_filter_program(backend: WebGPUBackend, x, dy, info: ConvInfo, filter_shape: tuple) -> Output:
    """The gradient of the forward convolution for its filter (``[*taps, in, out]``), float32."""
    n = len(info.in_size)
    cl = info.channels_last
    a_lines = ["var rest = r / cv_ci;", "let ci = r % cv_ci;", "var kr = k;", "var off = 0;"]
    for d in range(n - 1, -1, -1):
        a_lines.append(f"let t{d} = rest % cv_f[{d}]; rest = rest / cv_f[{d}];")
        a_lines.append(f"let o{d} = kr % cv_out[{d}]; kr = kr / cv_out[{d}];")
        a_lines.append(f"let p{d} = o{d} * cv_s[{d}] + t{d} * cv_d[{d}] - cv_p[{d}];")
        a_lines.append(f"if (p{d} < 0 || p{d} >= cv_in[{d}]) {{ return 0.0; }}")
        a_lines.append(f"off += p{d} * x_sp[{d}];")
    a_lines.append("return f32(load_x(kr * x_bs + off + ci * x_cs));")
    b_lines = ["var kr = k;", "var off = 0;"]
    for d in range(n - 1, -1, -1):
        b_lines.append(f"off += (kr % cv_out[{d}]) * dy_sp[{d}]; kr = kr / cv_out[{d}];")
    b_lines.append("return f32(load_dy(kr * dy_bs + off + c * dy_cs));")
    code = "\n".join(
        [
            "fn mm_setup(z: i32) {}",
            "fn mm_a(z: i32, r: i32, k: i32) -> f32 {\n  " + "\n  ".join(a_lines) + "\n}",
            "fn mm_b(z: i32, k: i32, c: i32) -> f32 {\n  " + "\n  ".join(b_lines) + "\n}",
            "fn mm_out(z: i32, r: i32, c: i32, acc: f32) { store_out(r * mm_n + c, acc); }",
        ]
    )
    params = {
        **geometry_params(info),
        "cv_ci": info.in_channels,
        **tensor_params("x", tuple(info.in_shape), cl),
        **tensor_params("dy", tuple(info.out_shape), cl),
    }
    m = size_of(info.filter_size) * info.in_channels
    k = info.batch * size_of(info.out_size)
    outputs = [("out", tuple(filter_shape), "float32")]
    key = ("conv_bwd_filter", n, cl)
    sizes = (1, m, info.out_channels, k)
    return gemm(backend, key, code, [("x", x), ("dy", dy)], outputs, params, sizes, "f32", not cl, not cl)[0]


def conv2d_program(backend: WebGPUBackend, x, f, attrs: dict, kernel: str, ep: Epilogue = PLAIN) -> Output:
    """Conv2D (or FusedConv2D with ``ep``): float32 on the GPU, other dtypes on the cpu kernel."""
    others = [t for _, t in ep.inputs()]
    if x.dtype != "float32" or f.dtype != "float32" or any(t.dtype != "float32" for t in others):
        return forward(kernel, backend, (x, f, *others), attrs)
    info = info_from_attrs(x.shape, f.shape, attrs, kernel)
    return conv_forward_program(backend, x, f, info, ep)


@gpu_kernel(kn.Conv2D)
def conv2d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, filter)``; 2-D convolution, NHWC or NCHW."""
    x, f = inputs
    return conv2d_program(backend, x, f, attrs, "Conv2D")


@gpu_kernel(kn.Conv2DBackpropInput)
def conv2d_backprop_input(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(dy, filter)``, attribute ``input_shape``: the gradient of Conv2D for x."""
    dy, f = inputs
    if dy.dtype != "float32" or f.dtype != "float32":
        return forward("Conv2DBackpropInput", backend, inputs, attrs)
    info = info_from_attrs(tuple(attrs["input_shape"]), f.shape, attrs, "Conv2DBackpropInput")
    check_dy(dy.shape, info, "Conv2DBackpropInput")
    return conv_backprop_input_program(backend, dy, f, info)


@gpu_kernel(kn.Conv2DBackpropFilter)
def conv2d_backprop_filter(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Inputs ``(x, dy)``, attribute ``filter_shape``: the gradient of Conv2D for its filter."""
    x, dy = inputs
    if x.dtype != "float32" or dy.dtype != "float32":
        return forward("Conv2DBackpropFilter", backend, inputs, attrs)
    filter_shape = tuple(attrs["filter_shape"])
    info = info_from_attrs(x.shape, filter_shape, attrs, "Conv2DBackpropFilter")
    check_dy(dy.shape, info, "Conv2DBackpropFilter")
    return conv_backprop_filter_program(backend, x, dy, info, filter_shape)
