"""Image-kernel helpers shared by the backends: the source indexes and fractions of a resize, the sample
coordinates of CropAndResize, the sources and fill of a rotation, and the coordinate folding of Transform (generic
over the array module: numpy or torch). ``js_round`` is JavaScript's ``Math.round`` (halves go up), which TF.js
uses."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np


def js_round(x: np.ndarray) -> np.ndarray:
    """``Math.round``: the nearest integer, halves rounded towards +Infinity."""
    return np.floor(x + 0.5)


def ratio(in_size: int, out_size: int, align_corners: bool) -> float:
    """Input pixels per output pixel (TF.js's ``effectiveInputSize / effectiveOutputSize``)."""
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size if out_size else 0.0


@lru_cache(maxsize=256)
def bilinear_axis(
    in_size: int, out_size: int, align_corners: bool, half_pixel: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each output index along one axis: the lower and upper source index and the fraction.

    Kept per arguments (a model resizes the same shapes on every run); the arrays are read-only."""
    r = ratio(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float64)
    src = r * (i + 0.5) - 0.5 if half_pixel else r * i
    lo = np.maximum(0.0, np.floor(src))
    hi = np.minimum(in_size - 1, np.ceil(src))
    tables = lo.astype(np.intp), hi.astype(np.intp), src - lo
    for t in tables:
        t.flags.writeable = False
    return tables


def nearest_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """For each output index along one axis: the source index it copies."""
    r = ratio(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float64)
    src = r * (i + 0.5) if half_pixel else r * i
    idx = np.minimum(in_size - 1, js_round(src) if align_corners else np.floor(src))
    if half_pixel:
        idx = np.maximum(0.0, idx)
    return idx.astype(np.intp)


def resize_attrs(attrs: dict) -> tuple[bool, bool]:
    """``(align_corners, half_pixel_centers)`` of a resize kernel's attributes."""
    return bool(attrs.get("align_corners", False)), bool(attrs.get("half_pixel_centers", False))


def crop_coords(start: np.ndarray, end: np.ndarray, size: int, crop: int) -> np.ndarray:
    """Source coordinates (in pixels) of the ``crop`` samples of each box along one axis."""
    if crop > 1:
        scale = (end - start) * (size - 1) / (crop - 1)
        return start[:, None] * (size - 1) + np.arange(crop, dtype=np.float64)[None, :] * scale[:, None]
    return (0.5 * (start + end) * (size - 1))[:, None]


def channel_fill(fill_value: object, channels: int) -> float | list[float]:
    """``fill_value`` as TF.js applies it: a number everywhere, or per channel with alpha (channel 3) 255."""
    if isinstance(fill_value, int | float):
        return float(fill_value)
    return [255.0 if c == 3 else float(fill_value[c]) for c in range(channels)]  # type: ignore[index]


def rotation_sources(height: int, width: int, attrs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, inside)`` of RotateWithOffset: for each output pixel, the (rounded) source pixel of a
    rotation by ``attrs["radians"]`` about ``attrs["center"]`` (fractions of width and height), as int64 indexes
    (0 where the source falls outside), and whether it falls inside the image."""
    center = attrs.get("center", 0.5)
    cx = width * (center if isinstance(center, int | float) else center[0])
    cy = height * (center if isinstance(center, int | float) else center[1])
    radians = float(attrs["radians"])
    sin, cos = math.sin(radians), math.cos(radians)
    x = np.arange(width, dtype=np.float64)[None, :]
    y = np.arange(height, dtype=np.float64)[:, None]
    src_x = js_round((x - cx) * cos - (y - cy) * sin + cx)
    src_y = js_round((x - cx) * sin + (y - cy) * cos + cy)
    inside = (src_x >= 0) & (src_x < width) & (src_y >= 0) & (src_y < height)
    rows = np.where(inside, src_y, 0).astype(np.int64)
    cols = np.where(inside, src_x, 0).astype(np.int64)
    return rows, cols, inside


def reflect(c: Any, n: int, xp: Any) -> Any:
    """Reflect ``[abcd]`` to ``[dcba|abcd|dcba]`` (``xp``: the array module of ``c``, numpy or torch)."""
    if n <= 1:
        return xp.where((c < 0) | (c > n - 1), 0.0, c)
    period = 2 * n
    below = period * xp.trunc(-c / period) + c
    below = xp.where(below < -n, below + period, -below - 1)
    above = c - period * xp.trunc(c / period)
    above = xp.where(above >= n, period - above - 1, above)
    return xp.where(c < 0, below, xp.where(c > n - 1, above, c))


def wrap(c: Any, n: int, xp: Any) -> Any:
    """Wrap ``[abcd]`` to ``[abcd|abcd|abcd]`` (TF.js's arithmetic, kept as it is; ``xp`` as in :func:`reflect`)."""
    if n <= 1:
        return xp.where((c < 0) | (c > n - 1), 0.0, c)
    below = c + n * (xp.trunc(-c / (n - 1)) + 1)
    above = c - n * xp.trunc(c / (n - 1))
    return xp.where(c < 0, below, xp.where(c > n - 1, above, c))


def fold_coord(c: Any, n: int, mode: str, xp: Any) -> Any:
    """Transform's ``fill_mode`` applied to source coordinates ``c`` along an axis of ``n`` pixels, before TF.js's
    clamp to ``[0, n - 1]`` (which the caller applies, except in ``'constant'`` mode)."""
    if mode == "reflect":
        return reflect(c, n, xp)
    if mode == "wrap":
        return wrap(c, n, xp)
    return c
