"""``tools/prepare_gpu_carry.py`` offline (manifest, size limit, model copying, the layers model) and the syntax of
``benchmarks/gpu_check.sh``. Nothing here downloads: the wheels and debs steps need the network and are run by hand.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("prepare_gpu_carry", ROOT / "tools" / "prepare_gpu_carry.py")
pgc = importlib.util.module_from_spec(_spec)
sys.modules["prepare_gpu_carry"] = pgc
_spec.loader.exec_module(pgc)


def _fake_cache(folder: Path) -> Path:
    """A model cache holding a graph model ``tiny`` with two weight files, one in a subfolder."""
    folder.mkdir(parents=True)
    (folder / "sub").mkdir()
    (folder / "tiny.bin").write_bytes(b"\x01" * 40)
    (folder / "sub" / "tiny-2.bin").write_bytes(b"\x02" * 24)
    manifest = [{"paths": ["tiny.bin", "sub/tiny-2.bin"], "weights": []}]
    (folder / "tiny.json").write_text(json.dumps({"format": "graph-model", "weightsManifest": manifest}))
    return folder


def test_copy_graph_model_keeps_the_manifests_weight_names(tmp_path: Path) -> None:
    cache = _fake_cache(tmp_path / "cache")
    model_json = pgc.copy_graph_model(cache, "tiny", tmp_path / "models")
    assert model_json == tmp_path / "models" / "tiny" / "model.json"
    assert json.loads(model_json.read_text()) == json.loads((cache / "tiny.json").read_text())
    assert (tmp_path / "models" / "tiny" / "tiny.bin").read_bytes() == b"\x01" * 40
    assert (tmp_path / "models" / "tiny" / "sub" / "tiny-2.bin").read_bytes() == b"\x02" * 24
    before = model_json.stat().st_mtime_ns
    pgc.copy_graph_model(cache, "tiny", tmp_path / "models")  # again: equal files are kept
    assert model_json.stat().st_mtime_ns == before


def test_copy_graph_model_errors_name_the_model_and_file(tmp_path: Path) -> None:
    cache = _fake_cache(tmp_path / "cache")
    with pytest.raises(pgc.CarryError, match=r"model absent: .*absent\.json not found"):
        pgc.copy_graph_model(cache, "absent", tmp_path / "models")
    (cache / "sub" / "tiny-2.bin").unlink()
    with pytest.raises(pgc.CarryError, match=r"model tiny: weight file .*tiny-2\.bin not found"):
        pgc.copy_graph_model(cache, "tiny", tmp_path / "models")
    (cache / "evil.json").write_text(json.dumps({"weightsManifest": [{"paths": ["../outside.bin"]}]}))
    with pytest.raises(pgc.CarryError, match=r"model evil: weight path '\.\./outside\.bin' leaves"):
        pgc.copy_graph_model(cache, "evil", tmp_path / "models")


def _filled(dest: Path) -> Path:
    pgc.copy_graph_model(_fake_cache(dest.parent / "cache"), "tiny", dest / "models")
    (dest / "wheels").mkdir(parents=True)
    (dest / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (dest / "site").mkdir()  # made on the GPU machine: not carried, not listed
    (dest / "site" / "x.py").write_text("")
    return dest


def test_manifest_lists_every_carried_file_and_checks_clean(tmp_path: Path) -> None:
    dest = _filled(tmp_path / "carry")
    manifest = pgc.write_manifest(dest, {"tool": "test"})
    assert sorted(manifest["files"]) == ["models/tiny/model.json", "models/tiny/sub/tiny-2.bin",
                                         "models/tiny/tiny.bin", "wheels/demo-1.0-py3-none-any.whl"]  # fmt: skip
    assert manifest["files"]["wheels/demo-1.0-py3-none-any.whl"] == {
        "size": 5,
        "sha256": hashlib.sha256(b"wheel").hexdigest(),
    }
    assert manifest["total_bytes"] == sum(f["size"] for f in manifest["files"].values())
    assert json.loads((dest / "manifest.json").read_text()) == manifest
    assert pgc.check(dest) == []
    assert pgc.main(["--dest", str(dest), "--check"]) == 0


def test_check_reports_missing_changed_and_unlisted_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    dest = _filled(tmp_path / "carry")
    assert pgc.check(dest) == [f"{dest / 'manifest.json'}: no manifest (run: python tools/prepare_gpu_carry.py)"]
    pgc.write_manifest(dest)
    (dest / "models" / "tiny" / "tiny.bin").unlink()
    (dest / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"WHEEL")
    (dest / "models" / "tiny" / "sub" / "tiny-2.bin").write_bytes(b"short")
    (dest / "debs").mkdir()
    (dest / "debs" / "extra.deb").write_bytes(b"deb")
    assert pgc.check(dest) == [
        "models/tiny/sub/tiny-2.bin: 5 bytes, manifest says 24",
        "models/tiny/tiny.bin: missing",
        "wheels/demo-1.0-py3-none-any.whl: sha256 differs from the manifest",
        "debs/extra.deb: not in the manifest",
    ]
    assert pgc.main(["--dest", str(dest), "--check"]) == 1
    assert "models/tiny/tiny.bin: missing" in capsys.readouterr().out


def test_a_total_over_the_limit_fails_before_writing(tmp_path: Path) -> None:
    dest = _filled(tmp_path / "carry")
    with pytest.raises(pgc.CarryError, match=r"holds 0\.0 MiB, over the 0 MiB limit"):
        pgc.write_manifest(dest, limit=10)
    assert not (dest / "manifest.json").exists()
    with pytest.raises(pgc.CarryError, match=r"61\.0 MiB, over the 60 MiB limit"):
        pgc.check_size(61 * 2**20)
    pgc.check_size(60 * 2**20)


def test_wheel_requirements_pin_this_environment_and_leave_out_the_gpu_machines_own() -> None:
    pytest.importorskip("wgpu")
    from importlib import metadata

    reqs = pgc.wheel_requirements()
    assert f"wgpu=={metadata.version('wgpu')}" in reqs
    assert f"cffi=={metadata.version('cffi')}" in reqs
    names = {r.partition("==")[0] for r in reqs}
    assert not names & {"numpy", "torch", "pytest", "pillow", "rubicon-objc"}


def test_stale_wheels_are_dropped_and_present_ones_kept(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "demo-1.0-py3-none-any.whl").write_bytes(b"a")
    (wheels / "demo-0.9-py3-none-any.whl").write_bytes(b"b")
    (wheels / "gone-2.0-py3-none-any.whl").write_bytes(b"c")
    assert pgc.download_wheels(wheels, ["demo==1.0"]) == []  # nothing to fetch: no pip run
    assert sorted(p.name for p in wheels.iterdir()) == ["demo-1.0-py3-none-any.whl"]


def test_the_layers_model_saves_and_loads_back(tmp_path: Path) -> None:
    import ndflow as nf

    folder = tmp_path / "mlp-layers"
    model_json = pgc.save_layers_model(folder)
    assert model_json == folder / "model.json"
    assert json.loads(model_json.read_text())["format"] == "layers-model"
    loaded = nf.layers.load_layers_model(str(model_json))
    try:
        y = nf.tidy(lambda: loaded.predict(nf.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32))))
        values = y.numpy()
        y.dispose()
    finally:
        loaded.dispose()
    y = values
    assert y.shape == (2, 10)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)
    again = pgc.save_layers_model(tmp_path / "again")  # seeded: the same weights each time
    shards = sorted(folder.glob("*.bin"))
    assert shards and [p.read_bytes() for p in shards] == [p.read_bytes() for p in sorted(again.parent.glob("*.bin"))]
    before = model_json.stat().st_mtime_ns
    pgc.save_layers_model(folder)  # a loadable model already there is kept
    assert model_json.stat().st_mtime_ns == before


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not found")
def test_gpu_check_sh_is_valid_bash() -> None:
    done = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    usage = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: bash benchmarks/gpu_check.sh OUTDIR" in usage.stderr
