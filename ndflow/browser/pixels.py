"""``tf.browser.fromPixels`` and ``toPixels`` for Python: the canvas is a numpy array, a Pillow image or an
image file.

TF.js reads every source as a canvas's RGBA bytes and keeps the first ``numChannels`` of each pixel; a
grayscale source is drawn as gray RGB, a source without alpha gets alpha 255. ``to_pixels`` turns a tensor
into those RGBA bytes again, with TF.js's checks and rounding.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..ops.creation import tensor


def _pillow(fn: str) -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{fn} needs Pillow for images and image files: pip install 'ndflow[image]'") from None
    return Image


def _rgba_of_array(arr: np.ndarray, fn: str) -> np.ndarray:
    if arr.dtype.kind not in "biu":
        raise TypeError(f"{fn}: pixels as an array must hold integers 0..255 (uint8), got {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise ValueError(f"{fn}: pixels as an array must be [height, width] or [height, width, 1, 3 or 4 "
                         f"channels], got shape {list(arr.shape)}")  # fmt: skip
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"{fn}: pixel values must be in 0..255, got {arr.min()}..{arr.max()}")
    arr = arr.astype(np.uint8)
    h, w = arr.shape[:2]
    rgba = np.full((h, w, 4), 255, np.uint8)
    if arr.ndim == 2:
        rgba[..., :3] = arr[..., None]
    else:
        rgba[..., : arr.shape[2]] = arr
    return rgba


def _rgba_of_image(img: Any) -> np.ndarray:
    if img.mode.startswith("I;16"):
        img = img.convert("I")
    if img.mode in ("I", "F"):  # high-bit-depth gray: its 8-bit value, as a canvas shows it
        gray = np.asarray(img, dtype=np.float64)
        scale = 257.0 if gray.max(initial=0) > 255 else 1.0
        gray = np.clip(np.floor(gray / scale + 0.5), 0, 255).astype(np.uint8)
        return _rgba_of_array(gray, "from_pixels")
    return np.asarray(img.convert("RGBA"), dtype=np.uint8)


def rgba_pixels(pixels: Any, fn: str = "from_pixels") -> np.ndarray:
    """``pixels`` (array, Pillow image, image file path, or a ``{'data', 'width', 'height'}`` dict of RGBA
    bytes as TF.js's PixelData) as a uint8 RGBA array [height, width, 4]."""
    if pixels is None:
        raise ValueError(f"{fn}: pixels must not be None")
    if isinstance(pixels, dict) and {"data", "width", "height"} <= pixels.keys():
        h, w = int(pixels["height"]), int(pixels["width"])
        raw = pixels["data"]
        if isinstance(raw, bytes | bytearray | memoryview):
            data = np.frombuffer(raw, np.uint8)
        else:
            data = np.asarray(raw)
            if data.dtype.kind not in "iu" or (data.size and (data.min() < 0 or data.max() > 255)):
                raise ValueError(f"{fn}: pixels['data'] must hold RGBA bytes 0..255, got {data.dtype}")
            data = data.astype(np.uint8).reshape(-1)
        if data.size != h * w * 4:
            raise ValueError(f"{fn}: pixels['data'] must hold height*width*4 = {h * w * 4} RGBA bytes, got "
                             f"{data.size}")  # fmt: skip
        return data.reshape(h, w, 4)
    if isinstance(pixels, np.ndarray):
        return _rgba_of_array(pixels, fn)
    if isinstance(pixels, str | os.PathLike):
        image = _pillow(fn)
        try:
            with image.open(pixels) as opened:
                opened.load()
                return _rgba_of_image(opened)
        except (OSError, SyntaxError, image.DecompressionBombError) as exc:
            raise ValueError(f"{fn}: cannot read the image file {os.fspath(pixels)!r}: {exc}") from None
    if type(pixels).__module__.startswith("PIL."):
        return _rgba_of_image(pixels)
    raise TypeError(f"{fn}: pixels must be a numpy array, a PIL.Image.Image, an image file path or a "
                    f"{{'data', 'width', 'height'}} dict, got {type(pixels).__name__}")  # fmt: skip


def from_pixels(pixels: Any, num_channels: int = 3) -> Tensor:
    """An int32 tensor [height, width, num_channels] of ``pixels`` (see the module's doc for what is taken).

    As TF.js: the pixels are read as RGBA and the first ``num_channels`` kept (1: red, which is the gray value of
    a grayscale source; 3: RGB; 4: RGBA). ``num_channels`` above 4 raises as TF.js does; below 1 raises too."""
    if isinstance(num_channels, bool) or not isinstance(num_channels, int | np.integer):
        raise TypeError(f"from_pixels: num_channels must be an int, got {type(num_channels).__name__}")
    if num_channels > 4:
        raise ValueError(f"from_pixels: cannot construct a tensor with more than 4 channels from pixels "
                         f"(num_channels={num_channels})")  # fmt: skip
    if num_channels < 1:
        raise ValueError(f"from_pixels: num_channels must be 1 to 4, got {num_channels}")
    rgba = rgba_pixels(pixels)
    values = np.ascontiguousarray(rgba[..., : int(num_channels)], dtype=np.int32)
    return tensor(values, list(values.shape), "int32")


async def from_pixels_async(pixels: Any, num_channels: int = 3) -> Tensor:
    """:func:`from_pixels` as a coroutine (TF.js's ``fromPixelsAsync``)."""
    return from_pixels(pixels, num_channels)


class Pixels(np.ndarray):
    """The uint8 RGBA array [height, width, 4] of :func:`to_pixels`; ``await`` on it gives itself (TF.js's
    ``toPixels`` returns a Promise). Arithmetic on it gives plain numpy arrays."""

    def __await__(self) -> Generator[Any, None, Pixels]:
        return self
        yield  # pragma: no cover - makes this a generator

    def __array_wrap__(self, arr: np.ndarray, context: Any = None, return_scalar: bool = False) -> Any:
        out = np.asarray(arr)
        return out[()] if return_scalar else out


def _values(img: Any) -> tuple[np.ndarray, str]:
    if isinstance(img, Tensor):
        if img.dtype not in ("float32", "int32"):
            raise TypeError(f"to_pixels: unsupported dtype {img.dtype} of img; use float32 or int32 tensors")
        return img.numpy(), img.dtype
    arr = np.asarray(img)  # a native array: taken as int32, as TF.js does
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"to_pixels: img must hold numbers, got {arr.dtype}")
    if arr.dtype.kind == "f":  # TF.js casts to int32: towards zero, NaN to 0
        return np.trunc(np.nan_to_num(arr, nan=0.0, posinf=2.0**31, neginf=-(2.0**31))).astype(np.int64), "int32"
    return arr.astype(np.int64), "int32"


