"""``ndflow predict``: seeded inputs identical to the TF.js oracle's, outputs printed, .npy inputs, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gm_helpers import expected, fixture

from ndflow.converter.cli_predict import input_shape, main, seeded, seeded_input


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


def test_predict_errors(tmp_path):
    with pytest.raises(SystemExit, match="needs Pillow|image"):
        try:
            import PIL  # noqa: F401

            pytest.skip("Pillow is installed here")
        except ImportError:
            main([str(fixture("basic")), "--input", str(tmp_path / "photo.jpg")])
    with pytest.raises(SystemExit, match="has 1 inputs, got 2"):
        main([str(fixture("basic")), "--input", "a.npy", "--input", "b.npy"])
    with pytest.raises(SystemExit, match="backend 'nope' is not available"):
        main([str(fixture("basic")), "--backend", "nope"])
    layers = tmp_path / "layers.json"
    layers.write_text(json.dumps({"modelTopology": {"class_name": "Sequential", "config": {}}, "weightsManifest": []}))
    import ndflow as nf

    if getattr(nf, "load_layers_model", None) is None:
        with pytest.raises(SystemExit, match="layers model, and this ndflow has no nf.load_layers_model"):
            main([str(layers)])


def test_coroutines_run_on_one_kept_loop():
    """Timed loops of ``execute_async`` runs share one event loop (``asyncio.run`` makes one per call)."""
    import asyncio

    from ndflow.converter.cli_predict import run_coroutine

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
