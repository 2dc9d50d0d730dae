"""Image kernels on the GPU: ResizeBilinear, ResizeNearestNeighbor and their gradients, CropAndResize,
FlipLeftRight, RotateWithOffset, Transform. Images are NHWC; one invocation per output element.

Resizing: the source rows and columns of every output pixel (and, for the gradients, the range of output
pixels that read each input pixel) depend only on the sizes and the flags, so they are computed on the host
with the cpu kernel's own functions (float64, as TF.js's JavaScript numbers) and uploaded as two small
tables (int32 indexes and ranges, float32 fractions) next to the image: nearest-neighbour indexes are
exactly the cpu kernel's, even where float32 arithmetic would round a half the other way. The gradients
gather: each input pixel sums, over its output ranges, ``dy`` times the weight the forward pass gave it.

CropAndResize, RotateWithOffset and Transform compute their sampling coordinates on the GPU in float32 from
the values (boxes, transforms) and the attributes, following the cpu kernels' formulas and NaN rules.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core import kernel_names as kn
from ...shared.image import bilinear_axis, nearest_axis
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .pool import F32_HELPERS, compute_type, to_out_fn


def _forward(name: str, backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    from .forward import forward

    return forward(name, backend, inputs, attrs)  # type: ignore[return-value]


# Double-float arithmetic (an f32 pair hi + lo, about 48 significant bits): the sampling coordinates of the
# kernels below are compared with image borders and rounded, so float32 rounding would move samples across
# pixels where the cpu kernel's float64 does not (decimal boxes and transforms sit just beside integers).
DF = """
fn opq(v: f32) -> f32 {  // v, hidden from algebraic simplification ((a + b) - a is not b in floats)
  return select(v, 0.0, (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u);
}
fn df_qsum(a: f32, b: f32) -> vec2<f32> { let s = a + b; return vec2<f32>(s, b - opq(opq(s) - a)); }
fn df_tsum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b; let bb = opq(opq(s) - a);
  return vec2<f32>(s, (a - opq(opq(s) - bb)) + (b - bb));
}
fn df_split(a: f32) -> vec2<f32> { let c = opq(4097.0 * a); let h = c - opq(c - a); return vec2<f32>(h, a - h); }
fn df_tprod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b; let sa = df_split(a); let sb = df_split(b);
  return vec2<f32>(p, ((sa.x * sb.x - opq(p)) + sa.x * sb.y + sa.y * sb.x) + sa.y * sb.y);
}
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = df_tsum(a.x, b.x); let t = df_tsum(a.y, b.y);
  let r = df_qsum(s.x, s.y + t.x);
  return df_qsum(r.x, r.y + t.y);
}
fn df_neg(a: vec2<f32>) -> vec2<f32> { return vec2<f32>(-a.x, -a.y); }
fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = df_tprod(a.x, b.x);
  return df_qsum(p.x, p.y + (a.x * b.y + a.y * b.x));
}
fn df_mul_f(a: vec2<f32>, b: f32) -> vec2<f32> { let p = df_tprod(a.x, b); return df_qsum(p.x, p.y + a.y * b); }
fn df_div(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let q1 = a.x / b.x;
  let r = df_add(a, df_neg(df_mul_f(b, q1)));
  let q2 = r.x / b.x;
  let r2 = df_add(r, df_neg(df_mul_f(b, q2)));
  return df_add(df_qsum(q1, q2), vec2<f32>(r2.x / b.x, 0.0));
}
fn df_f(a: f32) -> vec2<f32> { return vec2<f32>(a, 0.0); }
fn df_lt(a: vec2<f32>, b: f32) -> bool { return a.x < b || (a.x == b && a.y < 0.0); }
fn df_gt(a: vec2<f32>, b: f32) -> bool { return a.x > b || (a.x == b && a.y > 0.0); }
fn df_floor(a: vec2<f32>) -> vec2<f32> {
  let h = floor(a.x);
  if (h == a.x) { return df_qsum(h, floor(a.y)); }
  return vec2<f32>(h, 0.0);
}
fn df_trunc(a: vec2<f32>) -> vec2<f32> {
  if (df_lt(a, 0.0)) { return df_neg(df_floor(df_neg(a))); }
  return df_floor(a);
}
fn df_round(a: vec2<f32>) -> vec2<f32> { return df_floor(df_add(a, df_f(0.5))); }
"""


def df_pair(value: float) -> list[float]:
    """A float64 as the double-float parameter [hi, lo] (two float32 values summing to it)."""
    hi = float(np.float32(value))
    return [hi, float(np.float32(value - hi))] if math.isfinite(value) else [hi, 0.0]


_DECOMPOSE = """
  var rest = index;
  let ch = rest % n_ch; rest = rest / n_ch;
  let ox = rest % out_w; rest = rest / out_w;
  let oy = rest % out_h; let b = rest / out_h;
