"""``nf.browser``: TF.js's ``tf.browser.fromPixels`` / ``toPixels`` with numpy arrays, Pillow images and image
files for canvases (Pillow: extra ``image``, ``pip install 'ndflow[image]'``, imported on first use)."""

from __future__ import annotations

from .pixels import Pixels, from_pixels, from_pixels_async, to_pixels, to_pixels_async

__all__ = ["Pixels", "from_pixels", "from_pixels_async", "to_pixels", "to_pixels_async"]
