"""Image kernels: ResizeBilinear, ResizeNearestNeighbor and their gradients, CropAndResize,
FlipLeftRight, RotateWithOffset, Transform.

Images are NHWC. Resizing gathers whole rows and columns with index and weight vectors computed
once per axis (and kept per axis size and attributes); coordinates and interpolation run in float64,
as TF.js's JavaScript numbers do, and are stored as float32. With the JIT on (``..numba``), ResizeBilinear
runs as one compiled loop (:mod:`..numba._image_kernels`) doing the same arithmetic in the same order.
``js_round`` is JavaScript's ``Math.round`` (halves go up), which TF.js uses.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from ....core import kernel_names as kn
from ...shared.image import (
    bilinear_axis,
    channel_fill,
    crop_coords,
    fold_coord,
    js_round,
    nearest_axis,
    resize_attrs,
    rotation_sources,
)
from .. import numba as jit
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

# ----------------------------------------------------------------------------- resize


# Input dtypes the compiled resize takes (each compiles once, on first use); others run the numpy path.
_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.int32))


def _compiled() -> ModuleType | None:
    """The compiled image kernels, or None when the numpy paths must run (JIT off, numba missing or broken)."""
    if jit.kernels() is None:
        return None
    from ..numba import _image_kernels  # noqa: PLC0415 - imports numba: only once the JIT is known to be on

    return _image_kernels


_RESIZE_CHUNK_BYTES = 1 << 18  # float64 scratch per block of output rows: stays in the core's L2 cache


def _bilinear_rows(
    img: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    cols: tuple[np.ndarray, np.ndarray, np.ndarray],
    dest: np.ndarray,
) -> None:
    """Images (NHWC) resized into ``dest`` (a block of output rows) from that block's row indices."""
    r0, r1, rf = rows
    c0, c1, cf = cols
    used = np.unique(np.concatenate([r0, r1]))
    lo = int(used[0])
    if used.size == int(used[-1]) - lo + 1:
        src, top_at, bottom_at = img[:, lo : lo + used.size], r0 - lo, r1 - lo
    else:  # strong downscaling: only the rows some output row reads
        src, top_at, bottom_at = np.take(img, used, axis=1), np.searchsorted(used, r0), np.searchsorted(used, r1)
    left = np.take(src, c0, axis=2).astype(np.float64)  # tl / bl for each source row used
    step = np.take(src, c1, axis=2) - left  # tr - tl
    step *= cf
    left += step  # top / bottom for each source row used
    top = np.take(left, top_at, axis=1)
    bottom = np.take(left, bottom_at, axis=1)
    bottom -= top
    bottom *= rf[:, None, None]
    top += bottom
    dest[...] = top


