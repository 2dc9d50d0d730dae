"""``nf.image``: TF.js's ``tf.image`` namespace.

Images are NHWC (``[batch, height, width, channels]``; the resize ops also take one HWC image).
Resizing, cropping, flipping, rotating and projective transforms run one kernel each; colour
conversion and ``threshold`` are built from other ops, as in TF.js. Non-maximum suppression lives
in ``_image_nms`` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from ._image_nms import (
    non_max_suppression,
    non_max_suppression_async,
    non_max_suppression_padded,
    non_max_suppression_padded_async,
    non_max_suppression_with_score,
    non_max_suppression_with_score_async,
)
from .arithmetic import add, mul
from .convert import converted
from .creation import range as arange
from .creation import tensor1d
from .logical import greater, less_equal, where
from .reduction import arg_max
from .reduction import max as reduce_max
from .reduction import sum as reduce_sum
from .shape import cast, reshape
from .slicing import concat
from .slicing import slice as slice_

# ----------------------------------------------------------------------------- private helpers


@contextmanager
def _image(x: Any, arg: str, op: str, dtype: str = "numeric") -> Iterator[Tensor]:
    """``x`` as a tensor, checked as TF.js's ``convertToTensor(x, arg, op, dtype)``; complex is refused."""
    with converted(x, arg, op, None if dtype == "numeric" else dtype) as t:
        if dtype == "numeric":
            if t.dtype in ("string", "complex64"):
                raise TypeError(f"{op}: argument '{arg}' must be a real numeric tensor, got a {t.dtype} tensor")
        elif t.dtype != dtype:
            raise TypeError(f"{op}: argument '{arg}' must be a {dtype} tensor, got a {t.dtype} tensor")
        yield t


def _rank(t: Tensor, ranks: Sequence[int], arg: str, op: str) -> None:
    if t.rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{op}: argument '{arg}' must be rank {want}, got rank {t.rank} (shape {list(t.shape)})")


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


def _size2(value: Any, arg: str, op: str, minimum: int = 0) -> tuple[int, int]:
    """``[height, width]``: two ints >= ``minimum``."""
    if isinstance(value, Tensor) or not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{op}: argument '{arg}' must be [height, width], got {value!r}")
    if not all(_is_int(v) for v in value):
        raise TypeError(f"{op}: argument '{arg}' must hold two ints, got {list(value)}")
    if any(v < minimum for v in value):
        raise ValueError(f"{op}: argument '{arg}' must hold ints >= {minimum}, got {list(value)}")
    return int(value[0]), int(value[1])


def _number(value: Any, arg: str, op: str) -> float:
    if not _is_number(value):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {value!r}")
    return float(value)