"""


# ----------------------------------------------------------------------------- resize


def _ranges(lo: np.ndarray, hi: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For each input index i < n: [start, end) of the output indexes o with lo[o] <= i <= hi[o] (a superset
    of those that read i; both arrays non-decreasing)."""
    i = np.arange(n)
    return np.searchsorted(hi, i, side="left"), np.searchsorted(lo, i, side="right")


def _tables(
    backend: WebGPUBackend, in_hw: tuple[int, int], out_hw: tuple[int, int], attrs: dict, bilinear: bool
) -> tuple[tuple[int, tuple[int]], tuple[int, tuple[int]], dict[str, int]]:
    """Upload the per-axis tables; return the int and float tables (data id, shape) and each part's offset."""
    align, half = bool(attrs.get("align_corners", False)), bool(attrs.get("half_pixel_centers", False))
    ints, floats, offsets = [], [], {}
    for axis, (n, m) in zip("yx", zip(in_hw, out_hw, strict=True), strict=True):
        if bilinear:
            lo, hi, frac = bilinear_axis(n, m, align, half)
        else:
            lo = hi = nearest_axis(n, m, align, half)
            frac = np.zeros(m)
        start, end = _ranges(lo, hi, n)
        for part, values in (("lo", lo), ("hi", hi), ("start", start), ("end", end)):
            offsets[f"{axis}_{part}"] = sum(len(v) for v in ints)
            ints.append(np.asarray(values, np.int64))
        offsets[f"{axis}_frac"] = sum(len(v) for v in floats)
        floats.append(np.asarray(frac, np.float64))
    int_table = np.concatenate(ints).astype(np.int32)
    float_table = np.concatenate(floats).astype(np.float32)
    int_id = backend.write(int_table, int_table.shape, "int32")
    float_id = backend.write(float_table, float_table.shape, "float32")
    return (int_id, int_table.shape), (float_id, float_table.shape), offsets


def _resize(backend: WebGPUBackend, images: Any, dy: Any, attrs: dict, bilinear: bool, out_dtype: str) -> Output:
    """Forward (``dy`` None) or gradient resize program."""
    batch, height, width, channels = images.shape
    if dy is None:
        out_h, out_w = attrs["size"]
        shape = (batch, out_h, out_w, channels)
    else:
        out_h, out_w = dy.shape[1], dy.shape[2]
        shape = images.shape
    if math.prod(shape) == 0:
        return backend.run(("resize_empty",), lambda: "", [], [("out", shape, out_dtype)], {})[0]
    (int_id, int_shape), (float_id, float_shape), offsets = _tables(
        backend, (height, width), (out_h, out_w), attrs, bilinear
    )
    params = {"in_h": height, "in_w": width, "out_h": out_h, "out_w": out_w, "n_ch": channels, **offsets}
    tabs = [("itab", Ref(int_id, int_shape, "int32")), ("ftab", Ref(float_id, float_shape, "float32"))]
    try:
        if dy is None:
            inputs = [("img", images), *tabs]
            key = ("resize", bilinear, images.dtype, out_dtype)
            code = _bilinear_code if bilinear else _nearest_code
        else:
            inputs = [("dy", dy), *tabs]
            key = ("resize_grad", bilinear, dy.dtype, out_dtype)
            code = _grad_code(bilinear, out_dtype)
        return backend.run(key, code, inputs, [("out", shape, out_dtype)], params)[0]
    finally:
        backend.dispose_data(int_id)
        backend.dispose_data(float_id)


