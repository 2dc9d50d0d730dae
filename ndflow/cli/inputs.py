"""How ``ndflow predict`` reads an ``--input`` file into a model input: an ``.npy`` array as it is, an image
with the channels, size and value range that ``--channels``, ``--resize`` and ``--scale`` choose.

A PNG, JPEG, BMP or GIF (its first frame) is decoded by ``nf.node.decode_image`` (tfjs-node's decoders: the
grayscale of a colour image is its luma, alpha is dropped without compositing); any other format Pillow
reads goes through ``nf.browser.from_pixels`` (RGBA, as a canvas) and is converted from there.

The defaults (``auto``, ``stretch``, ``auto``): as many channels as the model's input has (1: grayscale,
3: RGB, 4: RGBA; RGB when it does not say), the model's height and width (an unknown one follows the image's
aspect ratio; both unknown: the image's size), floats in [0, 1] and integer inputs 0..255. An input the
model's shape cannot take is a ``CliError`` naming both shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .common import FAILURE, CliError

#: Image modes by channel count.
CHANNELS = {1: "L", 3: "RGB", 4: "RGBA"}
#: ``--scale`` values: the range that pixel values 0..255 are mapped onto (float inputs).
SCALES = ("0-1", "-1-1", "0-255")
#: ``--resize`` values.
RESIZES = ("stretch", "crop", "pad", "none")
INT_DTYPES = ("int32", "uint8", "int64")


@dataclass(frozen=True)
class ImageOptions:
    """How an image becomes an input: ``channels`` (1, 3, 4; None: from the model's input), ``scale`` (one of
    ``SCALES``; None: 0-1 for floats, 0..255 for integer inputs), ``resize`` (one of ``RESIZES``)."""

    channels: int | None = None
    scale: str | None = None
    resize: str = "stretch"


def format_shape(shape: Sequence[int | None] | None) -> str:
    """A shape as the messages print it: unknown dims are -1, an unknown rank is ``[?]``."""
    if shape is None:
        return "[?]"
    return "[" + ", ".join("-1" if d is None or d < 0 else str(int(d)) for d in shape) + "]"


def fits(shape: Sequence[int], model_shape: Sequence[int | None] | None) -> bool:
    """Whether an array of ``shape`` can feed an input of ``model_shape`` (-1 or None: any size)."""
    if model_shape is None:
        return True
    return len(shape) == len(model_shape) and all(
        m is None or m < 0 or m == d for d, m in zip(shape, model_shape, strict=True)
    )


def load_array(path: str, name: str, shape: Sequence[int | None] | None, dtype: str | None) -> np.ndarray:
    """An ``.npy`` file as an input, which must fit the input's shape."""
    try:
        with open(path, "rb") as f:
            if f.read(6) != b"\x93NUMPY":
                raise CliError(f"--input {path}: not an .npy file (no NumPy header)", FAILURE)
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CliError(f"--input {path}: not a readable .npy file ({exc})", FAILURE) from None
    if arr.dtype.kind not in "biuf" and dtype != "string":
        raise CliError(f"--input {path}: an array of {arr.dtype}, and input {name!r} takes {dtype or 'numbers'}",
                       FAILURE)  # fmt: skip
    if not fits(arr.shape, shape):
        hint = " (add a batch dimension of 1?)" if shape is not None and arr.ndim == len(shape) - 1 else ""
        raise CliError(f"--input {path}: an array of shape {format_shape(arr.shape)} does not fit input {name!r} "
                       f"of shape {format_shape(shape)}{hint}", FAILURE)  # fmt: skip
    return arr


def _pillow(path: str) -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise CliError(f"--input {path}: reading an image needs Pillow (pip install 'ndflow[image]'); "
                       "or pass the input as an .npy file", FAILURE) from None  # fmt: skip
    return Image


def image_layout(shape: Sequence[int | None] | None) -> tuple[bool, int | None, int | None, int | None] | None:
    """``(batched, height, width, channels)`` of an image input (None for an unknown size); None when the
    shape is no image's: ``[batch, height, width, channels]`` or ``[height, width, channels]``."""
    if shape is None:
        return True, None, None, None
    dims = [d if d is not None and d > 0 else None for d in shape]
    if len(dims) == 4:
        return True, dims[1], dims[2], dims[3]
    if len(dims) == 3:
        return False, dims[0], dims[1], dims[2]
    return None


def _target(height: int | None, width: int | None, size: tuple[int, int]) -> tuple[int, int]:
    """(width, height) to resize to: the model's, an unknown one following the image's aspect ratio."""
    w0, h0 = size
    if height is None and width is None:
        return w0, h0
    if height is None:
        height = max(1, round(h0 * width / w0))
    if width is None:
        width = max(1, round(w0 * height / h0))
    return width, height


