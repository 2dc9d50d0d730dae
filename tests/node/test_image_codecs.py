"""nf.node's decoders on images made here with Pillow: PNG, BMP and GIF decode to Pillow's pixels exactly,
JPEG within 2 per channel; shapes, channels and errors as tfjs-node 4.22's."""

from __future__ import annotations

import asyncio
import io

import numpy as np
import pytest

import ndflow as nf
from ndflow import node

Image = pytest.importorskip("PIL.Image", reason="the image codecs need Pillow (pip install 'ndflow[image]')")

RNG = np.random.default_rng(7)
RGB = RNG.integers(0, 256, (6, 9, 3), dtype=np.uint8)
RGBA = RNG.integers(0, 256, (6, 9, 4), dtype=np.uint8)
GRAY = RNG.integers(0, 256, (6, 9), dtype=np.uint8)
SMOOTH = np.stack([*np.meshgrid(np.arange(16) * 16, np.arange(12) * 20, indexing="xy"), np.full((12, 16), 90)], -1)
SMOOTH = SMOOTH.astype(np.uint8)  # a gradient JPEG keeps within a few levels


def encoded(arr: np.ndarray, mode: str, fmt: str, **kw) -> bytes:
    out = io.BytesIO()
    Image.fromarray(arr, mode).save(out, fmt, **kw)
    return out.getvalue()


def pillow_pixels(data: bytes, mode: str | None = None) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    arr = np.asarray(img.convert(mode) if mode else img)
    return arr[..., None] if arr.ndim == 2 else arr


def decoded(fn, *args, **kw) -> np.ndarray:
    t = fn(*args, **kw)
    try:
        assert t.dtype == "int32"
        return t.numpy()
    finally:
        t.dispose()


@pytest.mark.parametrize(("mode", "arr", "channels"), [("L", GRAY, 1), ("LA", RGBA[..., :2], 2),
                                                       ("RGB", RGB, 3), ("RGBA", RGBA, 4)])  # fmt: skip
def test_png_as_stored_is_pillows_pixels(mode, arr, channels):
    data = encoded(arr, mode, "PNG")
    for fn in (node.decode_png, node.decode_image):
        out = decoded(fn, data)
        assert out.shape == (6, 9, channels)
        np.testing.assert_array_equal(out, pillow_pixels(data))


def test_png_channels_convert_as_libpng():
    data = encoded(RGBA, "RGBA", "PNG")
    np.testing.assert_array_equal(decoded(node.decode_png, data, 3), RGBA[..., :3])  # alpha dropped
    np.testing.assert_array_equal(decoded(node.decode_png, data, 1), pillow_pixels(encoded(RGBA[..., :3], "RGB",
                                                                                           "PNG"), "L"))  # fmt: skip
    gray = encoded(GRAY, "L", "PNG")
    np.testing.assert_array_equal(decoded(node.decode_png, gray, 3), np.repeat(GRAY[..., None], 3, -1))
    rgba = decoded(node.decode_image, gray, 4)
    np.testing.assert_array_equal(rgba[..., :3], np.repeat(GRAY[..., None], 3, -1))
    assert (rgba[..., 3] == 255).all()


def test_png_palette_and_16_bit():
    pal = Image.fromarray(RGB).quantize(16)
    out = io.BytesIO()
    pal.save(out, "PNG")
    data = out.getvalue()
    np.testing.assert_array_equal(decoded(node.decode_png, data), pillow_pixels(data, "RGB"))
    pal.info["transparency"] = 0
    out = io.BytesIO()
    pal.save(out, "PNG", transparency=0)
    got = decoded(node.decode_png, out.getvalue())
    assert got.shape == (6, 9, 4)
    np.testing.assert_array_equal(got, pillow_pixels(out.getvalue(), "RGBA"))
    deep = (GRAY.astype(np.uint16) * 257 + 3).astype(np.uint16)
    out = io.BytesIO()
    Image.fromarray(deep).save(out, "PNG")
    np.testing.assert_array_equal(decoded(node.decode_png, out.getvalue())[..., 0], deep >> 8)


@pytest.mark.parametrize(("mode", "arr", "channels"), [("L", GRAY, 1), ("RGB", RGB, 3)])
def test_bmp_is_pillows_pixels(mode, arr, channels):
    data = encoded(arr, mode, "BMP")
    for fn in (node.decode_bmp, node.decode_image):
        out = decoded(fn, data)
        assert out.shape == (6, 9, channels)
        np.testing.assert_array_equal(out, pillow_pixels(data))
    np.testing.assert_array_equal(decoded(node.decode_bmp, data, channels), out)


