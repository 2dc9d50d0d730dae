"""Data-parallel training in 2 processes (torchrun on loopback, gloo) against one process: the same weights
within float rounding; a worker killed mid-job and the job resumed from rank 0's checkpoint."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.distributed
pytest.importorskip("torch.distributed", reason="torch is not installed (pip install 'ndflow[distributed]')")

SCRIPT = Path(__file__).resolve().parent / "dp_train.py"
ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}  # float32 sums in another order


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(out: Path, *args: str, procs: int = 0, restarts: int = 0) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if procs:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs), "--master_addr",
               "127.0.0.1", "--master_port", str(_port()), "--max-restarts", str(restarts)]  # fmt: skip
    else:
        cmd = [sys.executable]
    done = subprocess.run([*cmd, str(SCRIPT), "--out", str(out), *args], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _same(a: Path, b: Path) -> None:
    x, y = np.load(a), np.load(b)
    assert list(x) == list(y)
    for k in x:
        np.testing.assert_allclose(x[k], y[k], **TOLERANCE)


@pytest.mark.parametrize(
    "args",
    [("--model", "dense"), ("--model", "cnn", "--shuffle"), ("--mode", "dataset")],
    ids=["fit-dense", "fit-cnn-shuffled", "fit_dataset"],
)
def test_two_processes_train_as_one(tmp_path, args):
    _run(tmp_path / "one.npz", "--single", *args)
    _run(tmp_path / "two.npz", *args, procs=2)
    _same(tmp_path / "one.npz", tmp_path / "two.npz")
    info = json.loads((tmp_path / "two.npz.json").read_text())
    assert info["stats"]["steps"] == 18 and info["stats"]["comm_s"] > 0


def test_killed_worker_resumes_from_the_checkpoint(tmp_path):
    _run(tmp_path / "ref.npz", "--single", "--shuffle", "--epochs", "4")
    _run(tmp_path / "job.npz", "--shuffle", "--epochs", "4", "--checkpoint-dir", str(tmp_path / "ck"),
         "--kill-epoch", "2", procs=2, restarts=1)  # fmt: skip
    assert (tmp_path / "job.npz.killed").exists()
    info = json.loads((tmp_path / "job.npz.json").read_text())
    assert info["resumed_from"].endswith("epoch-00002") and len(info["history"]["loss"]) == 2
    _same(tmp_path / "ref.npz", tmp_path / "job.npz")
