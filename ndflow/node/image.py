"""tfjs-node's image decoders (``tf.node.decodeImage``, ``decodeJpeg``, ``decodePng``, ``decodeBmp``,
``decodeGif``) on Pillow: int32 tensors [height, width, channels] (GIF: [frames, height, width, 3]).

``channels`` 0 keeps the channels the file stores (PNG: gray 1, gray+alpha 2, RGB 3, RGBA 4, a palette 3 or
4 with transparency; JPEG: 1 or 3; BMP: 1, 3 or 4 by bits per pixel); 1 is grayscale, 3 RGB, 4 RGBA. Each
decoder takes its own format only, as TensorFlow's ops do; ``decode_image`` picks the decoder by the first
bytes. Grayscale from colour is Pillow's (ITU-R 601 luma; JPEG: libjpeg's own Y channel), alpha is dropped
without compositing, as libpng does.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..ops.creation import tensor
from .bmp import decode_bmp_array
from .common import BMP, GIF, JPEG, PNG, as_bytes, describe_unknown, image_type, pillow

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
_DCT_METHODS = ("", "INTEGER_FAST", "INTEGER_ACCURATE")
_TRUNCATED_LOCK = threading.Lock()


def _check_channels(fn: str, channels: Any, allowed: tuple[int, ...]) -> int:
    if isinstance(channels, bool) or not isinstance(channels, int | np.integer) or int(channels) not in allowed:
        raise ValueError(f"{fn}: channels must be one of {', '.join(map(str, allowed))} (0: as the file stores), "
                         f"got {channels!r}")  # fmt: skip
    return int(channels)


def _check_dtype(fn: str, dtype: str) -> None:
    if dtype != "int32":
        raise ValueError(f"{fn}: dtype must be 'int32' (the only image dtype tfjs-node returns), got {dtype!r}")


def _open(content: bytes, fmt: str, fn: str, truncated_ok: bool = False) -> Any:
    """The Pillow image of ``content``, which must be a ``fmt`` file; its pixels are loaded."""
    found = image_type(content)
    if found != fmt:
        what = f"a {found} image" if found else f"no {fmt} image ({describe_unknown(content)})"
        hint = f"; use decode_{found.lower()} or decode_image" if found else ""
        raise ValueError(f"{fn}: content is {what}, expected {fmt}{hint}")
    image = pillow(fn)
    try:
        img = image.open(io.BytesIO(content))
        if truncated_ok:
            from PIL import ImageFile

            with _TRUNCATED_LOCK:
                before = ImageFile.LOAD_TRUNCATED_IMAGES
                ImageFile.LOAD_TRUNCATED_IMAGES = True
                try:
                    img.load()
                finally:
                    ImageFile.LOAD_TRUNCATED_IMAGES = before
        else:
            img.load()
    except (OSError, SyntaxError, ValueError, image.DecompressionBombError) as exc:
        raise ValueError(f"{fn}: cannot decode the {fmt} image: {exc}") from None
    return img


def _int32(arr: np.ndarray) -> Tensor:
    return tensor(arr.astype(np.int32), list(arr.shape), "int32")


def _stored_png(img: Any) -> Any:
    """A PNG's pixels in the mode of the channels it stores: palettes expanded, 16 bits cut to 8."""
    mode = img.mode
    if mode == "P":
        return img.convert("RGBA" if "transparency" in img.info else "RGB")
    if mode == "1":
        return img.convert("L")
    if mode.startswith("I"):  # 16-bit gray: keep the high byte, as libpng's 16-to-8 strip does
        high = (np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8)
        return pillow("decode_png").fromarray(high, "L")
    if mode == "PA":
        return img.convert("RGBA")
    return img


def _with_channels(img: Any, channels: int) -> np.ndarray:
    """``img``'s pixels as uint8 [height, width, channels] (0: its own); alpha is dropped, not composited."""
    if channels and _MODES[channels] != img.mode:
        if channels == 1 and img.mode in ("RGBA", "LA"):
            img = img.convert("RGB" if img.mode == "RGBA" else "L")
        img = img.convert(_MODES[channels])
    arr = np.asarray(img, dtype=np.uint8)
    return arr[..., None] if arr.ndim == 2 else arr


def decode_png(content: bytes, channels: int = 0, dtype: str = "int32") -> Tensor:
    """Decode a PNG file's bytes to an int32 tensor [height, width, channels].

    ``channels``: 0 as the file stores them (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; a palette gives 3, or 4 when
    it has transparency), 1 grayscale, 3 RGB, 4 RGBA. ``dtype`` must be ``'int32'``."""
    _check_dtype("decode_png", dtype)
    channels = _check_channels("decode_png", channels, (0, 1, 3, 4))
    img = _open(as_bytes(content, "decode_png"), PNG, "decode_png")
    return _int32(_with_channels(_stored_png(img), channels))