def _bilinear_code() -> str:
    return (
        "fn px(b: i32, y: i32, x: i32, ch: i32) -> f32 {\n"
        + "  return f32(load_img(((b * in_h + y) * in_w + x) * n_ch + ch));\n}"
        + "\nfn compute(index: i32) {" + _DECOMPOSE
        + "  let r0 = load_itab(y_lo + oy); let r1 = load_itab(y_hi + oy); let rf = load_ftab(y_frac + oy);\n"
        + "  let c0 = load_itab(x_lo + ox); let c1 = load_itab(x_hi + ox); let cf = load_ftab(x_frac + ox);\n"
        + "  let tl = px(b, r0, c0, ch); let top = tl + (px(b, r0, c1, ch) - tl) * cf;\n"
        + "  let bl = px(b, r1, c0, ch); let bottom = bl + (px(b, r1, c1, ch) - bl) * cf;\n"
        + "  store_out(index, top + (bottom - top) * rf);\n}"
    )  # fmt: skip


def _nearest_code() -> str:
    return (
        "fn compute(index: i32) {" + _DECOMPOSE
        + "  let r = load_itab(y_lo + oy); let c = load_itab(x_lo + ox);\n"
        + "  store_out(index, load_img(((b * in_h + r) * in_w + c) * n_ch + ch));\n}"
    )  # fmt: skip


def _grad_code(bilinear: bool, out_dtype: str):
    def weight(axis: str, o: str, i: str) -> str:
        if not bilinear:
            return "1.0"
        f = f"load_ftab({axis}_frac + {o})"
        return (
            f"(select(0.0, 1.0 - {f}, load_itab({axis}_lo + {o}) == {i})"
            f" + select(0.0, {f}, load_itab({axis}_hi + {o}) == {i}))"
        )

    def code() -> str:
        return (
            F32_HELPERS + to_out_fn(out_dtype) + "\nfn compute(index: i32) {\n"
            + "  var rest = index;\n  let ch = rest % n_ch; rest = rest / n_ch;\n"
            + "  let ix = rest % in_w; rest = rest / in_w;\n  let iy = rest % in_h; let b = rest / in_h;\n"
            + "  var acc = 0.0;\n"
            + "  for (var oy = load_itab(y_start + iy); oy < load_itab(y_end + iy); oy++) {\n"
            + f"    let wy = {weight('y', 'oy', 'iy')};\n    var row_acc = 0.0;\n"
            + "    for (var ox = load_itab(x_start + ix); ox < load_itab(x_end + ix); ox++) {\n"
            + "      let g = f32(load_dy(((b * out_h + oy) * out_w + ox) * n_ch + ch));\n"
            + f"      row_acc = row_acc + {weight('x', 'ox', 'ix')} * g;\n"
            + "    }\n    acc = acc + wy * row_acc;\n  }\n"
            + "  store_out(index, to_out(acc));\n}"
        )  # fmt: skip

    return code


