"""PNG checks shared by nf.vis's tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def png_pixels(path: str | Path, size: tuple[int, int] | None = None) -> np.ndarray:
    """The RGB pixels of the PNG at ``path`` (its signature, and its ``(width, height)`` when given, checked), and a
    check that it is not blank: the middle of the image holds many pixels off the white background, in more than
    one color."""
    path = Path(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    with Image.open(path) as image:
        if size is not None:
            assert image.size == size, f"{path}: size {image.size}, expected {size}"
        pixels = np.asarray(image.convert("RGB"))
    h, w, _ = pixels.shape
    middle = pixels[h // 8 : h - h // 8, w // 8 : w - w // 8].reshape(-1, 3)
    drawn = np.any(middle < 235, axis=1)
    assert drawn.mean() > 0.005, f"{path} looks blank: {drawn.sum()} drawn pixels in the middle"
    assert len(np.unique(middle, axis=0)) > 2, f"{path} has a single color"
    return pixels


def has_color(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 12, at_least: int = 20) -> bool:
    """Whether at least ``at_least`` pixels are within ``tolerance`` of ``rgb``."""
    close = np.all(np.abs(pixels.astype(int) - np.asarray(rgb)) <= tolerance, axis=-1)
    return int(close.sum()) >= at_least