def decode_jpeg(
    content: bytes,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1,
    dct_method: str = "",
) -> Tensor:
    """Decode a JPEG file's bytes to an int32 tensor [height, width, channels].

    ``channels``: 0 as stored (1 gray, 3 colour; a CMYK file gives RGB), 1 grayscale, 3 RGB. ``ratio`` (1, 2,
    4, 8) downscales while decoding (libjpeg's DCT scaling: ceil(size / ratio)). ``try_recover_truncated``
    decodes a cut-off file, the missing rows filled in (``acceptable_fraction`` is accepted and not measured).
    ``fancy_upscaling`` and ``dct_method`` are hints libjpeg may ignore; Pillow uses its own defaults."""
    fn = "decode_jpeg"
    channels = _check_channels(fn, channels, (0, 1, 3))
    if ratio not in (1, 2, 4, 8) or isinstance(ratio, bool):
        raise ValueError(f"{fn}: ratio must be 1, 2, 4 or 8, got {ratio!r}")
    if dct_method not in _DCT_METHODS:
        raise ValueError(f"{fn}: dct_method must be one of '', 'INTEGER_FAST', 'INTEGER_ACCURATE', "
                         f"got {dct_method!r}")  # fmt: skip
    if not 0 <= float(acceptable_fraction) <= 1:
        raise ValueError(f"{fn}: acceptable_fraction must be in [0, 1], got {acceptable_fraction!r}")
    data = as_bytes(content, fn)
    img = _draft(data, channels, ratio, fn) if (ratio != 1 or channels == 1) else None
    if img is None:
        img = _open(data, JPEG, fn, truncated_ok=try_recover_truncated)
    if img.mode not in ("L", "RGB"):  # CMYK, YCbCr, ...
        img = img.convert("RGB")
    return _int32(_with_channels(img, channels))


def _draft(data: bytes, channels: int, ratio: int, fn: str) -> Any:
    """The JPEG decoded by libjpeg at 1/``ratio`` scale and, for ``channels`` 1, straight to grayscale."""
    found = image_type(data)
    if found != JPEG:
        return None  # _open raises the error
    image = pillow(fn)
    try:
        img = image.open(io.BytesIO(data))
        w, h = img.size
        img.draft("L" if channels == 1 else img.mode, (max(1, w // ratio), max(1, h // ratio)))  # scale 1/ratio
        img.load()
        want = (-(-w // ratio), -(-h // ratio))
        if img.size != want:  # an image smaller than 8 blocks: Pillow's draft stops early, average the rest
            img = img.resize(want, image.Resampling.BOX)
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"{fn}: cannot decode the JPEG image: {exc}") from None
    return img


def decode_bmp(content: bytes, channels: int = 0) -> Tensor:
    """Decode a BMP file's bytes to an int32 tensor [height, width, channels]. Uncompressed 8-, 24- and 32-bit
    bitmaps, read as TensorFlow reads them (8-bit: the palette index as gray). ``channels`` 0 or the file's
    own count (1, 3 or 4); another count raises, as TensorFlow's ``DecodeBmp`` does."""
    channels = _check_channels("decode_bmp", channels, (0, 1, 3, 4))
    data = as_bytes(content, "decode_bmp")
    found = image_type(data)
    if found != BMP:
        what = f"a {found} image" if found else f"no BMP image ({describe_unknown(data)})"
        raise ValueError(f"decode_bmp: content is {what}, expected BMP")
    return _int32(decode_bmp_array(data, channels))


def decode_gif(content: bytes) -> Tensor:
    """Decode every frame of a GIF file's bytes to an int32 tensor [frames, height, width, 3] (RGB; each frame
    as it shows, drawn over the ones before)."""
    img = _open(as_bytes(content, "decode_gif"), GIF, "decode_gif")
    frames = []
    for k in range(getattr(img, "n_frames", 1)):
        img.seek(k)
        frames.append(np.asarray(img.convert("RGB"), dtype=np.uint8))
    return _int32(np.stack(frames))


def decode_image(content: bytes, channels: int = 0, dtype: str = "int32", expand_animations: bool = True) -> Tensor:
    """Decode a BMP, GIF, JPEG or PNG file's bytes, the format found from its first bytes.

    PNG, JPEG, BMP give [height, width, channels] (``channels`` as their decoders take it); a GIF gives
    [frames, height, width, 3] and ignores ``channels``, or its first frame [height, width, 3] when
    ``expand_animations`` is False. ``dtype`` must be ``'int32'``. Other formats raise, naming what was found."""
    _check_dtype("decode_image", dtype)
    data = as_bytes(content, "decode_image")
    fmt = image_type(data)
    if fmt == JPEG:
        return decode_jpeg(data, channels)
    if fmt == PNG:
        return decode_png(data, channels)
    if fmt == BMP:
        return decode_bmp(data, channels)
    if fmt == GIF:
        if expand_animations:
            return decode_gif(data)
        img = _open(data, GIF, "decode_image")
        return _int32(np.asarray(img.convert("RGB"), dtype=np.uint8))
    raise ValueError(f"decode_image: expected an image in BMP, JPEG, PNG or GIF format, got an unsupported image "
                     f"type ({describe_unknown(data)})")  # fmt: skip
