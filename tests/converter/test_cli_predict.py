"""``ndflow predict``: seeded inputs identical to the TF.js oracle's, outputs printed, .npy and image inputs
(channels, scale, resize), and the user's mistakes as one line on stderr with an exit status."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gm_helpers import attr_type, const, expected, fixture, node, placeholder

import ndflow as nf
from ndflow.cli.inputs import ImageOptions, load_image
from ndflow.cli.predict import input_shape, main, seeded, seeded_input


def test_seeded_inputs_are_the_oracles():
    # the values TF.js fed the fixture (run_model.js: input i, seed 42 + i) are seeded_input's
    for name in ("basic", "dynamic"):
        for k, rec in enumerate(expected(name)["inputs"]):
            got = seeded_input(rec["shape"], rec["dtype"], k)
            np.testing.assert_array_equal(got.ravel(), np.array(rec["values"], dtype=np.float32))
    assert seeded([3], "int32", 5, 0, 256).dtype == np.int32 and seeded([2], "bool").dtype == np.bool_
    assert input_shape([-1, -1, -1, 3]) == [1, 224, 224, 3] and input_shape([-1, 5]) == [1, 5]


def test_predict_prints_outputs_and_time(capsys):
    assert main([str(fixture("basic")), "--runs", "2", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    want = expected("basic")["outputs"][0]["values"]
    assert "backend=cpu" in out and "inputs: x[1, 3]:float32" in out
    assert "out shape=[1, 4] float32" in out and f"{want[0]:.6g}" in out
    assert "shape shape=[2] int32" in out and "time median=" in out


def test_predict_async_model_with_npy_input(tmp_path, capsys):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main([str(fixture("while_loop")), "--input", str(tmp_path / "x.npy"), "--runs", "0"]) == 0
    out = capsys.readouterr().out
    assert "acc shape=[3] float32" in out and "first=[31, 62, 93]" in out and "time median" not in out


def test_layers_models(tmp_path, capsys):
    model = nf.sequential()
    model.add(nf.layers.conv2d(filters=2, kernel_size=1, input_shape=[4, 4, 1]))
    model.save(f"file://{tmp_path / 'layers'}")
    model.dispose()
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 4, 3), np.float32))
    assert main([str(tmp_path / "layers"), "--input", str(tmp_path / "x.npy")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ndflow predict: error: --input ") and "of shape [-1, 4, 4, 1]" in err
    if importlib.util.find_spec("PIL") is not None:  # a grayscale layers model gets one channel
        from PIL import Image

        Image.fromarray(np.full((8, 8, 3), 200, np.uint8), "RGB").save(tmp_path / "photo.png")
        assert main([str(tmp_path / "layers"), "--input", str(tmp_path / "photo.png"), "--runs", "0"]) == 0
        assert "[layers]" in capsys.readouterr().out
    layers = tmp_path / "bad.json"
    layers.write_text(json.dumps({"modelTopology": {"class_name": "Sequential", "config": {}}, "weightsManifest": []}))
    assert main([str(layers)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ndflow predict: error: cannot load the model {layers}: ") and len(err.splitlines()) == 1


def test_coroutines_run_on_one_kept_loop():
    """Timed loops of ``execute_async`` runs share one event loop (``asyncio.run`` makes one per call)."""
    import asyncio

    from ndflow.cli.predict import run_coroutine

    async def loop_and_value(v: int) -> tuple:
        await asyncio.sleep(0)
        return asyncio.get_running_loop(), v

    first, a = run_coroutine(loop_and_value(1))
    second, b = run_coroutine(loop_and_value(2))
    assert (a, b) == (1, 2) and first is second and not first.is_closed()
    first.close()  # a closed loop is replaced
    third, c = run_coroutine(loop_and_value(3))
    assert c == 3 and third is not first

    async def fails() -> None:
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        run_coroutine(fails())
    assert run_coroutine(loop_and_value(4))[1] == 4


# -- user mistakes: one line on stderr, an exit status, no traceback ---------------------------------
def save_model(folder: Path, nodes: list[dict], weights: dict[str, np.ndarray] | None = None) -> Path:
    """A graph model's model.json + weights.bin in ``folder``; returns the folder."""
    data, specs = nf.io.encode_weights(dict(weights or {}))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "weights.bin").write_bytes(data)
    model = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "versions": {"producer": 7}},
        "weightsManifest": [{"paths": ["weights.bin"], "weights": [dict(s) for s in specs]}],
    }
    (folder / "model.json").write_text(json.dumps(model))
    return folder


