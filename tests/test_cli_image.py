"""``ndflow predict`` with image inputs decoded by nf.node / nf.browser: a grayscale layers model fed colour
images of every format, inputs by name, the value ranges, and the clear errors."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.cli.inputs import ImageOptions, load_image, read_image
from ndflow.cli.predict import main

Image = pytest.importorskip("PIL.Image", reason="image inputs need Pillow (pip install 'ndflow[image]')")

RNG = np.random.default_rng(11)
PHOTO = RNG.integers(0, 256, (28, 28, 3), dtype=np.uint8)


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    """A layers model whose input 'image' is [batch, 28, 28, 1]; its output is that input, flattened."""
    x = nf.input(shape=[28, 28, 1], name="image")
    model = nf.model(inputs=x, outputs=nf.layers.flatten().apply(x))
    model.save(f"file://{tmp_path / 'mnist'}")
    model.dispose()
    return tmp_path / "mnist"


def saved(tmp_path: Path, name: str, arr: np.ndarray, **kw) -> Path:
    path = tmp_path / name
    Image.fromarray(arr).save(path, **kw)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main([*argv, "--runs", "0", "--backend", "cpu"])
    out, err = capsys.readouterr()
    return status, out, err


def summary(out: str) -> tuple[float, float, float]:
    m = re.search(r"min=(\S+) max=(\S+) mean=(\S+)", out)
    return float(m[1]), float(m[2]), float(m[3])


def test_grayscale_model_takes_a_colour_image(tmp_path, mnist, capsys):
    path = saved(tmp_path, "digit.png", PHOTO)
    status, out, err = run(capsys, str(mnist), "--input", str(path))
    assert status == 0, err
    assert "inputs: image[1, 28, 28, 1]:float32" in out
    gray = np.asarray(Image.fromarray(PHOTO).convert("L"), np.float64) / 255  # the luma, not the red channel
    low, high, mean = summary(out)
    assert (low, high) == pytest.approx((gray.min(), gray.max()), abs=1e-6)
    assert mean == pytest.approx(gray.mean(), abs=1e-5)


def test_inputs_by_name(tmp_path, mnist, capsys):
    path = saved(tmp_path, "digit.png", PHOTO[..., 0])
    status, out, err = run(capsys, str(mnist), "--input", f"image={path}")
    assert status == 0, err
    assert "inputs: image[1, 28, 28, 1]" in out
    status, _, err = run(capsys, str(mnist), "--input", f"label={path}")
    assert status == 2
    assert err == f"ndflow predict: error: --input label={path}: the model has no input 'label' (its inputs: 'image')\n"
    odd = saved(tmp_path, "a=b.png", PHOTO)  # a file whose name has '=' is still a file
    assert run(capsys, str(mnist), "--input", str(odd))[0] == 0


@pytest.mark.parametrize(("scale", "low", "high"), [("0-1", 0.0, 1.0), ("-1-1", -1.0, 1.0), ("0-255", 0.0, 255.0)])
def test_scales(tmp_path, mnist, capsys, scale, low, high):
    ramp = np.linspace(0, 255, 28 * 28).round().astype(np.uint8).reshape(28, 28)
    path = saved(tmp_path, "ramp.png", ramp)
    status, out, err = run(capsys, str(mnist), "--input", str(path), f"--scale={scale}")
    assert status == 0, err
    assert summary(out)[:2] == pytest.approx((low, high), abs=1e-6)


@pytest.mark.parametrize(("name", "kw"), [("p.bmp", {}), ("p.gif", {}), ("p.jpg", {"quality": 95}),
                                          ("p.webp", {"lossless": True}), ("p.tiff", {})])  # fmt: skip
def test_formats(tmp_path, name, kw):
    smooth = np.stack(np.meshgrid(np.arange(28) * 9, np.arange(28) * 9, indexing="xy") + (np.full((28, 28), 60),), -1)
    path = saved(tmp_path, name, smooth.astype(np.uint8), **kw)
    got = load_image(str(path), [None, 28, 28, 1], "float32", ImageOptions(scale="0-255"))
    with Image.open(path) as img:
        want = np.asarray(img.convert("RGB").convert("L"), np.float32)[None, ..., None]
    assert got.shape == (1, 28, 28, 1) and got.dtype == np.float32
    assert np.abs(got - want).max() <= (2 if name.endswith(".jpg") else 0)


def test_alpha_and_channels(tmp_path):
    rgba = RNG.integers(0, 256, (5, 6, 4), dtype=np.uint8)
    path = saved(tmp_path, "a.png", rgba)
    assert read_image(str(path)).mode == "RGBA"
    got = load_image(str(path), [1, 5, 6, 4], "int32")
    np.testing.assert_array_equal(got[0], rgba)
    got = load_image(str(path), [1, 5, 6, 3], "int32")
    np.testing.assert_array_equal(got[0], rgba[..., :3])  # alpha dropped, not composited
    got = load_image(str(path), [5, 6, -1], "float32", ImageOptions(channels=1, scale="0-255"))
    assert got.shape == (5, 6, 1)


def test_errors(tmp_path, mnist, capsys, monkeypatch):
    bad = tmp_path / "x.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    status, _, err = run(capsys, str(mnist), "--input", str(bad))
    assert status == 1 and err.startswith(f"ndflow predict: error: --input {bad}: not a readable image (decode_png: ")
    monkeypatch.setitem(sys.modules, "PIL", None)
    status, _, err = run(capsys, str(mnist), "--input", str(bad))
    assert status == 1 and "reading an image needs Pillow (pip install 'ndflow[image]')" in err
