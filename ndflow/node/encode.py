"""tfjs-node's image encoders (``tf.node.encodePng``, ``encodeJpeg``) on Pillow. The image is a 3D tensor
(or array) [height, width, channels] of int32 or uint8 values in 0..255; the result is the file's bytes, an
:class:`EncodedImage` that ``await`` also accepts (tfjs-node returns a Promise)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from .common import EncodedImage, pillow

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
_DENSITY_UNITS = {"in": 1, "inch": 1, "cm": 2, "centimeter": 2}


def _pixels(image: Any, fn: str, channels: tuple[int, ...]) -> np.ndarray:
    """``image`` as uint8 [height, width, channels], or a ValueError/TypeError naming ``fn`` and ``image``."""
    if isinstance(image, Tensor):
        if image.dtype != "int32":
            raise TypeError(f"{fn}: image must be an int32 tensor of values 0..255, got a {image.dtype} tensor "
                            "(cast it: img.round().clip_by_value(0, 255).to_int())")  # fmt: skip
        arr = image.numpy()
    else:
        arr = np.asarray(image)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{fn}: image must hold integers 0..255 (int32 or uint8), got {arr.dtype}")
    if arr.ndim != 3:
        raise ValueError(f"{fn}: image must be 3D [height, width, channels], got shape {list(arr.shape)}")
    if arr.shape[2] not in channels:
        raise ValueError(f"{fn}: image must have {' or '.join(map(str, channels))} channels, got shape "
                         f"{list(arr.shape)}")  # fmt: skip
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"{fn}: image values must be in 0..255, got {arr.min()}..{arr.max()}")
    if 0 in arr.shape[:2]:
        raise ValueError(f"{fn}: image must not be empty, got shape {list(arr.shape)}")
    return arr.astype(np.uint8)


def _pil(arr: np.ndarray, fn: str) -> Any:
    channels = arr.shape[2]
    return pillow(fn).fromarray(arr[..., 0] if channels == 1 else arr, _MODES[channels])


def encode_png(image: Any, compression: int = 1) -> EncodedImage:
    """Encode ``image`` (int32/uint8 [height, width, 1-4 channels], values 0..255) as a PNG file.

    ``compression``: zlib level 0 (none) .. 9 (smallest), -1 zlib's default; tfjs-node's default is 1."""
    arr = _pixels(image, "encode_png", (1, 2, 3, 4))
    if isinstance(compression, bool) or not isinstance(compression, int) or not -1 <= compression <= 9:
        raise ValueError(f"encode_png: compression must be an int in -1..9, got {compression!r}")
    out = io.BytesIO()
    _pil(arr, "encode_png").save(out, "PNG", compress_level=6 if compression == -1 else compression)
    return EncodedImage(out.getvalue())


def encode_jpeg(
    image: Any,
    format: str = "",
    quality: int = 95,
    progressive: bool = False,
    optimize_size: bool = False,
    chroma_downsampling: bool = True,
    density_unit: str = "in",
    x_density: int = 300,
    y_density: int = 300,
    xmp_metadata: str = "",
) -> EncodedImage:
    """Encode ``image`` (int32/uint8 [height, width, 1 or 3 channels], values 0..255) as a JPEG file.

    ``format``: '' by the channels, 'grayscale' (1 channel), 'rgb' (3). ``quality`` 0..100. ``progressive``,
    ``optimize_size`` (optimal Huffman tables), ``chroma_downsampling`` (4:2:0, else 4:4:4). The density
    (``x_density``, ``y_density`` per ``density_unit`` 'in' or 'cm') and ``xmp_metadata`` go to the header."""
    fn = "encode_jpeg"
    wanted = {"": (1, 3), "grayscale": (1,), "rgb": (3,)}
    if format not in wanted:
        raise ValueError(f"{fn}: format must be '', 'grayscale' or 'rgb', got {format!r}")
    arr = _pixels(image, fn, wanted[format])
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 100:
        raise ValueError(f"{fn}: quality must be an int in 0..100, got {quality!r}")
    if density_unit not in _DENSITY_UNITS:
        raise ValueError(f"{fn}: density_unit must be 'in' or 'cm', got {density_unit!r}")
    for name, value in (("x_density", x_density), ("y_density", y_density)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
            raise ValueError(f"{fn}: {name} must be an int in 0..65535, got {value!r}")
    options: dict[str, Any] = {
        "quality": quality,
        "progressive": bool(progressive),
        "optimize": bool(optimize_size),
        "subsampling": 2 if chroma_downsampling else 0,
        "dpi": (x_density, y_density),
    }
    if xmp_metadata:
        options["xmp"] = xmp_metadata.encode("utf-8")
    out = io.BytesIO()
    _pil(arr, fn).save(out, "JPEG", **options)
    data = out.getvalue()
    if _DENSITY_UNITS[density_unit] == 2:  # Pillow writes inches: set the JFIF unit byte to centimetres
        data = _jfif_unit(data, 2)
    return EncodedImage(data)


def _jfif_unit(data: bytes, unit: int) -> bytes:
    """``data`` with the JFIF APP0 density unit byte set to ``unit`` (the densities are kept as given)."""
    at = data.find(b"JFIF\x00", 2, 64)
    if at < 0:
        return data
    pos = at + 7  # "JFIF\0", version (2 bytes), then the unit
    return data[:pos] + bytes([unit]) + data[pos + 1 :]
