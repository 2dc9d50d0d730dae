"""The seeds' training example (``examples/train_linear.py``) converges, imported and as a script."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import ndflow as nf

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_linear.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_linear", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_example_converges_without_leaking(backend, seed):
    lines: list[str] = []
    before = nf.memory().num_tensors
    costs, prediction = _load().train(seed=seed, log=lines.append)
    assert nf.memory().num_tensors == before
    assert len(costs) == 10 and len(lines) == 12
    assert costs[-1] < 1e-6 * costs[0] and costs[-1] < 1e-3
    # decreasing until it reaches float32's floor
    assert all(b < a for a, b in zip(costs, costs[1:], strict=False) if a > 1e-6), costs
    assert prediction == pytest.approx(0.4, abs=1e-3)


def test_example_smaller_batches_converge(backend):
    costs, prediction = _load().train(num_batches=60, learning_rate=2e-6, batch_size=1, log=lambda s: None)
    assert prediction == pytest.approx(0.4, abs=1e-3)


def test_example_runs_as_a_script():
    proc = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=True)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("last average cost (0): ") and lines[9].startswith("last average cost (9): ")
    assert float(lines[9].split(": ")[1]) < 1e-3
    assert lines[-1].startswith("input [0.1, 0.2, 0.3] -> ")
    assert float(lines[-1].split("-> ")[1].split()[0]) == pytest.approx(0.4, abs=1e-3)
