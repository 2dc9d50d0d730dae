"""The errors of nf.node's codecs: each names the function and the argument, expected and got."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ndflow as nf
from ndflow import node

Image = pytest.importorskip("PIL.Image", reason="the image codecs need Pillow (pip install 'ndflow[image]')")


def encoded(arr: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(arr).save(out, fmt)
    return out.getvalue()


RGB = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
PNG, JPEG, BMP = encoded(RGB, "PNG"), encoded(RGB, "JPEG"), encoded(RGB, "BMP")


def test_not_an_image():
    with pytest.raises(ValueError, match=r"decode_image: expected an image in BMP, JPEG, PNG or GIF format, got an "
                                         r"unsupported image type \(unknown, first bytes 68 65"):  # fmt: skip
        node.decode_image(b"hello world, no image here")
    with pytest.raises(ValueError, match=r"unsupported image type \(WEBP"):
        node.decode_image(encoded(RGB, "WEBP"))
    with pytest.raises(ValueError, match=r"decode_png: content is no PNG image \(empty content\)"):
        node.decode_png(b"")
    with pytest.raises(TypeError, match="decode_image: content must be the encoded image as bytes"):
        node.decode_image("photo.png")


def test_each_decoder_takes_its_format():
    with pytest.raises(ValueError, match="decode_png: content is a JPEG image, expected PNG; use decode_jpeg or "
                                         "decode_image"):  # fmt: skip
        node.decode_png(JPEG)
    with pytest.raises(ValueError, match="decode_jpeg: content is a PNG image, expected JPEG"):
        node.decode_jpeg(PNG)
    with pytest.raises(ValueError, match="decode_bmp: content is a PNG image, expected BMP"):
        node.decode_bmp(PNG)
    with pytest.raises(ValueError, match="decode_gif: content is a BMP image, expected GIF"):
        node.decode_gif(BMP)


def test_corrupt_and_truncated():
    with pytest.raises(ValueError, match="decode_png: cannot decode the PNG image"):
        node.decode_png(PNG[:40])
    with pytest.raises(ValueError, match="decode_png: cannot decode the PNG image"):
        node.decode_png(PNG[:8] + b"\x00" * 60)
    with pytest.raises(ValueError, match=r"decode_bmp: the BMP image is truncated: 4 rows of 16 bytes"):
        node.decode_bmp(BMP[:-10])
    with pytest.raises(ValueError, match="decode_image: expected an image"):
        node.decode_image(PNG[:8])  # the signature alone is too short to name PNG, as tfjs-node


def test_wrong_channels_and_options():
    with pytest.raises(ValueError, match=r"decode_png: channels must be one of 0, 1, 3, 4 .*got 2"):
        node.decode_png(PNG, 2)
    with pytest.raises(ValueError, match=r"decode_jpeg: channels must be one of 0, 1, 3 .*got 4"):
        node.decode_image(JPEG, 4)
    with pytest.raises(ValueError, match=r"decode_bmp: channels 4 does not match the file's 3 channel"):
        node.decode_bmp(BMP, 4)
    with pytest.raises(ValueError, match=r"decode_bmp: channels 1 does not match"):
        node.decode_image(BMP, 1)
    with pytest.raises(ValueError, match="decode_jpeg: ratio must be 1, 2, 4 or 8, got 3"):
        node.decode_jpeg(JPEG, ratio=3)
    with pytest.raises(ValueError, match="decode_jpeg: dct_method must be one of"):
        node.decode_jpeg(JPEG, dct_method="FLOAT")
    with pytest.raises(ValueError, match="decode_image: dtype must be 'int32'"):
        node.decode_image(PNG, dtype="float32")
    with pytest.raises(ValueError, match="decode_png: dtype must be 'int32'"):
        node.decode_png(PNG, dtype="uint8")


def test_encode_checks():
    x = nf.tensor([[[0.5]]], [1, 1, 1], "float32")
    try:
        with pytest.raises(TypeError, match="encode_png: image must be an int32 tensor of values 0..255, got a "
                                            "float32 tensor"):  # fmt: skip
            node.encode_png(x)
    finally:
        x.dispose()
    with pytest.raises(TypeError, match=r"encode_jpeg: image must hold integers 0..255 \(int32 or uint8\), got float"):
        node.encode_jpeg(RGB / 255)
    with pytest.raises(
        ValueError, match=r"encode_png: image must be 3D \[height, width, channels\], got shape \[4, 5\]"
    ):
        node.encode_png(RGB[..., 0])
    with pytest.raises(ValueError, match=r"encode_jpeg: image must have 1 or 3 channels, got shape \[4, 5, 2\]"):
        node.encode_jpeg(RGB[..., :2])
    with pytest.raises(ValueError, match=r"encode_png: image must have 1 or 2 or 3 or 4 channels, got shape"):
        node.encode_png(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(ValueError, match=r"encode_jpeg: image must have 1 channels, got shape \[4, 5, 3\]"):
        node.encode_jpeg(RGB, format="grayscale")
    with pytest.raises(ValueError, match=r"encode_png: image values must be in 0..255, got 0..300"):
        node.encode_png(np.array([[[0], [300]]], np.int32))
    with pytest.raises(ValueError, match="encode_jpeg: quality must be an int in 0..100, got 101"):
        node.encode_jpeg(RGB, quality=101)
    with pytest.raises(ValueError, match="encode_png: compression must be an int in -1..9, got 10"):
        node.encode_png(RGB, compression=10)
    with pytest.raises(ValueError, match="encode_jpeg: density_unit must be 'in' or 'cm', got 'px'"):
        node.encode_jpeg(RGB, density_unit="px")


def test_missing_pillow_names_the_extra(monkeypatch):
    import sys

    from ndflow import browser

    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"^decode_png needs Pillow: pip install 'ndflow\[image\]'$"):
        node.decode_png(PNG)
    with pytest.raises(ImportError, match=r"^encode_jpeg needs Pillow: pip install 'ndflow\[image\]'$"):
        node.encode_jpeg(RGB)
    with pytest.raises(ImportError, match=r"from_pixels needs Pillow .*pip install 'ndflow\[image\]'"):
        browser.from_pixels("photo.png")
    t = node.decode_bmp(BMP)  # BMP is read without Pillow
    np.testing.assert_array_equal(t.numpy(), RGB)
    t.dispose()
