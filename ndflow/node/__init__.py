"""``nf.node``: tfjs-node's image codecs on Pillow (extra ``image``: ``pip install 'ndflow[image]'``).

Decoders return int32 tensors as tfjs-node's (``decode_image``, ``decode_jpeg``, ``decode_png``,
``decode_bmp``, ``decode_gif``); encoders (``encode_png``, ``encode_jpeg``) return the file's bytes as an
:class:`EncodedImage`, which ``await`` also accepts. Pillow is imported on the first call."""

from __future__ import annotations

from .common import EncodedImage, image_type
from .encode import encode_jpeg, encode_png
from .image import decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png

__all__ = [
    "EncodedImage",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "image_type",
]