def resize(img: Any, height: int | None, width: int | None, mode: str) -> Any:
    """``img`` resized for an input of ``height`` x ``width`` (None: unknown) as ``--resize mode`` says."""
    tw, th = _target(height, width, img.size)
    if mode == "none" or (tw, th) == img.size:
        return img
    if mode == "stretch":
        return img.resize((tw, th))
    w0, h0 = img.size
    if mode == "crop":  # cover the target, keep the aspect ratio, cut the overhang evenly
        s = max(tw / w0, th / h0)
        nw, nh = max(tw, round(w0 * s)), max(th, round(h0 * s))
        left, top = (nw - tw) // 2, (nh - th) // 2
        return img.resize((nw, nh)).crop((left, top, left + tw, top + th))
    if mode != "pad":
        raise ValueError(f"resize: mode must be one of {', '.join(RESIZES)}, got {mode!r}")
    s = min(tw / w0, th / h0)  # fit inside the target, keep the aspect ratio, black borders
    nw, nh = min(tw, max(1, round(w0 * s))), min(th, max(1, round(h0 * s)))
    from PIL import Image  # there is an image, so there is Pillow

    canvas = Image.new(img.mode, (tw, th))
    canvas.paste(img.resize((nw, nh)), ((tw - nw) // 2, (th - nh) // 2))
    return canvas


def read_image(path: str, channels: int | None = None) -> Any:
    """The image file ``path`` as a Pillow image of 1 (L), 2 (LA), 3 (RGB) or 4 (RGBA) channels, ``channels``
    (1, 3, 4) where the decoder gives them directly, else as stored. Needs Pillow."""
    from ..browser import from_pixels
    from ..node import decode_image, image_type

    image = _pillow(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CliError(f"--input {path}: cannot read the file ({exc})", FAILURE) from None
    fmt = image_type(data)
    decode_channels = 0
    if fmt == "PNG" or (fmt == "JPEG" and channels in (1, 3)):
        decode_channels = channels or 0
    try:
        if fmt is not None:
            t = decode_image(data, decode_channels, expand_animations=False)
        else:
            with image.open(path) as opened:
                opened.load()
                t = from_pixels(opened, 4)
    except (OSError, ValueError, image.DecompressionBombError) as exc:  # UnidentifiedImageError is an OSError
        raise CliError(f"--input {path}: not a readable image ({exc})", FAILURE) from None
    try:
        arr = t.numpy().astype(np.uint8)
    finally:
        t.dispose()
    return image.fromarray(arr[..., 0] if arr.shape[2] == 1 else arr, {**CHANNELS, 2: "LA"}[arr.shape[2]])


def _scaled(arr: np.ndarray, dtype: str | None, scale: str | None, name: str) -> np.ndarray:
    if dtype in INT_DTYPES:
        if scale not in (None, "0-255"):
            raise CliError(f"--scale {scale}: input {name!r} is {dtype}, which takes the pixel values 0..255 "
                           "(--scale 0-255)")  # fmt: skip
        return arr.astype(np.int32)
    x = arr.astype(np.float32)
    if scale in (None, "0-1"):
        return (x / 255.0).astype(np.float32)
    if scale == "-1-1":
        return (x / np.float32(127.5) - np.float32(1.0)).astype(np.float32)
    return x


def load_image(
    path: str,
    shape: Sequence[int | None] | None,
    dtype: str | None,
    options: ImageOptions | None = None,
    name: str = "input",
) -> np.ndarray:
    """An image file as input ``name`` of ``shape`` and ``dtype`` (see the module's doc). Needs Pillow."""
    options = options or ImageOptions()
    _pillow(path)
    layout = image_layout(shape)
    if layout is None:
        img = read_image(path)
        raise CliError(f"--input {path}: a {img.width}x{img.height} image does not fit input {name!r} of shape "
                       f"{format_shape(shape)}: an image input is [batch, height, width, channels] or "
                       "[height, width, channels] (pass an .npy file)", FAILURE)  # fmt: skip
    batched, height, width, channels = layout
    wanted = options.channels
    if wanted is None:
        if channels is not None and channels not in CHANNELS:
            img = read_image(path)  # a file that is no image says so first
            raise CliError(f"--input {path}: input {name!r} of shape {format_shape(shape)} has {channels} channels; "
                           "an image has 1 (grayscale), 3 (RGB) or 4 (RGBA)", FAILURE)  # fmt: skip
        wanted = channels or 3
    img = read_image(path, wanted)
    if img.mode != CHANNELS[wanted]:  # alpha is dropped, not composited
        img = img.convert(CHANNELS[wanted])
    arr = np.asarray(resize(img, height, width, options.resize))
    if arr.ndim == 2:
        arr = arr[..., None]
    if batched:
        arr = arr[None]
    if not fits(arr.shape, shape):
        raise CliError(f"--input {path}: the {img.width}x{img.height} image makes an input of shape "
                       f"{format_shape(arr.shape)} (--channels {wanted}, --resize {options.resize}), which does "
                       f"not fit input {name!r} of shape {format_shape(shape)}", FAILURE)  # fmt: skip
    return _scaled(arr, dtype, options.scale, name)


def scale_values(argv: Sequence[str]) -> list[str]:
    """``--scale -1-1`` as ``--scale=-1-1`` (argparse takes a value starting with '-' for an option)."""
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "--scale":
            value = next(it, None)
            out.extend([arg] if value is None else [f"--scale={value}"] if value in SCALES else [arg, value])
        else:
            out.append(arg)
    return out