def identity_model(folder: Path, dims: list[int], dtype: str = "DT_FLOAT") -> Path:
    """x (Placeholder of ``dims``) -> out (Identity): the output is the input the command made."""
    return save_model(folder, [placeholder("x", dims, dtype), node("out", "Identity", ["x"], T=attr_type(dtype))])


def fails(capsys, argv: list[str], status: int) -> str:
    """Run ``ndflow predict argv``: it exits ``status`` with one error line on stderr; that line."""
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ndflow predict: error: "), err
    return lines[0]


def output_values(capsys, argv: list[str]) -> tuple[str, list[float]]:
    """Run ``ndflow predict argv`` (exit 0): its inputs line and the output's min, max and mean."""
    assert main([*argv, "--runs", "0", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    inputs = next(line for line in out.splitlines() if line.startswith("inputs: "))
    m = re.search(r"min=(\S+) max=(\S+) mean=(\S+)", out)
    return inputs, [float(v) for v in m.groups()]


@pytest.fixture
def rgb_model(tmp_path: Path) -> Path:
    return identity_model(tmp_path / "rgb", [1, 4, 4, 3])


def test_missing_and_wrong_files(tmp_path, rgb_model, capsys):
    assert "the model no/such/model.json does not exist" in fails(capsys, ["no/such/model.json"], 2)
    assert f"the model folder {tmp_path} has no model.json" in fails(capsys, [str(tmp_path)], 2)
    line = fails(capsys, [str(rgb_model), "--input", str(tmp_path / "photo.png")], 2)
    assert f"--input {tmp_path / 'photo.png'} does not exist" in line
    assert "is a folder, not a file" in fails(capsys, [str(rgb_model), "--input", str(tmp_path)], 2)
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    line = fails(capsys, [str(tmp_path / "notes.json")], 1)
    assert "notes.json" in line and "is this a TF.js model.json?" in line
    (tmp_path / "broken.json").write_text("{hello")
    assert "broken.json is not a model.json (not JSON: " in fails(capsys, [str(tmp_path / "broken.json")], 1)
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    assert "photo.png is not a model.json" in fails(capsys, [str(tmp_path / "photo.png")], 1)
    (rgb_model / "weights.bin").unlink()
    assert "weight file 'weights.bin' is missing" in fails(capsys, [str(rgb_model)], 1)


def test_bad_flags_and_backend(rgb_model, capsys):
    for flag, value, says in [
        ("--runs", "x", "argument --runs: invalid int value: 'x'"),
        ("--runs", "-1", "argument --runs: must be at least 0, got -1"),
        ("--warmup", "-2", "argument --warmup: must be at least 0, got -2"),
        ("--channels", "2", "argument --channels: invalid choice: '2'"),
        ("--scale", "0-2", "argument --scale: invalid choice: '0-2'"),
        ("--resize", "squash", "argument --resize: invalid choice: 'squash'"),
    ]:
        line = fails(capsys, [str(rgb_model), flag, value], 2)
        assert says in line and line.endswith("(see ndflow predict --help)")
    assert "unrecognized arguments: --nope" in fails(capsys, [str(rgb_model), "--nope"], 2)
    line = fails(capsys, [str(rgb_model), "--backend", "nope"], 2)
    assert "--backend 'nope' is not available here (have: " in line and "cpu" in line


def test_wrong_npy_inputs(tmp_path, rgb_model, capsys):
    np.save(tmp_path / "small.npy", np.zeros((2, 2), np.float32))
    line = fails(capsys, [str(rgb_model), "--input", str(tmp_path / "small.npy")], 1)
    assert (
        f"--input {tmp_path / 'small.npy'}: an array of shape [2, 2] does not fit input 'x' of shape [1, 4, 4, 3]"
        in line
    )
    np.save(tmp_path / "nobatch.npy", np.zeros((4, 4, 3), np.float32))
    assert "(add a batch dimension of 1?)" in fails(
        capsys, [str(rgb_model), "--input", str(tmp_path / "nobatch.npy")], 1
    )
    (tmp_path / "junk.npy").write_bytes(b"junk")
    assert "junk.npy: not an .npy file" in fails(capsys, [str(rgb_model), "--input", str(tmp_path / "junk.npy")], 1)
    np.save(tmp_path / "words.npy", np.array(["a", "b"]))
    line = fails(capsys, [str(rgb_model), "--input", str(tmp_path / "words.npy")], 1)
    assert "words.npy: an array of <U1, and input 'x' takes float32" in line
    line = fails(
        capsys, [str(rgb_model), "--input", str(tmp_path / "small.npy"), "--input", str(tmp_path / "small.npy")], 2
    )
    assert "the model has 1 input(s) ('x'), got 2 --input" in line
    np.save(tmp_path / "good.npy", np.full((1, 4, 4, 3), 0.5, np.float32))
    assert output_values(capsys, [str(rgb_model), "--input", str(tmp_path / "good.npy")])[1] == [0.5, 0.5, 0.5]


def test_a_model_that_fails_on_its_input_is_one_line(tmp_path, capsys):
    # any height and width, then a Reshape to 48 values: only a 4x4 RGB image fits
    nodes = [
        placeholder("x", [-1, -1, -1, 3]),
        const("shape", "DT_INT32"),
        node("out", "Reshape", ["x", "shape"], T=attr_type()),
    ]
    model = save_model(tmp_path / "reshape", nodes, {"shape": np.array([1, 48], np.int32)})
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 5, 3), np.float32))
    line = fails(capsys, [str(model), "--input", str(tmp_path / "x.npy"), "--backend", "cpu"], 1)
    assert f"{model} failed on the inputs 'x' [1, 4, 5, 3]: " in line and "reshape" in line.lower()


