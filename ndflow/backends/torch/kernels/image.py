"""Image kernels: ResizeBilinear, ResizeNearestNeighbor and their gradients, CropAndResize,
FlipLeftRight, RotateWithOffset, Transform.

Images are NHWC. TF's sampling rules (``align_corners``, ``half_pixel_centers``, and the legacy
mode with neither, which torch's interpolate has no equivalent for) are applied exactly: source
indices and weights are computed once per axis with numpy (they depend on sizes only) and the
images are gathered and blended on the device. ``js_round`` is JavaScript's ``Math.round``
(halves go up), which TF.js uses.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as tnf

from ....core import kernel_names as kn
from ...shared.image import (
    bilinear_axis,
    channel_fill,
    crop_coords,
    fold_coord,
    nearest_axis,
    resize_attrs,
    rotation_sources,
)
from ..backend import TorchBackend
from .common import F, Output, from_numpy, host, out, torch_kernel, values_of


def js_round(x):
    """``Math.round``: the nearest integer, halves rounded towards +Infinity."""
    return np.floor(x + 0.5) if isinstance(x, np.ndarray) else torch.floor(x + 0.5)


# ----------------------------------------------------------------------------- resize


def _work(v: torch.Tensor) -> torch.Tensor:
    return v if v.is_floating_point() else v.to(F())


@torch_kernel(kn.ResizeBilinear)
def resize_bilinear(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Bilinear resize of NHWC images to ``size``; always float32."""
    (images,) = inputs
    batch, height, width, channels = images.shape
    new_h, new_w = attrs["size"]
    shape = (batch, new_h, new_w, channels)
    if batch * new_h * new_w * channels == 0:
        return out(backend, torch.zeros(shape, dtype=F(), device=backend.device), "float32", shape)
    x = _work(values_of(backend, images))
    align, half = resize_attrs(attrs)
    if align != half and x.dtype is torch.float32:
        # TF's half-pixel centers (source coordinate clamped at 0) and its align_corners are torch's two bilinear
        # modes; torch's kernel is 10-20x faster than the gathers below. TF's legacy mode (neither) has no twin.
        y = tnf.interpolate(x.permute(0, 3, 1, 2), size=(new_h, new_w), mode="bilinear", align_corners=align)
        return out(backend, y.permute(0, 2, 3, 1), "float32", shape)
    r0, r1, rf = (from_numpy(backend, a) for a in bilinear_axis(height, new_h, align, half))
    c0, c1, cf = (from_numpy(backend, a) for a in bilinear_axis(width, new_w, align, half))
    cf = cf.to(x.dtype)[None, None, :, None]
    rf = rf.to(x.dtype)[None, :, None, None]
    top, bottom = x.index_select(1, r0), x.index_select(1, r1)
    top_l, bottom_l = top.index_select(2, c0), bottom.index_select(2, c0)
    top = torch.lerp(top_l, top.index_select(2, c1), cf)
    bottom = torch.lerp(bottom_l, bottom.index_select(2, c1), cf)
    return out(backend, torch.lerp(top, bottom, rf), "float32", shape)