def to_pixels(img: Any, canvas: Any = None) -> Pixels:
    """The RGBA bytes of ``img`` as TF.js's ``toPixels`` makes them, and drawn on ``canvas`` when given.

    ``img``: rank 2 (grayscale) or 3 with 1, 3 or 4 channels; a float32 tensor's values must be in [0, 1]
    (times 255, rounded half up), an int32 tensor's in [0, 255]; a list or array is taken as int32. Gray fills
    R, G and B; a missing alpha is 255. ``canvas``: a file path (a PNG is written there) or a ``PIL.Image``
    (resized to the image and painted over).

    TF.js returns a flat ``Uint8ClampedArray`` of height*width*4 bytes; this returns them shaped
    [height, width, 4] (uint8), which is what numpy and Pillow take as an RGBA image (``.reshape(-1)`` gives
    TF.js's order). The result is also awaitable (:class:`Pixels`)."""
    values, dtype = _values(img)
    if values.ndim not in (2, 3):
        raise ValueError(f"to_pixels: only rank 2 or 3 tensors are supported, got rank {values.ndim}")
    depth = 1 if values.ndim == 2 else values.shape[2]
    if depth > 4 or depth == 2:
        raise ValueError(f"to_pixels: only a depth of 1, 3 or 4 is supported, got {depth}")
    if dtype == "float32":
        bad = (values < 0) | (values > 1)
        limits = "[0 - 1]"
    else:
        bad = (values < 0) | (values > 255)
        limits = "[0 - 255]"
    if bad.any():
        raise ValueError(f"to_pixels: values of a {dtype} tensor must be in the range {limits}, but "
                         f"encountered {values[bad].reshape(-1)[0]}")  # fmt: skip
    h, w = values.shape[:2]
    chans = values.reshape(h, w, depth).astype(np.float64)
    if dtype == "float32":
        chans = chans * 255.0
    rgba = np.zeros((h, w, 4), np.float64)
    rgba[..., 3] = 255.0
    if depth == 1:
        rgba[..., :3] = chans
    else:
        rgba[..., :depth] = chans
    with np.errstate(invalid="ignore"):
        rounded = np.floor(rgba + 0.5)  # JS Math.round; NaN stays NaN and a clamped array stores 0
    out = np.nan_to_num(rounded, nan=0.0).clip(0, 255).astype(np.uint8)
    if canvas is not None:
        _draw(out, canvas)
    return out.view(Pixels)


async def to_pixels_async(img: Any, canvas: Any = None) -> Pixels:
    """:func:`to_pixels` as a coroutine."""
    return to_pixels(img, canvas)


def _draw(rgba: np.ndarray, canvas: Any) -> None:
    image = _pillow("to_pixels")
    drawn = image.fromarray(rgba, "RGBA")
    if isinstance(canvas, str | os.PathLike):
        try:
            drawn.save(canvas, "PNG")
        except OSError as exc:
            raise ValueError(f"to_pixels: cannot write the canvas file {os.fspath(canvas)!r}: {exc}") from None
        return
    if not isinstance(canvas, image.Image):
        raise TypeError(f"to_pixels: canvas must be a file path or a PIL.Image.Image, got {type(canvas).__name__}")
    # Its pixels are replaced, as putImageData does (no blending); a Pillow image cannot change its size.
    if canvas.size != drawn.size:
        raise ValueError(f"to_pixels: the canvas image is {canvas.width}x{canvas.height} and img is "
                         f"{drawn.width}x{drawn.height}; pass an image of img's size or a file path")  # fmt: skip
    canvas.paste(drawn if canvas.mode == "RGBA" else drawn.convert(canvas.mode), (0, 0))