def _choice(value: Any, choices: Sequence[str], arg: str, op: str) -> str:
    if value not in choices:
        raise ValueError(f"{op}: argument '{arg}' must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


# ----------------------------------------------------------------------------- resizing


def _resize(kernel: str, op: str, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool) -> Tensor:
    with _image(images, "images", op) as t:
        if kernel == kn.ResizeNearestNeighbor and t.dtype not in ("float32", "int32"):
            raise TypeError(f"{op}: argument 'images' must be a float32 or int32 tensor, got a {t.dtype} tensor")
        _rank(t, (3, 4), "images", op)
        new_h, new_w = _size2(size, "size", op)
        if half_pixel_centers and align_corners:
            raise ValueError(f"{op}: 'half_pixel_centers' and 'align_corners' cannot both be true")
        batch, height, width, channels = (1, *t.shape) if t.rank == 3 else t.shape
        if batch * new_h * new_w * channels > 0 and height * width == 0:
            raise ValueError(f"{op}: cannot resize an empty image of shape {list(t.shape)} to [{new_h}, {new_w}]")
        attrs = {
            "size": (new_h, new_w),
            "align_corners": bool(align_corners),
            "half_pixel_centers": bool(half_pixel_centers),
        }
        if t.rank == 4:
            return ENGINE.run_kernel(kernel, (t,), attrs)

        def batched() -> Tensor:
            return reshape(ENGINE.run_kernel(kernel, (reshape(t, [1, *t.shape]),), attrs), [new_h, new_w, channels])

        return ENGINE.tidy(None, batched, (), {})


def resize_bilinear(
    images: TensorLike, size: Sequence[int], align_corners: bool = False, half_pixel_centers: bool = False
) -> Tensor:
    """Bilinear resize of an image (HWC) or a batch (NHWC) to ``size = [height, width]``; float32."""
    return _resize(kn.ResizeBilinear, "resize_bilinear", images, size, align_corners, half_pixel_centers)


def resize_nearest_neighbor(
    images: TensorLike, size: Sequence[int], align_corners: bool = False, half_pixel_centers: bool = False
) -> Tensor:
    """Nearest-neighbour resize of an image (HWC) or a batch (NHWC) of float32 or int32 to ``size``."""
    return _resize(kn.ResizeNearestNeighbor, "resize_nearest_neighbor", images, size, align_corners, half_pixel_centers)


# ----------------------------------------------------------------------------- crop, flip, rotate, transform


def crop_and_resize(
    image: TensorLike,
    boxes: TensorLike,
    box_ind: TensorLike,
    crop_size: Sequence[int],
    method: str = "bilinear",
    extrapolation_value: float = 0,
) -> Tensor:
    """Crop normalized ``boxes`` ``[y1, x1, y2, x2]`` out of images ``box_ind`` and resize them to ``crop_size``.

    Returns float32 ``[num_boxes, crop_height, crop_width, channels]``; samples outside the image are
    ``extrapolation_value``, boxes whose index is outside ``[0, batch)`` are zeros.
    """
    op = "crop_and_resize"
    with (
        _image(image, "image", op) as img,
        _image(boxes, "boxes", op, "float32") as bx,
        _image(box_ind, "box_ind", op, "int32") as ind,
    ):
        _rank(img, (4,), "image", op)
        if bx.rank != 2 or bx.shape[1] != 4:
            raise ValueError(f"{op}: argument 'boxes' must have shape [num_boxes, 4], got {list(bx.shape)}")
        if ind.rank != 1 or ind.shape[0] != bx.shape[0]:
            raise ValueError(
                f"{op}: argument 'box_ind' must have shape [{bx.shape[0]}] (one per box), got {list(ind.shape)}"
            )
        size = _size2(crop_size, "crop_size", op, minimum=1)
        method = _choice(method, ("bilinear", "nearest"), "method", op)
        attrs = {
            "crop_size": size,
            "method": method,
            "extrapolation_value": _number(extrapolation_value, "extrapolation_value", op),
        }
        return ENGINE.run_kernel(kn.CropAndResize, (img, bx, ind), attrs)


def flip_left_right(image: TensorLike) -> Tensor:
    """Mirror a batch of float32 images (NHWC) horizontally."""
    with _image(image, "image", "flip_left_right", "float32") as t:
        _rank(t, (4,), "image", "flip_left_right")
        return ENGINE.run_kernel(kn.FlipLeftRight, (t,), {})


def rotate_with_offset(
    image: TensorLike, radians: float, fill_value: float | Sequence[float] = 0, center: float | Sequence[float] = 0.5
) -> Tensor:
    """Rotate float32 images (NHWC) by ``radians`` about ``center`` (fractions of width, height).

    Pixels rotated in from outside get ``fill_value``: a number, or one value per channel (an
    alpha channel, channel 3, is filled with 255, as in TF.js).
    """
    op = "rotate_with_offset"
    with _image(image, "image", op, "float32") as t:
        _rank(t, (4,), "image", op)
        radians = _number(radians, "radians", op)
        channels = t.shape[3]
        if isinstance(fill_value, list | tuple | np.ndarray):
            fill = [_number(v, "fill_value", op) for v in fill_value]
            needed = max((c for c in range(channels) if c != 3), default=-1) + 1
            if len(fill) < needed:
                raise ValueError(
                    f"{op}: argument 'fill_value' has {len(fill)} values, but the image has {channels} channels "
                    f"(channel 3 is filled with 255; the others need a value each)"
                )
        else:
            fill = _number(fill_value, "fill_value", op)
        if isinstance(center, list | tuple | np.ndarray):
            if len(center) != 2:
                raise ValueError(f"{op}: argument 'center' must be a number or [x, y], got {list(center)}")
            middle: float | list[float] = [_number(v, "center", op) for v in center]
        else:
            middle = _number(center, "center", op)
        attrs = {"radians": radians, "fill_value": fill, "center": middle}
        return ENGINE.run_kernel(kn.RotateWithOffset, (t,), attrs)


def transform(
    image: TensorLike,
    transforms: TensorLike,
    interpolation: str = "nearest",
    fill_mode: str = "constant",
    fill_value: float = 0,
    output_shape: Sequence[int] | None = None,
) -> Tensor:
    """Apply projective transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]`` to float32 images (NHWC).

    Each maps an output pixel ``(x, y)`` to the input pixel
    ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)`` with ``k = c0 x + c1 y + 1``;
    ``transforms`` has one row for every image or one for all.
    """
    op = "transform"
    with _image(image, "image", op, "float32") as t, _image(transforms, "transforms", op, "float32") as tr:
        _rank(t, (4,), "image", op)
        if tr.rank != 2 or tr.shape[0] not in (t.shape[0], 1) or tr.shape[1] != 8:
            raise ValueError(
                f"{op}: argument 'transforms' must have shape [{t.shape[0]}, 8] or [1, 8], got {list(tr.shape)}"
            )
        attrs = {
            "interpolation": _choice(interpolation, ("nearest", "bilinear"), "interpolation", op),
            "fill_mode": _choice(fill_mode, ("constant", "reflect", "wrap", "nearest"), "fill_mode", op),
            "fill_value": _number(fill_value, "fill_value", op),
            "output_shape": None if output_shape is None else _size2(output_shape, "output_shape", op),
        }
        return ENGINE.run_kernel(kn.Transform, (t, tr), attrs)


# ----------------------------------------------------------------------------- colour


def grayscale_to_rgb(image: TensorLike) -> Tensor:
    """Repeat the single channel (last axis, size 1) of grayscale images three times."""
    op = "grayscale_to_rgb"
    with converted(image, "image", op) as t:
        if t.dtype == "string":
            raise TypeError(f"{op}: argument 'image' must be a numeric tensor, got a string tensor")
        if t.rank < 2:
            raise ValueError(f"{op}: argument 'image' must be at least rank 2, got rank {t.rank}")
        if t.shape[-1] != 1:
            raise ValueError(f"{op}: the last dimension of a grayscale image must be 1, got shape {list(t.shape)}")
        return concat([t, t, t], t.rank - 1)


_LUMA = (0.2989, 0.5870, 0.1140)  # CCIR 601 luma weights, as TF.js


def rgb_to_grayscale(image: TensorLike) -> Tensor:
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B`` of RGB images (last axis, size 3), in the input's dtype."""
    op = "rgb_to_grayscale"
    with _image(image, "image", op) as t:
        if not 2 <= t.rank <= 6:
            raise ValueError(f"{op}: argument 'image' must be rank 2 to 6, got rank {t.rank}")
        if t.shape[-1] != 3:
            raise ValueError(f"{op}: the last dimension of an RGB image must be 3, got shape {list(t.shape)}")

        def gray() -> Tensor:
            weighted = mul(cast(t, "float32"), tensor1d(list(_LUMA)))
            return cast(reduce_sum(weighted, -1, True), t.dtype)

        return ENGINE.tidy(None, gray, (), {})


def _package_op(name: str, op: str) -> Any:
    """An op of another family, looked up when first needed (families import in any order)."""
    from .. import ops

    fn = getattr(ops, name, None)
    if fn is None:
        raise NotImplementedError(f"{op}: needs nf.{name}, which this build of ndflow lacks")
    return fn


def _otsu(gray: Tensor, total: int) -> Tensor:
    """Otsu's threshold ``[t]`` of a grayscale image: the first level that maximizes the between-class variance.

    Vectorised form of TF.js's per-level loop: class weights and means for every split at once
    from cumulative sums of the 256-bin histogram; -1 when no split separates two classes.
    """
    round_, bincount, cumsum = (_package_op(n, "threshold") for n in ("round", "bincount", "cumsum"))
    hist = bincount(cast(round_(gray), "int32"), tensor1d([], "float32"), 256)
    levels = mul(hist, arange(0, 256))
    count_lo = slice_(cumsum(hist), [0], [255])  # pixels in levels 0..k, for k = 0..254
    count_hi = slice_(cumsum(hist, 0, False, True), [1], [255])  # pixels in levels k+1..255
    mean_lo = slice_(cumsum(levels), [0], [255]) / count_lo
    mean_hi = slice_(cumsum(levels, 0, False, True), [1], [255]) / count_hi
    gap = mean_lo - mean_hi
    variance = (count_lo / total) * (count_hi / total) * gap * gap
    variance = where(greater(variance, 0), variance, 0.0)  # NaN (an empty class) never wins
    best = reduce_max(variance)
    first = arg_max(variance)
    return reshape(where(greater(best, 0), cast(first, "float32"), -1.0), [1])


def threshold(image: TensorLike, method: str = "binary", inverted: bool = False, thresh_value: float = 0.5) -> Tensor:
    """Binarize an image (HW1 grayscale or HW3 RGB) to 0 or 255 (int32).

    ``method='binary'`` cuts at ``thresh_value * 255``; ``'otsu'`` picks the cut from the histogram.
    ``inverted`` swaps the two sides.
    """
    op = "threshold"
    with converted(image, "image", op) as t:
        _rank(t, (3,), "image", op)
        if t.shape[2] not in (1, 3):
            raise ValueError(f"{op}: the image must have 1 or 3 colour channels, got shape {list(t.shape)}")
        if t.dtype not in ("int32", "float32"):
            raise TypeError(f"{op}: argument 'image' must be an int32 or float32 tensor, got a {t.dtype} tensor")
        method = _choice(method, ("binary", "otsu"), "method", op)
        level = _number(thresh_value, "thresh_value", op)

        def run() -> Tensor:
            if t.shape[2] == 3:
                r, g, b = (slice_(t, [0, 0, c], [-1, -1, 1]) for c in range(3))
                gray = add(add(mul(r, _LUMA[0]), mul(g, _LUMA[1])), mul(b, _LUMA[2]))
            else:
                gray = t
            if method == "otsu":
                cut = _otsu(gray, t.shape[0] * t.shape[1])
            else:
                cut = mul(tensor1d([level]), 255)
            side = less_equal(gray, cut) if inverted else greater(gray, cut)
            return cast(mul(side, 255), "int32")

        return ENGINE.tidy(None, run, (), {})


__all__ = [
    "resize_bilinear",
    "resize_nearest_neighbor",
    "crop_and_resize",
    "flip_left_right",
    "rotate_with_offset",
    "transform",
    "grayscale_to_rgb",
    "rgb_to_grayscale",
    "threshold",
    "non_max_suppression",
    "non_max_suppression_async",
    "non_max_suppression_with_score",
    "non_max_suppression_with_score_async",
    "non_max_suppression_padded",
    "non_max_suppression_padded_async",
]

CHAINED = [resize_bilinear, resize_nearest_neighbor]  # also Tensor methods, as in TF.js's chain API