def test_bmp_32_bit_keeps_alpha_and_top_down_rows():
    data = encoded(RGBA, "RGBA", "BMP")  # 32 bits per pixel, BGRA
    np.testing.assert_array_equal(decoded(node.decode_bmp, data), RGBA)
    h = 6  # the same pixels stored top-down (negative height)
    header = bytearray(data)
    header[22:26] = (-h).to_bytes(4, "little", signed=True)
    offset = int.from_bytes(data[10:14], "little")
    rows = np.frombuffer(data, np.uint8, offset=offset).reshape(h, -1)[::-1]
    flipped = bytes(header[:offset]) + rows.tobytes()
    np.testing.assert_array_equal(decoded(node.decode_bmp, flipped), RGBA)


def test_gif_is_4d_and_first_frame_3d():
    frames = [Image.fromarray(RGB), Image.fromarray(255 - RGB)]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    data = out.getvalue()
    gif = decoded(node.decode_gif, data)
    assert gif.shape == (2, 6, 9, 3)
    img = Image.open(io.BytesIO(data))
    for k in range(2):
        img.seek(k)
        np.testing.assert_array_equal(gif[k], np.asarray(img.convert("RGB")))
    np.testing.assert_array_equal(decoded(node.decode_image, data), gif)
    np.testing.assert_array_equal(decoded(node.decode_image, data, expand_animations=False), gif[0])
    one = encoded(GRAY, "L", "GIF")
    assert decoded(node.decode_image, one, 1).shape == (1, 6, 9, 3)  # channels is not a GIF's option


@pytest.mark.parametrize(("mode", "arr", "channels"), [("L", SMOOTH[..., 0], 1), ("RGB", SMOOTH, 3)])
def test_jpeg_within_two_of_pillow(mode, arr, channels):
    data = encoded(arr, mode, "JPEG", quality=90)
    out = decoded(node.decode_jpeg, data)
    assert out.shape == (12, 16, channels)
    assert np.abs(out - pillow_pixels(data)).max() <= 2
    assert np.abs(decoded(node.decode_image, data) - out).max() == 0
    if channels == 3:
        gray = decoded(node.decode_jpeg, data, 1)
        assert gray.shape == (12, 16, 1)
        assert np.abs(gray - pillow_pixels(data, "L")).max() <= 2


def test_jpeg_ratio_downscales():
    data = encoded(SMOOTH, "RGB", "JPEG")
    assert decoded(node.decode_jpeg, data, ratio=2).shape == (6, 8, 3)
    assert decoded(node.decode_jpeg, data, 3, 8).shape == (2, 2, 3)
    for h, w, ratio in ((9, 15, 4), (5, 17, 2), (3, 3, 8)):  # libjpeg's ceil(size / ratio)
        odd = encoded(np.zeros((h, w, 3), np.uint8), "RGB", "JPEG")
        assert decoded(node.decode_jpeg, odd, ratio=ratio).shape == (-(-h // ratio), -(-w // ratio), 3)


def test_jpeg_truncated_raises_or_recovers():
    data = encoded(RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8), "RGB", "JPEG")
    cut = data[: len(data) // 2]
    with pytest.raises(ValueError, match=r"decode_jpeg: cannot decode the JPEG image: .*truncated"):
        node.decode_jpeg(cut)
    assert decoded(node.decode_jpeg, cut, try_recover_truncated=True).shape == (64, 64, 3)


def test_round_trips():
    for arr in (RGB, RGBA, GRAY[..., None], RGBA[..., :2]):
        t = nf.tensor(arr.astype(np.int32), list(arr.shape), "int32")
        png = node.encode_png(t)
        t.dispose()
        assert isinstance(png, bytes) and png[:8] == b"\x89PNG\r\n\x1a\n"
        np.testing.assert_array_equal(decoded(node.decode_png, png), arr)
    jpeg = node.encode_jpeg(SMOOTH, quality=100, chroma_downsampling=False)
    assert np.abs(decoded(node.decode_image, jpeg) - SMOOTH.astype(np.int32)).max() <= 3
    gray = node.encode_jpeg(SMOOTH[..., :1], format="grayscale")
    assert decoded(node.decode_jpeg, gray).shape == (12, 16, 1)


def test_encoders_are_awaitable():
    async def main():
        return await node.encode_png(RGB), await node.encode_jpeg(RGB, progressive=True, optimize_size=True)

    png, jpeg = asyncio.run(main())
    np.testing.assert_array_equal(decoded(node.decode_png, png), RGB)
    assert decoded(node.decode_jpeg, jpeg).shape == (6, 9, 3)


def test_encode_jpeg_header_options():
    data = node.encode_jpeg(RGB, density_unit="cm", x_density=72, y_density=96, xmp_metadata="<x:xmpmeta/>")
    at = data.find(b"JFIF\x00")
    assert data[at + 7] == 2 and data[at + 8 : at + 12] == bytes([0, 72, 0, 96])
    assert b"<x:xmpmeta/>" in data