def test_pillow_is_optional(tmp_path, rgb_model, monkeypatch, capsys):
    (tmp_path / "photo.png").write_bytes(b"whatever")
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` fails as without Pillow
    line = fails(capsys, [str(rgb_model), "--input", str(tmp_path / "photo.png")], 1)
    assert "photo.png: reading an image needs Pillow (pip install 'ndflow[image]')" in line
    assert line.endswith("or pass the input as an .npy file")


# -- images: channels, size and value range --------------------------------------------------------
@pytest.fixture
def pil():
    return pytest.importorskip("PIL.Image")


def gradient_image(pil, path: Path, width: int = 4, height: int = 4) -> Path:
    """An RGB image whose red runs 0..255 over the pixels, green the other way, blue 128."""
    n = width * height
    red = np.linspace(0, 255, n).round().astype(np.uint8).reshape(height, width)
    pixels = np.stack([red, 255 - red, np.full_like(red, 128)], axis=-1)
    pil.fromarray(pixels, "RGB").save(path)
    return path


def test_corrupt_image(tmp_path, rgb_model, pil, capsys):
    (tmp_path / "photo.png").write_bytes(b"not an image at all")
    line = fails(capsys, [str(rgb_model), "--input", str(tmp_path / "photo.png")], 1)
    assert f"--input {tmp_path / 'photo.png'}: not a readable image (cannot identify image file" in line
    gradient_image(pil, tmp_path / "cut.png", 64, 64)
    (tmp_path / "cut.png").write_bytes((tmp_path / "cut.png").read_bytes()[:80])  # truncated
    assert "cut.png: not a readable image (" in fails(capsys, [str(rgb_model), "--input", str(tmp_path / "cut.png")], 1)


def test_channels_follow_the_model(tmp_path, pil, capsys):
    image = gradient_image(pil, tmp_path / "photo.png")
    gray = np.asarray(pil.open(image).convert("L"), np.float32) / 255.0
    want = {1: gray[None, ..., None], 3: np.asarray(pil.open(image), np.float32)[None] / 255.0}
    want[4] = np.concatenate([want[3], np.ones((1, 4, 4, 1), np.float32)], axis=-1)  # opaque alpha
    for channels, arr in want.items():
        got = load_image(str(image), [1, 4, 4, channels], "float32")
        assert got.shape == (1, 4, 4, channels) and got.dtype == np.float32
        np.testing.assert_array_equal(got, arr)
        assert (
            load_image(str(image), [-1, -1, -1, -1], "float32", ImageOptions(channels=channels)).shape[-1] == channels
        )
    assert load_image(str(image), None, "float32").shape == (1, 4, 4, 3)  # an unknown shape: RGB, batch of one
    assert load_image(str(image), [4, 4, 1], "float32").shape == (4, 4, 1)  # no batch dimension
    # end to end: a grayscale model gets one channel, whatever the image
    model = identity_model(tmp_path / "gray", [1, 4, 4, 1])
    inputs, (low, high, mean) = output_values(capsys, [str(model), "--input", str(image)])
    assert inputs == "inputs: x[1, 4, 4, 1]:float32" and mean == pytest.approx(float(gray.mean()), abs=1e-5)


def test_channels_that_cannot_be_reconciled(tmp_path, rgb_model, pil, capsys):
    image = str(gradient_image(pil, tmp_path / "photo.png"))
    line = fails(capsys, [str(identity_model(tmp_path / "gray", [1, 4, 4, 1])), "--input", image, "--channels", "3"], 1)
    assert "the 4x4 image makes an input of shape [1, 4, 4, 3] (--channels 3, --resize stretch)" in line
    assert "does not fit input 'x' of shape [1, 4, 4, 1]" in line
    line = fails(capsys, [str(identity_model(tmp_path / "five", [1, 4, 4, 5])), "--input", image], 1)
    assert "input 'x' of shape [1, 4, 4, 5] has 5 channels; an image has 1 (grayscale), 3 (RGB) or 4 (RGBA)" in line
    line = fails(capsys, [str(identity_model(tmp_path / "flat", [-1, 48])), "--input", image], 1)
    assert "a 4x4 image does not fit input 'x' of shape [-1, 48]: an image input is [batch, height, width" in line
    line = fails(capsys, [str(identity_model(tmp_path / "two", [2, 4, 4, 3])), "--input", image], 1)
    assert "makes an input of shape [1, 4, 4, 3]" in line and "input 'x' of shape [2, 4, 4, 3]" in line


def test_scale(tmp_path, rgb_model, pil, capsys):
    image = str(gradient_image(pil, tmp_path / "photo.png"))
    for flags, low, high in [
        ([], 0.0, 1.0),
        (["--scale", "0-1"], 0.0, 1.0),
        (["--scale", "-1-1"], -1.0, 1.0),
        (["--scale=-1-1"], -1.0, 1.0),
        (["--scale", "0-255"], 0.0, 255.0),
    ]:
        inputs, (got_low, got_high, mean) = output_values(capsys, [str(rgb_model), "--input", image, *flags])
        assert inputs == "inputs: x[1, 4, 4, 3]:float32"
        assert (got_low, got_high) == (low, high), flags
    got = load_image(image, [1, 4, 4, 3], "float32", ImageOptions(scale="-1-1"))
    pixels = np.asarray(pil.open(image), np.float32)[None]
    np.testing.assert_allclose(got, pixels / 127.5 - 1, atol=1e-6)
    # integer inputs take the pixel values as they are; a float range is a usage error
    ints = identity_model(tmp_path / "ints", [1, 4, 4, 3], "DT_INT32")
    inputs, (low, high, _) = output_values(capsys, [str(ints), "--input", image])
    assert inputs == "inputs: x[1, 4, 4, 3]:int32" and (low, high) == (0, 255)
    line = fails(capsys, [str(ints), "--input", image, "--scale", "-1-1"], 2)
    assert "--scale -1-1: input 'x' is int32, which takes the pixel values 0..255" in line


def test_resize(tmp_path, rgb_model, pil, capsys):
    image = gradient_image(pil, tmp_path / "photo.png", 8, 6)
    rgb = pil.open(image).convert("RGB")
    # stretch (the default, as before): to the model's height and width
    got = load_image(str(image), [1, 4, 4, 3], "float32")
    np.testing.assert_array_equal(got, np.asarray(rgb.resize((4, 4)), np.float32)[None] / 255.0)
    # a height or width the model leaves open follows the image's aspect ratio; both open: the image's size
    assert load_image(str(image), [1, 3, -1, 3], "float32").shape == (1, 3, 4, 3)
    assert load_image(str(image), [1, -1, 16, 3], "float32").shape == (1, 12, 16, 3)
    assert load_image(str(image), [1, -1, -1, 3], "float32", ImageOptions(resize="crop")).shape == (1, 6, 8, 3)
    # crop: an 8x4 image, left half white, into 4x4: the middle four columns, no resampling
    halves = np.zeros((4, 8, 3), np.uint8)
    halves[:, :4] = 255
    pil.fromarray(halves, "RGB").save(tmp_path / "halves.png")
    got = load_image(str(tmp_path / "halves.png"), [1, 4, 4, 3], "float32", ImageOptions(resize="crop"))
    np.testing.assert_array_equal(got[0, :, :, 0], np.array([[1, 1, 0, 0]] * 4, np.float32))
    # pad: a white 8x4 image into 4x4 is a 4x2 band between black rows
    pil.fromarray(np.full((4, 8, 3), 255, np.uint8), "RGB").save(tmp_path / "white.png")
    got = load_image(str(tmp_path / "white.png"), [1, 4, 4, 1], "float32", ImageOptions(resize="pad"))
    np.testing.assert_array_equal(got[0, :, :, 0], np.array([[0] * 4, [1] * 4, [1] * 4, [0] * 4], np.float32))
    got = load_image(str(tmp_path / "white.png"), [1, 4, 4, 1], "float32", ImageOptions(scale="-1-1", resize="pad"))
    assert got.min() == -1.0 and got.max() == 1.0  # the borders are black in the chosen range too
    # none: the image's size must be the model's
    line = fails(capsys, [str(rgb_model), "--input", str(image), "--resize", "none"], 1)
    assert "the 8x6 image makes an input of shape [1, 6, 8, 3] (--channels 3, --resize none)" in line
    assert "does not fit input 'x' of shape [1, 4, 4, 3]" in line
    inputs, _ = output_values(
        capsys, [str(identity_model(tmp_path / "any", [1, -1, -1, 3])), "--input", str(image), "--resize", "none"]
    )
    assert inputs == "inputs: x[1, 6, 8, 3]:float32"


def test_predict_through_the_ndflow_command(tmp_path, rgb_model, capsys):
    from ndflow.cli import main as cli_main

    assert cli_main(["predict", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err == f"ndflow predict: error: the model {tmp_path / 'missing'} does not exist\n"
    assert cli_main(["predict", str(rgb_model), "--runs", "1", "--backend", "cpu"]) == 0
    assert "inputs: x[1, 4, 4, 3]:float32" in capsys.readouterr().out
