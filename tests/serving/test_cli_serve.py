"""``ndflow serve``: a user's mistakes are one error line; the server started as a subprocess on a free loopback
port answers TF Serving requests, logs JSON lines, and stops cleanly on SIGTERM; with ``--workers 2`` both
workers serve and ``/metrics`` sums them (Prometheus multi-process mode)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from serve_helpers import dense_model, free_port, needs_serve, save

from ndflow.cli import main


def test_mistakes_are_one_line(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ndflow serve: error: model missing:") and "does not exist" in err
    (tmp_path / "empty").mkdir()
    assert main(["serve", str(tmp_path / "empty")]) == 2
    assert "has no model.json" in capsys.readouterr().err
    assert main(["serve", "a=x", "a=y"]) == 2
    assert "two models are named 'a'" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--max-batch", "-1"]) == 2
    assert "--max-batch" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--batch-timeout-ms", "soon"]) == 2
    assert "invalid number" in capsys.readouterr().err


def _start(args, env=None):
    cmd = [sys.executable, "-m", "ndflow", "serve", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})  # fmt: skip


def _wait_ready(client, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.communicate()[1][-2000:]}")
        try:
            if client.get("/readyz").status_code == 200:
                return
        except Exception:  # noqa: BLE001  (not listening yet)
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not become ready")


@needs_serve
@pytest.mark.parametrize("workers", [1, 2])
def test_serve_subprocess(tmp_path, workers):
    import httpx

    save(dense_model(), tmp_path / "dense" / "1")
    port = free_port()
    args = [f"clf={tmp_path / 'dense'}", "--port", str(port), "--workers", str(workers), "--max-batch", "4",
            "--poll-s", "0.1"]  # fmt: skip
    proc = _start(args + ["--log-level", "debug"])
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            _wait_ready(client, proc)
            for _ in range(4 * workers):
                r = client.post("/v1/models/clf:predict", json={"instances": [[1, 2, 3], [4, 5, 6]]})
                assert r.status_code == 200 and len(r.json()["predictions"]) == 2
            assert client.post("/v1/models/clf:predict", content=b"{").status_code == 400
            metrics = client.get("/metrics").text
            assert 'ndflow_serve_requests_total{code="200",method="predict",model="clf"}' in metrics
            # a new version is picked up by every worker: new connections (any worker) all see it
            save(dense_model(seed=5), tmp_path / "dense" / "2")
            url = f"http://127.0.0.1:{port}/v1/models/clf/metadata"
            deadline, streak = time.monotonic() + 30, 0
            while streak < 12 and time.monotonic() < deadline:
                streak = streak + 1 if httpx.get(url).json()["model_spec"]["version"] == "2" else 0
            assert streak == 12
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    # uvicorn finishes its graceful shutdown, then exits by the signal it was sent, as a process should
    assert proc.returncode in (0, -signal.SIGTERM), err[-2000:]
    assert "Application shutdown complete" in err
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(r.get("event") == "load" and r.get("model") == "clf" for r in records), err[-2000:]
    assert any(r.get("event") == "predict" and r.get("status") == 400 for r in records)


def test_gc_tuning_freezes_what_is_loaded_and_collects_less_often():
    """``ServeConfig.tune_gc`` (on for ``ndflow serve``): run in a fresh process, since it sets the process's
    collector."""
    code = (
        "import gc; from ndflow.serving.api import _tune_gc; gc.set_threshold(700, 10, 10); _tune_gc(); "
        "print(gc.get_freeze_count() > 1000, gc.get_threshold())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "(20000,", "10,", "10)"]