@torch_kernel(kn.ResizeNearestNeighbor)
def resize_nearest_neighbor(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Nearest-neighbour resize of NHWC images to ``size``; keeps the dtype."""
    (images,) = inputs
    x = values_of(backend, images)
    batch, height, width, channels = images.shape
    new_h, new_w = attrs["size"]
    shape = (batch, new_h, new_w, channels)
    if batch * new_h * new_w * channels == 0:
        return out(backend, x.new_zeros(shape), images.dtype, shape)
    align, half = resize_attrs(attrs)
    rows = from_numpy(backend, nearest_axis(height, new_h, align, half))
    cols = from_numpy(backend, nearest_axis(width, new_w, align, half))
    return out(backend, x.index_select(1, rows).index_select(2, cols), images.dtype, shape)


def _sum_groups(v: torch.Tensor, idx: torch.Tensor, n: int, axis: int) -> torch.Tensor:
    """Sum the slices of ``v`` along ``axis`` into ``n`` bins; ``idx`` names each slice's bin."""
    shape = list(v.shape)
    shape[axis] = n
    return torch.zeros(shape, dtype=v.dtype, device=v.device).index_add_(axis, idx, v)


@torch_kernel(kn.ResizeNearestNeighborGrad)
def resize_nearest_neighbor_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Gradient of ResizeNearestNeighbor: each input pixel sums the ``dy`` of the pixels copied from it."""
    images, dy = inputs
    batch, height, width, channels = images.shape
    g = values_of(backend, dy).double()
    align, half = resize_attrs(attrs)
    rows = from_numpy(backend, nearest_axis(height, g.shape[1], align, half))
    cols = from_numpy(backend, nearest_axis(width, g.shape[2], align, half))
    g = _sum_groups(_sum_groups(g, rows, height, 1), cols, width, 2)
    return out(backend, g, images.dtype, images.shape)


def _spread(g: torch.Tensor, size: int, axis: int, align: bool, half: bool, backend: TorchBackend) -> torch.Tensor:
    """The transpose of bilinear interpolation along ``axis``: each value goes back to its two
    source pixels, weighted as the forward pass took them."""
    lo, hi, frac = bilinear_axis(size, g.shape[axis], align, half)
    shape = [1] * g.dim()
    shape[axis] = frac.size
    f = from_numpy(backend, frac).reshape(shape)
    lo_t, hi_t = from_numpy(backend, lo), from_numpy(backend, hi)
    return _sum_groups(g * (1.0 - f), lo_t, size, axis) + _sum_groups(g * f, hi_t, size, axis)


@torch_kernel(kn.ResizeBilinearGrad)
def resize_bilinear_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Gradient of ResizeBilinear: ``dy`` spread back onto the input pixels with the forward weights."""
    images, dy = inputs
    _, height, width, _ = images.shape
    g = values_of(backend, dy).double()
    align, half = resize_attrs(attrs)
    g = _spread(_spread(g, height, 1, align, half, backend), width, 2, align, half, backend)
    return out(backend, g, "float32", images.shape)


# ----------------------------------------------------------------------------- crop, flip, rotate


def _crop_sample(
    src: torch.Tensor, b: torch.Tensor, y: np.ndarray, x: np.ndarray, method: str, backend
) -> torch.Tensor:
    """Sample images ``b`` (n, 1, 1) at rows ``y`` (n, crop_h) and columns ``x`` (n, crop_w), all in range."""
    dev = lambda a: from_numpy(backend, a)  # noqa: E731
    if method != "bilinear":
        rows, cols = dev(js_round(y).astype(np.int64))[:, :, None], dev(js_round(x).astype(np.int64))[:, None, :]
        return src[b, rows, cols]
    top, left = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    bottom, right = np.ceil(y).astype(np.int64), np.ceil(x).astype(np.int64)
    y_lerp = dev(y - top)[:, :, None, None]
    x_lerp = dev(x - left)[:, None, :, None]
    t, bt = dev(top)[:, :, None], dev(bottom)[:, :, None]
    lft, rgt = dev(left)[:, None, :], dev(right)[:, None, :]
    top_l, bottom_l = src[b, t, lft], src[b, bt, lft]
    upper = top_l + (src[b, t, rgt] - top_l) * x_lerp
    lower = bottom_l + (src[b, bt, rgt] - bottom_l) * x_lerp
    return upper + (lower - upper) * y_lerp


@torch_kernel(kn.CropAndResize)
def crop_and_resize(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Crops of ``image`` at normalized ``boxes`` resized to ``crop_size``; float32.

    Samples outside the image get ``extrapolation_value``; boxes whose index is outside
    ``[0, batch)`` give zeros. The (small) box coordinates are worked out on the host.
    """
    image, boxes, box_ind = inputs
    bx = host(backend, boxes).astype(np.float64)
    ind = host(backend, box_ind).astype(np.int64)
    batch, height, width, channels = image.shape
    crop_h, crop_w = attrs["crop_size"]
    extrapolation = float(attrs.get("extrapolation_value", 0.0))
    n = bx.shape[0]
    shape = (n, crop_h, crop_w, channels)
    if n * crop_h * crop_w * channels == 0:
        return out(backend, torch.zeros(shape, dtype=F(), device=backend.device), "float32", shape)
    y = crop_coords(bx[:, 0], bx[:, 2], height, crop_h)  # (n, crop_h)
    x = crop_coords(bx[:, 1], bx[:, 3], width, crop_w)  # (n, crop_w)
    outside = ((y < 0) | (y > height - 1))[:, :, None] | ((x < 0) | (x > width - 1))[:, None, :]
    unknown = np.isnan(y)[:, :, None] | np.isnan(x)[:, None, :]
    good_box = (ind >= 0) & (ind < batch)
    if image.size == 0 or not good_box.any():
        result = torch.zeros(shape, dtype=torch.float64, device=backend.device)
    else:
        y = np.where(np.isnan(y) | (y < 0) | (y > height - 1), 0.0, y)
        x = np.where(np.isnan(x) | (x < 0) | (x > width - 1), 0.0, x)
        b = from_numpy(backend, np.where(good_box, ind, 0))[:, None, None]
        src = values_of(backend, image).double()
        result = _crop_sample(src, b, y, x, attrs.get("method", "bilinear"), backend)
    mask = np.where(outside, 1, np.where(unknown, 2, 0))
    mask[~good_box] = 3
    code = from_numpy(backend, mask)[..., None]
    result = torch.where(code == 2, math.nan, result)  # TF.js reads at a NaN index
    result = torch.where(code == 1, extrapolation, result)
    result = torch.where(code == 3, 0.0, result)
    return out(backend, result, "float32", shape)


@torch_kernel(kn.FlipLeftRight)
def flip_left_right(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """Mirror NHWC images horizontally."""
    (image,) = inputs
    return out(backend, torch.flip(values_of(backend, image), (2,)), image.dtype, image.shape)


def _fill_tensor(fill: float | list[float], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(fill, dtype=torch.float64, device=like.device)


@torch_kernel(kn.RotateWithOffset)
def rotate_with_offset(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Rotate NHWC images by ``radians`` about ``center`` (fractions of width and height)."""
    (image,) = inputs
    img = values_of(backend, image)
    batch, height, width, channels = image.shape
    if image.size == 0:
        return out(backend, img.new_zeros(image.shape), image.dtype, image.shape)
    rows, cols, inside = rotation_sources(height, width, attrs)
    rows, cols = from_numpy(backend, rows), from_numpy(backend, cols)
    fill = _fill_tensor(channel_fill(attrs.get("fill_value", 0), channels), img)
    picked = img[:, rows, cols].double()
    result = torch.where(from_numpy(backend, inside)[None, :, :, None], picked, fill)
    return out(backend, result, image.dtype, image.shape)


# ----------------------------------------------------------------------------- transform


def _map_coord(c: torch.Tensor, n: int, mode: str) -> torch.Tensor:
    if mode == "constant":
        return c
    c = fold_coord(c, n, mode, torch)
    return torch.clamp(c, max=n - 1).clamp(min=0.0)  # TF.js's clamp(0, c, n - 1)


class _Reader:
    """Reads pixels at integer coordinates, ``fill`` outside the image (or at NaN coordinates)."""

    def __init__(self, img: torch.Tensor, fill: float) -> None:
        self.img, self.fill = img, fill
        self.h, self.w = img.shape[1], img.shape[2]
        self.b = torch.arange(img.shape[0], device=img.device)[:, None, None]

    def __call__(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        inside = (y >= 0) & (y < self.h) & (x >= 0) & (x < self.w)
        if self.h * self.w == 0:
            return torch.full((*inside.shape, self.img.shape[3]), self.fill, dtype=self.img.dtype, device=y.device)
        rows = torch.where(inside, y, 0.0).long()
        cols = torch.where(inside, x, 0.0).long()
        return torch.where(inside[..., None], self.img[self.b, rows, cols], self.fill)


@torch_kernel(kn.Transform)
def transform(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Projective transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]`` (output -> input) of NHWC images."""
    image, transforms = inputs
    batch, height, width, channels = image.shape
    out_h, out_w = attrs.get("output_shape") or (height, width)
    shape = (batch, out_h, out_w, channels)
    fill = float(np.float32(attrs.get("fill_value", 0)))
    if batch * out_h * out_w * channels == 0:
        return out(backend, torch.full(shape, fill, dtype=torch.float64, device=backend.device), image.dtype, shape)
    img = values_of(backend, image).double()
    t = values_of(backend, transforms).double().expand(batch, 8)[:, :, None, None]  # one row for all, or one each
    x = torch.arange(out_w, dtype=torch.float64, device=img.device)[None, None, :]
    y = torch.arange(out_h, dtype=torch.float64, device=img.device)[None, :, None]
    projection = t[:, 6] * x + t[:, 7] * y + 1
    in_x = (t[:, 0] * x + t[:, 1] * y + t[:, 2]) / projection
    in_y = (t[:, 3] * x + t[:, 4] * y + t[:, 5]) / projection
    mode = attrs.get("fill_mode", "constant")
    in_x, in_y = _map_coord(in_x, width, mode), _map_coord(in_y, height, mode)
    read = _Reader(img, fill)
    if attrs.get("interpolation", "nearest") == "nearest":
        result = read(js_round(in_y), js_round(in_x))
    else:
        y0, x0 = torch.floor(in_y), torch.floor(in_x)
        y1, x1 = y0 + 1, x0 + 1
        xa, xb = (x1 - in_x)[..., None], (in_x - x0)[..., None]
        upper = xa * read(y0, x0) + xb * read(y0, x1)
        lower = xa * read(y1, x0) + xb * read(y1, x1)
        result = (y1 - in_y)[..., None] * upper + (in_y - y0)[..., None] * lower
    result = torch.where((projection == 0)[..., None], fill, result)
    return out(backend, result, image.dtype, shape)