@cpu_kernel(kn.ResizeBilinear)
def resize_bilinear(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Bilinear resize of NHWC images to ``size``; always float32.

    Per output pixel this is TF.js's ``top = tl + (tr - tl) * cf``, ``bottom = bl + (br - bl) * cf``,
    ``top + (bottom - top) * rf`` in float64. It runs by blocks of output rows small enough for the
    cache; within a block, the column step runs once per source row that the block reads (it depends
    on the source row only), then the row step combines whole interpolated rows. With the JIT on, float32
    and int32 images run the compiled kernel instead: the same steps, row by row, same results."""
    (images,) = inputs
    x = values_of(backend, images)
    batch, height, width, channels = x.shape
    new_h, new_w = attrs["size"]
    if batch * new_h * new_w * channels == 0:
        return out(backend, np.zeros((batch, new_h, new_w, channels), np.float32), "float32")
    align, half = resize_attrs(attrs)
    r0, r1, rf = bilinear_axis(height, new_h, align, half)
    c0, c1, cf = bilinear_axis(width, new_w, align, half)
    result = np.empty((batch, new_h, new_w, channels), np.float32)
    compiled = _compiled() if x.dtype in _COMPILED_DTYPES and x.size else None  # (an empty image reads nothing)
    if compiled is not None:
        src = np.ascontiguousarray(x).reshape(batch, height, width * channels)
        dest = result.reshape(batch, new_h, new_w * channels)
        compiled.resize_bilinear(src, r0, r1, rf, c0, c1, cf, channels, dest)
        return out(backend, result, "float32")
    cols = (c0, c1, cf[:, None])
    row_bytes = new_w * channels * 8
    images_per_block = max(1, _RESIZE_CHUNK_BYTES // (row_bytes * new_h))  # small images: several at once
    block = max(1, _RESIZE_CHUNK_BYTES // row_bytes)
    for b in range(0, batch, images_per_block):
        e = min(batch, b + images_per_block)
        for i in range(0, new_h, block):
            j = min(new_h, i + block)
            _bilinear_rows(x[b:e], (r0[i:j], r1[i:j], rf[i:j]), cols, result[b:e, i:j])
    return out(backend, result, "float32")


@cpu_kernel(kn.ResizeNearestNeighbor)
def resize_nearest_neighbor(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Nearest-neighbour resize of NHWC images to ``size``; keeps the dtype."""
    (images,) = inputs
    x = values_of(backend, images)
    batch, height, width, channels = x.shape
    new_h, new_w = attrs["size"]
    if batch * new_h * new_w * channels == 0:
        return out(backend, np.zeros((batch, new_h, new_w, channels), x.dtype), images.dtype)
    align, half = resize_attrs(attrs)
    rows = nearest_axis(height, new_h, align, half)
    cols = nearest_axis(width, new_w, align, half)
    return out(backend, x[:, rows][:, :, cols], images.dtype)


def _sum_groups(v: np.ndarray, idx: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Sum the slices of ``v`` along ``axis`` into ``n`` bins; ``idx`` (non-decreasing) names each bin."""
    shape = list(v.shape)
    shape[axis] = n
    result = np.zeros(shape, np.float64)
    if v.shape[axis] == 0 or n == 0:
        return result
    starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
    where = [slice(None)] * v.ndim
    where[axis] = idx[starts]
    result[tuple(where)] = np.add.reduceat(v, starts, axis=axis)
    return result


@cpu_kernel(kn.ResizeNearestNeighborGrad)
def resize_nearest_neighbor_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Gradient of ResizeNearestNeighbor: each input pixel sums the ``dy`` of the pixels copied from it."""
    images, dy = inputs
    batch, height, width, channels = images.shape
    g = values_of(backend, dy).astype(np.float64)
    align, half = resize_attrs(attrs)
    rows = nearest_axis(height, g.shape[1], align, half)
    cols = nearest_axis(width, g.shape[2], align, half)
    g = _sum_groups(_sum_groups(g, rows, height, 1), cols, width, 2)
    return out(backend, g, images.dtype)


def _spread(g: np.ndarray, size: int, axis: int, align: bool, half: bool) -> np.ndarray:
    """The transpose of bilinear interpolation along ``axis``: each value goes back to its two
    source pixels, weighted as the forward pass took them."""
    lo, hi, frac = bilinear_axis(size, g.shape[axis], align, half)
    shape = [1] * g.ndim
    shape[axis] = frac.size
    frac = frac.reshape(shape)
    return _sum_groups(g * (1.0 - frac), lo, size, axis) + _sum_groups(g * frac, hi, size, axis)


@cpu_kernel(kn.ResizeBilinearGrad)
def resize_bilinear_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Gradient of ResizeBilinear: ``dy`` spread back onto the input pixels with the forward weights."""
    images, dy = inputs
    _, height, width, _ = images.shape
    g = values_of(backend, dy).astype(np.float64)
    align, half = resize_attrs(attrs)
    g = _spread(_spread(g, height, 1, align, half), width, 2, align, half)
    return out(backend, g, "float32")


# ----------------------------------------------------------------------------- crop, flip, rotate


@cpu_kernel(kn.CropAndResize)
def crop_and_resize(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Crops of ``image`` at normalized ``boxes`` resized to ``crop_size``; float32.

    Samples outside the image get ``extrapolation_value``; boxes whose index is outside
    ``[0, batch)`` give zeros.
    """
    image, boxes, box_ind = inputs
    img = values_of(backend, image)
    bx = values_of(backend, boxes).astype(np.float64)
    ind = values_of(backend, box_ind).astype(np.int64)
    batch, height, width, channels = img.shape
    crop_h, crop_w = attrs["crop_size"]
    extrapolation = float(attrs.get("extrapolation_value", 0.0))
    n = bx.shape[0]
    if n * crop_h * crop_w * channels == 0:
        return out(backend, np.zeros((n, crop_h, crop_w, channels), np.float32), "float32")
    y = crop_coords(bx[:, 0], bx[:, 2], height, crop_h)  # (n, crop_h)
    x = crop_coords(bx[:, 1], bx[:, 3], width, crop_w)  # (n, crop_w)
    outside = ((y < 0) | (y > height - 1))[:, :, None] | ((x < 0) | (x > width - 1))[:, None, :]
    unknown = np.isnan(y)[:, :, None] | np.isnan(x)[:, None, :]
    good_box = (ind >= 0) & (ind < batch)
    if img.size == 0 or not good_box.any():
        result = np.zeros((n, crop_h, crop_w, channels), np.float64)
    else:
        y = np.where(np.isnan(y) | (y < 0) | (y > height - 1), 0.0, y)
        x = np.where(np.isnan(x) | (x < 0) | (x > width - 1), 0.0, x)
        b = np.where(good_box, ind, 0)[:, None, None]
        result = _crop_sample(img.astype(np.float64), b, y, x, attrs.get("method", "bilinear"))
    result = np.where(unknown[..., None], np.nan, result)  # TF.js reads at a NaN index
    result = np.where(outside[..., None], extrapolation, result)
    result[~good_box] = 0.0
    return out(backend, result, "float32")


def _crop_sample(src: np.ndarray, b: np.ndarray, y: np.ndarray, x: np.ndarray, method: str) -> np.ndarray:
    """Sample images ``b`` (n, 1, 1) at rows ``y`` (n, crop_h) and columns ``x`` (n, crop_w), all in range."""
    if method != "bilinear":
        return src[b, js_round(y).astype(np.intp)[:, :, None], js_round(x).astype(np.intp)[:, None, :]]
    top, left = np.floor(y).astype(np.intp), np.floor(x).astype(np.intp)
    bottom, right = np.ceil(y).astype(np.intp), np.ceil(x).astype(np.intp)
    y_lerp = (y - top)[:, :, None, None]
    x_lerp = (x - left)[:, None, :, None]
    t, bt = top[:, :, None], bottom[:, :, None]
    lft, rgt = left[:, None, :], right[:, None, :]
    top_l, bottom_l = src[b, t, lft], src[b, bt, lft]
    upper = top_l + (src[b, t, rgt] - top_l) * x_lerp
    lower = bottom_l + (src[b, bt, rgt] - bottom_l) * x_lerp
    return upper + (lower - upper) * y_lerp


@cpu_kernel(kn.FlipLeftRight)
def flip_left_right(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Mirror NHWC images horizontally."""
    (image,) = inputs
    return out(backend, np.ascontiguousarray(values_of(backend, image)[:, :, ::-1]), image.dtype)


def _channel_fill(fill_value: object, channels: int) -> np.ndarray | float:
    """:func:`channel_fill`, a per-channel fill as a float64 array."""
    fill = channel_fill(fill_value, channels)
    return fill if isinstance(fill, float) else np.array(fill, np.float64)


@cpu_kernel(kn.RotateWithOffset)
def rotate_with_offset(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Rotate NHWC images by ``radians`` about ``center`` (fractions of width and height)."""
    (image,) = inputs
    img = values_of(backend, image)
    batch, height, width, channels = img.shape
    rows, cols, inside = rotation_sources(height, width, attrs)
    fill = _channel_fill(attrs.get("fill_value", 0), channels)
    if img.size == 0:
        return out(backend, np.zeros(img.shape, img.dtype), image.dtype)
    result = np.where(inside[None, :, :, None], img[:, rows, cols], fill)
    return out(backend, result, image.dtype)


# ----------------------------------------------------------------------------- transform


def _map_coord(c: np.ndarray, n: int, mode: str) -> np.ndarray:
    if mode == "constant":
        return c
    c = fold_coord(c, n, mode, np)
    return np.maximum(0.0, np.minimum(c, n - 1))  # TF.js's clamp(0, c, n - 1)


class _Reader:
    """Reads pixels at integer coordinates, ``fill`` outside the image (or at NaN coordinates)."""

    def __init__(self, img: np.ndarray, batch_index: np.ndarray, fill: float) -> None:
        self.img, self.b, self.fill = img, batch_index, fill
        self.h, self.w = img.shape[1], img.shape[2]

    def __call__(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        inside = (y >= 0) & (y < self.h) & (x >= 0) & (x < self.w)
        if not inside.any():
            return np.full((*inside.shape, self.img.shape[3]), self.fill)
        rows = np.where(inside, y, 0).astype(np.intp)
        cols = np.where(inside, x, 0).astype(np.intp)
        return np.where(inside[..., None], self.img[self.b, rows, cols], self.fill)


@cpu_kernel(kn.Transform)
def transform(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Projective transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]`` (output -> input) of NHWC images."""
    image, transforms = inputs
    img = values_of(backend, image).astype(np.float64)
    t = values_of(backend, transforms).astype(np.float64)
    batch, height, width, channels = img.shape
    out_h, out_w = attrs.get("output_shape") or (height, width)
    fill = float(np.float32(attrs.get("fill_value", 0)))
    if batch * out_h * out_w * channels == 0:
        return out(backend, np.full((batch, out_h, out_w, channels), fill), image.dtype)
    t = np.broadcast_to(t, (batch, 8))[:, :, None, None]  # one row for all images, or one each
    x = np.arange(out_w, dtype=np.float64)[None, None, :]
    y = np.arange(out_h, dtype=np.float64)[None, :, None]
    projection = t[:, 6] * x + t[:, 7] * y + 1
    in_x = (t[:, 0] * x + t[:, 1] * y + t[:, 2]) / projection
    in_y = (t[:, 3] * x + t[:, 4] * y + t[:, 5]) / projection
    mode = attrs.get("fill_mode", "constant")
    in_x, in_y = _map_coord(in_x, width, mode), _map_coord(in_y, height, mode)
    read = _Reader(img, np.arange(batch)[:, None, None], fill)
    if attrs.get("interpolation", "nearest") == "nearest":
        result = read(js_round(in_y), js_round(in_x))
    else:
        y0, x0 = np.floor(in_y), np.floor(in_x)
        y1, x1 = y0 + 1, x0 + 1
        xa, xb = (x1 - in_x)[..., None], (in_x - x0)[..., None]
        upper = xa * read(y0, x0) + xb * read(y0, x1)
        lower = xa * read(y1, x0) + xb * read(y1, x1)
        result = (y1 - in_y)[..., None] * upper + (in_y - y0)[..., None] * lower
    result = np.where((projection == 0)[..., None], fill, result)
    return out(backend, result, image.dtype)
