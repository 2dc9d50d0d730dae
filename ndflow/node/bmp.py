"""tfjs-node's BMP decoder (TensorFlow's ``DecodeBmp``) on numpy: uncompressed 8-, 24- and 32-bit bitmaps,
read as their bytes say (8-bit: the palette index as a gray value; 24/32-bit: BGR(A) to RGB(A)), bottom-up or
top-down rows, rows padded to 4 bytes."""

from __future__ import annotations

import numpy as np


def decode_bmp_array(content: bytes, channels: int, fn: str = "decode_bmp") -> np.ndarray:
    """The pixels of a BMP file as a uint8 array [height, width, channels] (channels 0: as the file stores)."""
    if len(content) < 34 or content[:2] != b"BM":
        raise ValueError(f"{fn}: content is not a BMP image (too short or no 'BM' signature)")
    offset = int.from_bytes(content[10:14], "little", signed=True)
    width = int.from_bytes(content[18:22], "little", signed=True)
    height = int.from_bytes(content[22:26], "little", signed=True)
    bpp = int.from_bytes(content[28:30], "little")
    stored = bpp // 8
    if channels and channels != stored:
        raise ValueError(f"{fn}: channels {channels} does not match the file's {stored} channel(s) "
                         f"({bpp} bits per pixel); pass channels=0 or {stored}")  # fmt: skip
    if stored not in (1, 3, 4) or bpp % 8:
        raise ValueError(f"{fn}: only 8-, 24- and 32-bit BMP images can be decoded, got {bpp} bits per pixel")
    if width <= 0 or height == 0 or offset < 0:
        raise ValueError(f"{fn}: corrupt BMP header (width {width}, height {height}, data offset {offset})")
    row = (bpp * width + 31) // 32 * 4
    rows = abs(height)
    if offset + row * rows > len(content):
        raise ValueError(f"{fn}: the BMP image is truncated: {rows} rows of {row} bytes from byte {offset} need "
                         f"{offset + row * rows} bytes, got {len(content)}")  # fmt: skip
    data = np.frombuffer(content, np.uint8, row * rows, offset).reshape(rows, row)[:, : width * stored]
    pixels = data.reshape(rows, width, stored)
    if height > 0:  # bottom-up rows
        pixels = pixels[::-1]
    if stored == 3:
        pixels = pixels[..., ::-1]
    elif stored == 4:
        pixels = pixels[..., [2, 1, 0, 3]]
    return np.ascontiguousarray(pixels)
