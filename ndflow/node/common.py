"""What the codecs of ``nf.node`` share: Pillow's lazy import, the format a file's first bytes name, and the
awaitable bytes that the encoders return."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

#: Formats tfjs-node decodes, as its error messages name them.
JPEG, PNG, GIF, BMP = "JPEG", "PNG", "GIF", "BMP"

#: Signatures of formats Pillow knows and tfjs-node does not decode (only to name them in an error).
_OTHER_MAGIC = (
    (b"RIFF", "WEBP or another RIFF file"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"%PDF", "PDF"),
)


def pillow(what: str) -> Any:
    """``PIL.Image``, or one ImportError naming ``what`` needs it and the extra that installs it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{what} needs Pillow: pip install 'ndflow[image]'") from None
    return Image


def as_bytes(content: Any, fn: str) -> bytes:
    """``content`` (bytes, bytearray, memoryview or a uint8 array) as bytes, or a TypeError naming ``fn``."""
    if isinstance(content, bytes):
        return content
    if isinstance(content, bytearray | memoryview):
        return bytes(content)
    try:
        import numpy as np

        if isinstance(content, np.ndarray) and content.dtype == np.uint8:
            return content.tobytes()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    raise TypeError(f"{fn}: content must be the encoded image as bytes (or a uint8 array), got "
                    f"{type(content).__name__}")  # fmt: skip


def image_type(content: bytes) -> str | None:
    """The format named by the first bytes (tfjs-node's ``getImageType``, the same lengths checked); None when
    it is none of JPEG, GIF, PNG, BMP."""
    n = len(content)
    if n > 3 and content[:3] == b"\xff\xd8\xff":
        return JPEG
    if n > 4 and content[:4] == b"GIF8":
        return GIF
    if n > 8 and content[:8] == b"\x89PNG\r\n\x1a\n":
        return PNG
    if n > 3 and content[:2] == b"BM":
        return BMP
    return None


def describe_unknown(content: bytes) -> str:
    """What an undecodable ``content`` is, for an error: a format we can name, or its first bytes."""
    for magic, name in _OTHER_MAGIC:
        if content.startswith(magic):
            return name
    if not content:
        return "empty content"
    return "unknown, first bytes " + content[:8].hex(" ")


class EncodedImage(bytes):
    """The bytes of an encoded image. tfjs-node's encoders return a Promise; this is the plain result, and
    ``await`` on it gives itself, so ``await nf.node.encode_png(img)`` ports unchanged."""

    def __await__(self) -> Generator[Any, None, EncodedImage]:
        return self
        yield  # pragma: no cover - makes this a generator
