"""nf.browser.to_pixels / from_pixels against real TF.js 4.22 (tests/fixtures/image/tfjs_pixels.json, made by
gen_pixels.js), and the Python canvases: numpy arrays, Pillow images, image files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import browser

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "image" / "tfjs_pixels.json").read_text())
TO_PIXELS = {c["name"]: c for c in FIXTURE["toPixels"]}
FROM_PIXELS = {c["name"]: c for c in FIXTURE["fromPixels"]}


def _input(case):
    if case["kind"] == "array":
        return case["values"]
    values = np.array([np.nan if v is None else v for v in case["values"]], np.float64)
    return nf.tensor(values.astype(case["dtype"] if case["dtype"] != "bool" else bool), case["shape"], case["dtype"])


@pytest.mark.parametrize("name", list(TO_PIXELS))
def test_to_pixels_as_tfjs(name):
    case = TO_PIXELS[name]
    img = _input(case)
    try:
        if "error" in case:
            with pytest.raises((ValueError, TypeError)) as err:
                browser.to_pixels(img)
            assert str(err.value).startswith("to_pixels: ")
            return
        out = browser.to_pixels(img)
        assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 4
        assert out.reshape(-1).tolist() == case["pixels"]
    finally:
        if isinstance(img, nf.Tensor):
            img.dispose()


def test_to_pixels_error_texts_say_what_tfjs_says():
    cases = [("float32 above 1", "range [0 - 1], but encountered 1.25"),
             ("int32 below 0", "range [0 - 255], but encountered -1"),
             ("depth 2", "depth of 1, 3 or 4 is supported, got 2"),
             ("rank 4", "rank 2 or 3 tensors are supported, got rank 4"),
             ("bool", "unsupported dtype bool of img; use float32 or int32")]  # fmt: skip
    for name, text in cases:
        img = _input(TO_PIXELS[name])
        try:
            with pytest.raises((ValueError, TypeError), match=text.replace("[", r"\[").replace("]", r"\]")):
                browser.to_pixels(img)
        finally:
            img.dispose()


@pytest.mark.parametrize("name", list(FROM_PIXELS))
def test_from_pixels_of_pixel_data_as_tfjs(name):
    case = FROM_PIXELS[name]
    pixels = {"data": bytes(case["data"]), "width": case["width"], "height": case["height"]}
    args = (case["numChannels"],) if "numChannels" in case else ()
    if "error" in case:
        with pytest.raises(ValueError, match="from_pixels: cannot construct a tensor with more than 4 channels"):
            browser.from_pixels(pixels, *args)
        return
    t = browser.from_pixels(pixels, *args)
    try:
        assert list(t.shape) == case["shape"] and t.dtype == case["dtype"] == "int32"
        assert t.data_sync().tolist() == case["values"]
    finally:
        t.dispose()


def test_to_pixels_is_awaitable_and_plain():
    x = nf.tensor([[0.0, 1.0]], [1, 2], "float32")
    try:

        async def main():
            return await browser.to_pixels(x), await browser.to_pixels_async(x)

        a, b = asyncio.run(main())
        assert isinstance(a, np.ndarray) and a.tolist() == b.tolist() == [[[0, 0, 0, 255], [255, 255, 255, 255]]]
        assert type(a + 1) is np.ndarray  # arithmetic gives plain arrays
    finally:
        x.dispose()


def test_from_pixels_of_arrays():
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (3, 4, 3), dtype=np.uint8)
    gray = rgb[..., 0]
    cases = [
        (rgb, 3, rgb),
        (rgb, 4, np.concatenate([rgb, np.full((3, 4, 1), 255, np.uint8)], -1)),
        (rgb, 1, rgb[..., :1]),  # the red channel, as TF.js
        (gray, 3, np.repeat(gray[..., None], 3, -1)),
        (gray[..., None], 1, gray[..., None]),
    ]
    for pixels, n, want in cases:
        t = browser.from_pixels(pixels, n)
        try:
            assert t.dtype == "int32"
            np.testing.assert_array_equal(t.numpy(), want.astype(np.int32))
        finally:
            t.dispose()

    async def main():
        return await browser.from_pixels_async(rgb)

    t = asyncio.run(main())
    np.testing.assert_array_equal(t.numpy(), rgb)
    t.dispose()


def test_from_pixels_errors():
    with pytest.raises(TypeError, match="from_pixels: pixels as an array must hold integers 0..255"):
        browser.from_pixels(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError, match=r"from_pixels: pixels as an array must be .* got shape \[2, 2, 2\]"):
        browser.from_pixels(np.zeros((2, 2, 2), np.uint8))
    with pytest.raises(ValueError, match="from_pixels: num_channels must be 1 to 4, got 0"):
        browser.from_pixels(np.zeros((2, 2), np.uint8), 0)
    with pytest.raises(ValueError, match="from_pixels: pixels must not be None"):
        browser.from_pixels(None)
    with pytest.raises(TypeError, match="from_pixels: pixels must be a numpy array, a PIL.Image.Image"):
        browser.from_pixels(42)
    with pytest.raises(ValueError, match="from_pixels: pixels must be in 0..255|pixel values must be in 0..255"):
        browser.from_pixels(np.array([[256]], np.int32))


def test_pillow_images_and_files(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow is the image extra")
    rng = np.random.default_rng(5)
    rgba = rng.integers(0, 256, (4, 6, 4), dtype=np.uint8)
    for mode in ("RGBA", "RGB", "L", "LA", "P", "1"):
        img = Image.fromarray(rgba).convert(mode)
        t = browser.from_pixels(img, 4)
        try:
            np.testing.assert_array_equal(t.numpy(), np.asarray(img.convert("RGBA")))
        finally:
            t.dispose()
    path = tmp_path / "a.png"
    Image.fromarray(rgba[..., :3]).save(path)
    for source in (path, str(path)):
        t = browser.from_pixels(source)
        np.testing.assert_array_equal(t.numpy(), rgba[..., :3])
        t.dispose()
    with pytest.raises(ValueError, match="from_pixels: cannot read the image file"):
        browser.from_pixels(tmp_path / "missing.png")

    x = nf.tensor(rgba.astype(np.int32), [4, 6, 4], "int32")
    try:
        out = tmp_path / "out.png"
        bytes_ = browser.to_pixels(x, out)
        np.testing.assert_array_equal(np.asarray(Image.open(out)), rgba)
        np.testing.assert_array_equal(bytes_, rgba)
        canvas = Image.new("RGB", (6, 4))
        browser.to_pixels(x, canvas)
        np.testing.assert_array_equal(np.asarray(canvas), rgba[..., :3])
        with pytest.raises(ValueError, match="to_pixels: the canvas image is 2x2 and img is 6x4"):
            browser.to_pixels(x, Image.new("RGBA", (2, 2)))
        with pytest.raises(TypeError, match="to_pixels: canvas must be a file path or a PIL.Image.Image"):
            browser.to_pixels(x, 3)
    finally:
        x.dispose()
