"""``nf.node``: tfjs-node's image codecs on Pillow (extra ``image``: ``pip install 'ndflow[image]'``).

Decoders return int32 tensors as tfjs-node's (``decode_image``, ``decode_jpeg``, ``decode_png``,
``decode_bmp``, ``decode_gif``); encoders (``encode_png``, ``encode_jpeg``) return the file's bytes as an
:class:`EncodedImage`, which ``await`` also accepts. Pillow is imported on the first call.

TensorBoard (extra ``tensorboard``: ``pip install 'ndflow[tensorboard]'``): ``tensor_board(logdir)``, the
training callback, and ``summary_file_writer(logdir)`` with ``scalar``, ``histogram`` and ``flush``."""

from __future__ import annotations

from .common import EncodedImage, image_type
from .encode import encode_jpeg, encode_png
from .image import decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png
from .summary_writer import SummaryFileWriter, summary_file_writer
from .tensorboard import TensorBoardCallback, tensor_board

__all__ = [
    "EncodedImage",
    "SummaryFileWriter",
    "TensorBoardCallback",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "image_type",
    "summary_file_writer",
    "tensor_board",
]