@gpu_kernel(kn.ResizeBilinear)
def resize_bilinear(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Bilinear resize of NHWC images to ``size``; always float32."""
    if not on_gpu_dtypes(*inputs):
        return _forward("ResizeBilinear", backend, inputs, attrs)
    return _resize(backend, inputs[0], None, attrs, True, "float32")


@gpu_kernel(kn.ResizeNearestNeighbor)
def resize_nearest_neighbor(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Nearest-neighbour resize of NHWC images to ``size``; keeps the dtype."""
    if not on_gpu_dtypes(*inputs):
        return _forward("ResizeNearestNeighbor", backend, inputs, attrs)
    return _resize(backend, inputs[0], None, attrs, False, inputs[0].dtype)


@gpu_kernel(kn.ResizeBilinearGrad)
def resize_bilinear_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (images, dy): ``dy`` spread back onto the input pixels with the forward weights; float32."""
    if not on_gpu_dtypes(*inputs):
        return _forward("ResizeBilinearGrad", backend, inputs, attrs)
    return _resize(backend, inputs[0], inputs[1], attrs, True, "float32")


@gpu_kernel(kn.ResizeNearestNeighborGrad)
def resize_nearest_neighbor_grad(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (images, dy): each input pixel sums the ``dy`` of the pixels copied from it; images' dtype."""
    if not on_gpu_dtypes(*inputs):
        return _forward("ResizeNearestNeighborGrad", backend, inputs, attrs)
    return _resize(backend, inputs[0], inputs[1], attrs, False, inputs[0].dtype)


# ----------------------------------------------------------------------------- crop, flip, rotate

_CROP = """
fn crop_px(b: i32, y: i32, x: i32, ch: i32) -> f32 { return f32(load_img(((b * in_h + y) * in_w + x) * n_ch + ch)); }
fn crop_coord(start: f32, end: f32, size: i32, crop: i32, i: i32) -> vec2<f32> {
  let span = f32(size - 1i);
  if (crop > 1i) {
    let scale = df_div(df_mul_f(df_tsum(end, -start), span), df_f(f32(crop - 1i)));
    return df_add(df_tprod(start, span), df_mul_f(scale, f32(i)));
  }
  return df_mul_f(df_mul_f(df_tsum(start, end), 0.5), span);
}
fn compute(index: i32) {
  var rest = index;
  let ch = rest % n_ch; rest = rest / n_ch;
  let ox = rest % out_w; rest = rest / out_w;
  let oy = rest % out_h; let n = rest / out_h;
  let bi = load_ind(n);
  if (bi < 0i || bi >= n_batch) { store_out(index, 0.0); return; }
  let y = crop_coord(load_boxes(n * 4i), load_boxes(n * 4i + 2i), in_h, out_h, oy);
  let x = crop_coord(load_boxes(n * 4i + 1i), load_boxes(n * 4i + 3i), in_w, out_w, ox);
  if (df_lt(y, 0.0) || df_gt(y, f32(in_h - 1i)) || df_lt(x, 0.0) || df_gt(x, f32(in_w - 1i))) {
    store_out(index, extrapolation);
    return;
  }
  if (is_nan(y.x) || is_nan(x.x)) { store_out(index, nan_f32()); return; }
  SAMPLE
}
"""

_CROP_BILINEAR = """
  let fy = df_floor(y); let fx = df_floor(x);
  let yl = df_add(y, df_neg(fy)).x; let xl = df_add(x, df_neg(fx)).x;
  let top = i32(fy.x); let left = i32(fx.x);
  let bottom = top + select(0i, 1i, yl != 0.0); let right = left + select(0i, 1i, xl != 0.0);
  let tl = crop_px(bi, top, left, ch); let bl = crop_px(bi, bottom, left, ch);
  let upper = tl + (crop_px(bi, top, right, ch) - tl) * xl;
  let lower = bl + (crop_px(bi, bottom, right, ch) - bl) * xl;
  store_out(index, upper + (lower - upper) * yl);
"""

_CROP_NEAREST = "store_out(index, crop_px(bi, i32(df_round(y).x), i32(df_round(x).x), ch));"


@gpu_kernel(kn.CropAndResize)
def crop_and_resize(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Crops of ``image`` at normalized ``boxes`` resized to ``crop_size``; float32 (see the cpu kernel)."""
    if not on_gpu_dtypes(*inputs):
        return _forward("CropAndResize", backend, inputs, attrs)
    image, boxes, box_ind = inputs
    batch, height, width, channels = image.shape
    crop_h, crop_w = attrs["crop_size"]
    method = attrs.get("method", "bilinear")
    params = {
        "n_batch": batch, "in_h": height, "in_w": width, "n_ch": channels, "out_h": crop_h, "out_w": crop_w,
        "extrapolation": float(attrs.get("extrapolation_value", 0.0)),
    }  # fmt: skip
    shape = (boxes.shape[0], crop_h, crop_w, channels)

    def code() -> str:
        sample = _CROP_BILINEAR if method == "bilinear" else _CROP_NEAREST
        return F32_HELPERS + DF + _CROP.replace("SAMPLE", sample)

    bindings = [("img", image), ("boxes", boxes), ("ind", box_ind)]
    return backend.run(("crop_and_resize", method), code, bindings, [("out", shape, "float32")], params)[0]


@gpu_kernel(kn.FlipLeftRight)
def flip_left_right(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Mirror NHWC images horizontally."""
    if not on_gpu_dtypes(*inputs):
        return _forward("FlipLeftRight", backend, inputs, attrs or {})
    (image,) = inputs
    batch, height, width, channels = image.shape
    params = {"out_h": height, "out_w": width, "n_ch": channels}

    def code() -> str:
        return (
            "fn compute(index: i32) {" + _DECOMPOSE
            + "  store_out(index, load_img(((b * out_h + oy) * out_w + (out_w - 1i - ox)) * n_ch + ch));\n}"
        )  # fmt: skip

    return backend.run(("flip_left_right",), code, [("img", image)], [("out", image.shape, image.dtype)], params)[0]


def _channel_fill(fill_value: Any, channels: int) -> list[float]:
    """``fill_value`` per channel: a number everywhere, or one per channel with alpha (channel 3) 255."""
    if isinstance(fill_value, int | float):
        return [float(fill_value)] * max(channels, 1)
    return [255.0 if c == 3 else float(fill_value[c]) for c in range(channels)] or [0.0]


@gpu_kernel(kn.RotateWithOffset)
def rotate_with_offset(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Rotate NHWC images by ``radians`` about ``center`` (fractions of width and height)."""
    if not on_gpu_dtypes(*inputs):
        return _forward("RotateWithOffset", backend, inputs, attrs)
    (image,) = inputs
    batch, height, width, channels = image.shape
    center = attrs.get("center", 0.5)
    radians = float(attrs["radians"])
    params = {
        "out_h": height, "out_w": width, "n_ch": channels,
        "cx_p": df_pair(width * (center if isinstance(center, int | float) else center[0])),
        "cy_p": df_pair(height * (center if isinstance(center, int | float) else center[1])),
        "sin_p": df_pair(math.sin(radians)), "cos_p": df_pair(math.cos(radians)),
        "fills": _channel_fill(attrs.get("fill_value", 0), channels),
    }  # fmt: skip
    t = compute_type(image.dtype)

    def code() -> str:
        return (
            F32_HELPERS + DF + "fn compute(index: i32) {" + _DECOMPOSE
            + "  let cxd = vec2<f32>(cx_p[0], cx_p[1]); let cyd = vec2<f32>(cy_p[0], cy_p[1]);\n"
            + "  let cosd = vec2<f32>(cos_p[0], cos_p[1]); let sind = vec2<f32>(sin_p[0], sin_p[1]);\n"
            + "  let x = df_add(df_f(f32(ox)), df_neg(cxd)); let y = df_add(df_f(f32(oy)), df_neg(cyd));\n"
            + "  let sx = df_round(df_add(df_add(df_mul(x, cosd), df_neg(df_mul(y, sind))), cxd)).x;\n"
            + "  let sy = df_round(df_add(df_add(df_mul(x, sind), df_mul(y, cosd)), cyd)).x;\n"
            + "  if (sx >= 0.0 && sx < f32(out_w) && sy >= 0.0 && sy < f32(out_h)) {\n"
            + "    store_out(index, load_img(((b * out_h + i32(sy)) * out_w + i32(sx)) * n_ch + ch));\n"
            + f"  }} else {{ store_out(index, {t}(fills[ch])); }}\n}}"
        )  # fmt: skip

    return backend.run(("rotate",), code, [("img", image)], [("out", image.shape, image.dtype)], params)[0]


# ----------------------------------------------------------------------------- transform

_MAP = {
    "constant": "fn map_coord(c: vec2<f32>, n: i32) -> vec2<f32> { return c; }",
    "nearest": "fn map_coord(c: vec2<f32>, n: i32) -> vec2<f32> { return clamp_nan(c, n); }",
    "reflect": """
fn map_coord(c: vec2<f32>, n: i32) -> vec2<f32> {
  let nf = f32(n);
  if (n <= 1i) { return clamp_nan(select(c, df_f(0.0), df_lt(c, 0.0) || df_gt(c, nf - 1.0)), n); }
  let period = 2.0 * nf;
  var r = c;
  if (df_lt(c, 0.0)) {
    r = df_add(df_mul_f(df_trunc(df_div(df_neg(c), df_f(period))), period), c);
    r = select(df_add(df_neg(r), df_f(-1.0)), df_add(r, df_f(period)), df_lt(r, -nf));
  } else if (df_gt(c, nf - 1.0)) {
    r = df_add(c, df_neg(df_mul_f(df_trunc(df_div(c, df_f(period))), period)));
    r = select(r, df_add(df_f(period - 1.0), df_neg(r)), !df_lt(r, nf));
  }
  return clamp_nan(r, n);
}""",
    "wrap": """
fn map_coord(c: vec2<f32>, n: i32) -> vec2<f32> {
  let nf = f32(n);
  if (n <= 1i) { return clamp_nan(select(c, df_f(0.0), df_lt(c, 0.0) || df_gt(c, nf - 1.0)), n); }
  var r = c;
  if (df_lt(c, 0.0)) {
    r = df_add(c, df_mul_f(df_add(df_trunc(df_div(df_neg(c), df_f(nf - 1.0))), df_f(1.0)), nf));
  } else if (df_gt(c, nf - 1.0)) {
    r = df_add(c, df_neg(df_mul_f(df_trunc(df_div(c, df_f(nf - 1.0))), nf)));
  }
  return clamp_nan(r, n);
}""",
}

_TRANSFORM = """
fn clamp_nan(c: vec2<f32>, n: i32) -> vec2<f32> {  // max(0, min(c, n - 1)) keeping NaN
  let m = select(c, df_f(f32(n - 1i)), df_gt(c, f32(n - 1i)));
  return select(m, df_f(0.0), df_lt(m, 0.0));
}
fn read_px(b: i32, y: f32, x: f32, ch: i32) -> f32 {
  if (y >= 0.0 && y < f32(in_h) && x >= 0.0 && x < f32(in_w)) {
    return f32(load_img(((b * in_h + i32(y)) * in_w + i32(x)) * n_ch + ch));
  }
  return fill_v;
}
fn compute(index: i32) {
  var rest = index;
  let ch = rest % n_ch; rest = rest / n_ch;
  let ox = rest % out_w; rest = rest / out_w;
  let oy = rest % out_h; let b = rest / out_h;
  let t0 = select(b * 8i, 0i, t_rows == 1i);
  let x = f32(ox); let y = f32(oy);
  let projection = df_add(df_add(df_tprod(load_tr(t0 + 6i), x), df_tprod(load_tr(t0 + 7i), y)), df_f(1.0));
  if (projection.x == 0.0) { store_out(index, to_out(fill_v)); return; }
  let px = df_add(df_add(df_tprod(load_tr(t0), x), df_tprod(load_tr(t0 + 1i), y)), df_f(load_tr(t0 + 2i)));
  let py = df_add(df_add(df_tprod(load_tr(t0 + 3i), x), df_tprod(load_tr(t0 + 4i), y)), df_f(load_tr(t0 + 5i)));
  let in_x = map_coord(df_div(px, projection), in_w);
  let in_y = map_coord(df_div(py, projection), in_h);
  SAMPLE
}
"""

_T_NEAREST = "store_out(index, to_out(read_px(b, df_round(in_y).x, df_round(in_x).x, ch)));"
_T_BILINEAR = """
  let y0 = df_floor(in_y); let x0 = df_floor(in_x);
  let y1 = df_add(y0, df_f(1.0)); let x1 = df_add(x0, df_f(1.0));
  let xa = df_add(x1, df_neg(in_x)).x; let xb = df_add(in_x, df_neg(x0)).x;
  let ya = df_add(y1, df_neg(in_y)).x; let yb = df_add(in_y, df_neg(y0)).x;
  let upper = xa * read_px(b, y0.x, x0.x, ch) + xb * read_px(b, y0.x, x1.x, ch);
  let lower = xa * read_px(b, y1.x, x0.x, ch) + xb * read_px(b, y1.x, x1.x, ch);
  store_out(index, to_out(ya * upper + yb * lower));
"""


@gpu_kernel(kn.Transform)
def transform(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Projective transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]`` (output -> input) of NHWC images."""
    if not on_gpu_dtypes(*inputs):
        return _forward("Transform", backend, inputs, attrs)
    image, transforms = inputs
    batch, height, width, channels = image.shape
    out_h, out_w = attrs.get("output_shape") or (height, width)
    mode = attrs.get("fill_mode", "constant")
    interpolation = attrs.get("interpolation", "nearest")
    params = {
        "in_h": height, "in_w": width, "n_ch": channels, "out_h": out_h, "out_w": out_w,
        "fill_v": float(np.float32(attrs.get("fill_value", 0))), "t_rows": transforms.shape[0],
    }  # fmt: skip

    def code() -> str:
        sample = _T_NEAREST if interpolation == "nearest" else _T_BILINEAR
        return F32_HELPERS + DF + to_out_fn(image.dtype) + _MAP[mode] + _TRANSFORM.replace("SAMPLE", sample)

    shape = (batch, out_h, out_w, channels)
    bindings = [("img", image), ("tr", transforms)]
    return backend.run(("transform", mode, interpolation), code, bindings, [("out", shape, image.dtype)], params)[0]
