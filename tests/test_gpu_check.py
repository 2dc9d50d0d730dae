"""``benchmarks/gpu_check.py`` as a dry run (``--device cpu --quick``): both reports written, every step with a
status, the goals table in the Markdown, well under a minute. The models come from a tmp folder in the
gpu_carry/models layout: a graph-model fixture copied in as ``blazeface`` and a tiny layers model saved by ndflow
as ``mlp-layers``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ndflow as nf
from ndflow import layers

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("machine", "conformance", "timings", "goals")


def _models(folder: Path) -> Path:
    models = folder / "models"
    shutil.copytree(ROOT / "tests" / "fixtures" / "graph_models" / "basic", models / "blazeface")
    model = nf.sequential([layers.dense(units=4, input_shape=[3], activation="relu"), layers.dense(units=2)])
    model.save(str(models / "mlp-layers"))
    model.dispose()
    return models


def test_dry_run_writes_both_reports(tmp_path: Path) -> None:
    models = _models(tmp_path)
    out = tmp_path / "out"
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_check.py"),
            str(out),
            "--device",
            "cpu",
            "--quick",
            "--models",
            str(models),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert elapsed < 45, f"gpu_check --quick took {elapsed:.1f} s"
    report = json.loads((out / "gpu_check.json").read_text())
    for step in STEPS:
        assert report["steps"][step]["status"] == "ok", (step, report["steps"][step])
    assert report["dry_run"] and report["backends"] == ["cpu"]
    conf = report["steps"]["conformance"]["result"]["by_backend"]["cpu"]
    assert conf["passed"] > 0 and conf["failed"] == 0, conf["failures"]
    rows = report["steps"]["timings"]["result"]["models"]
    timed = {r["model"]: r for r in rows if r.get("batch", 1) == 1}
    assert "by_backend" in timed["blazeface"] and "by_backend" in timed["mlp-layers"], timed
    assert timed["facemesh"]["skipped"].startswith("not found")
    assert all(not m["leak"] for m in report["steps"]["timings"]["result"]["memory"].values())
    goals = {g["goal"]: g["status"] for g in report["steps"]["goals"]["result"]}
    assert set(goals.values()) == {"not measured"}
    md = (out / "gpu_check.md").read_text()
    assert "## Goals" in md and "| goal | status | evidence |" in md
    assert "no GPU" in md


def test_a_failing_step_is_recorded_and_the_next_runs(tmp_path: Path, monkeypatch) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_check
        from gpu_check_common import Budget
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    def boom() -> None:
        raise RuntimeError("conformance: broken on purpose")

    entry = gpu_check.run_step("conformance", boom, Budget(60), 0)
    assert entry["status"] == "error" and entry["error"]["type"] == "RuntimeError"
    assert "broken on purpose" in entry["error"]["message"] and "boom" in entry["error"]["traceback"]
    assert gpu_check.run_step("timings", lambda: 1, Budget(0), 5)["status"] == "skipped"
