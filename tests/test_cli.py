"""The ``ndflow`` command: ``demo``, ``info``, ``--version``, and ``predict``/``bench`` as the installed command
runs them (their exit status and one-line errors)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ndflow as nf
from ndflow.cli import main

ROOT = Path(__file__).resolve().parent.parent
# The backend a fresh process picks: the highest-priority one that initializes (torch when installed).
DEFAULT = next(name for name in nf.engine().backend_names() if nf.find_backend(name) is not None)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NDFLOW_FLAGS", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "ndflow", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess:
    return run_cli("demo")


def test_demo_exits_zero(demo):
    assert demo.returncode == 0, demo.stderr


def test_demo_sections(demo):
    out = demo.stdout
    assert out.startswith(f"ndflow {nf.__version__} on backend '{DEFAULT}'")
    sections = re.findall(r"^== (.+) ==$", out, flags=re.M)
    assert len(sections) >= 5, sections
    joined = " | ".join(sections).lower()
    for topic in ("tensors", "tidy", "leak", "async", "debug"):
        assert topic in joined, f"no '{topic}' section in {sections}"
    # the sections come in the order of the tour
    order = [joined.index(topic) for topic in ("tensors", "tidy", "async", "debug")]
    assert order == sorted(order)


def test_demo_tensors_and_operators(demo):
    out = demo.stdout
    # a = [[1, 2], [3, 4]] printed in TF.js's layout, and a @ b + 1 with b = [[0, 2], [4, 6]]
    assert "Tensor\n    [[1, 2],\n     [3, 4]]" in out
    assert "Tensor\n    [[9 , 15],\n     [17, 31]]" in out
    assert "a.shape=(2, 2) a.dtype=float32 a.rank=2 a.size=4" in out


def test_demo_memory_counts(demo):
    out = demo.stdout
    before = re.search(r"before: num_tensors=(\d+) num_bytes=(\d+)", out)
    after = re.search(r"after:\s+num_tensors=(\d+) num_bytes=(\d+)", out)
    assert before and after, out
    # tidy keeps only the returned scalar mean: +1 tensor, +4 bytes
    assert int(after[1]) == int(before[1]) + 1
    assert int(after[2]) == int(before[2]) + 4
    # mse of a and b: mean of (1-0)^2, (2-2)^2, (3-4)^2, (4-6)^2 = 6 / 4
    assert "mse = 1.5" in out
    flat = re.search(r"inside tidy: num_tensors (\d+) -> (\d+)", out)
    assert flat and flat[1] == flat[2]
    grown = re.search(r"(\d+) iterations without tidy: num_tensors (\d+) -> (\d+)", out)
    assert grown and int(grown[3]) - int(grown[2]) == 4 * int(grown[1])
    assert "num_tensors=0" in out.splitlines()[-1]  # the tour cleans up after itself


def test_demo_async_read(demo):
    assert re.search(r"await y\.data\(\) -> array\(\[1\.5\], dtype=float32\)", demo.stdout)


def test_demo_debug_mode_output(demo):
    # kernels are logged through the `ndflow` logger (stderr), the NaN/Inf check names the kernel
    log = demo.stderr
    assert re.search(r"BatchMatMul\s+\d+\.\d+ ms", log), log
    assert re.search(r"Softmax\s+\d+\.\d+ ms", log), log
    assert "caught:" in demo.stdout and "'Log'" in demo.stdout


def test_info():
    result = run_cli("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ndflow {nf.__version__}"
    assert any(line.startswith("backends") for line in lines)
    assert re.search(rf"^\s+{DEFAULT} \(active\): \d+ kernels(, .+)?$", result.stdout, flags=re.M)
    assert "flags:" in lines
    flags = lines[lines.index("flags:") + 1 :]
    assert "  DEBUG = False" in flags
    assert "  PROD = False" in flags


def test_info_shows_ndflow_flags_overrides():
    env_result = subprocess.run(
        [sys.executable, "-m", "ndflow", "info"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "NDFLOW_FLAGS": "PROD=true", "PYTHONPATH": str(ROOT)},
    )
    assert env_result.returncode == 0, env_result.stderr
    assert "  PROD = True" in env_result.stdout.splitlines()


def test_no_command_is_a_usage_error():
    result = run_cli()
    assert result.returncode == 2
    assert "usage" in result.stderr.lower()
    bad = run_cli("nonsense")
    assert bad.returncode == 2


def test_main_info_in_process(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ndflow {nf.__version__}\n")
    assert f"{nf.get_backend()} (active)" in out


def test_bench_subcommand_help_and_errors():
    result = run_cli("bench", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ndflow bench")
    for option in ("--backend", "--runs", "--warmup", "--top"):
        assert option in result.stdout
    missing = run_cli("bench", "--runs", "1", "no/such/model.json")
    assert missing.returncode == 2
    assert "no/such/model.json does not exist" in missing.stderr


def test_version():
    for flag in ("--version", "-V"):
        result = run_cli(flag)
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"ndflow {nf.__version__}\n"


def test_predict_help_documents_the_image_options():
    result = run_cli("predict", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ndflow predict")
    text = " ".join(result.stdout.split())
    for option in ("--input FILE", "--channels {auto,1,3,4}", "--scale {auto,0-1,-1-1,0-255}",
                   "--resize {stretch,crop,pad,none}", "1: grayscale, 3: RGB, 4: RGBA", "exit status:"):  # fmt: skip
        assert option in text, option


def test_user_mistakes_are_one_line_without_traceback(tmp_path):
    # as the installed command runs: a process, its exit status and its stderr
    missing = run_cli("predict", str(tmp_path / "model.json"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == f"ndflow predict: error: the model {tmp_path / 'model.json'} does not exist\n"
    (tmp_path / "model.json").write_text("[]")
    bad = run_cli("bench", str(tmp_path), "--runs", "1")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert len(bad.stderr.splitlines()) == 1 and bad.stderr.startswith("ndflow bench: error: "), bad.stderr
    flag = run_cli("predict", str(tmp_path), "--runs", "soon")
    assert flag.returncode == 2
    assert (
        flag.stderr == "ndflow predict: error: argument --runs: invalid int value: 'soon' (see ndflow predict --help)\n"
    )


def test_demo_with_an_unknown_backend(capsys):
    assert main(["demo", "--backend", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ndflow demo: error: --backend 'nope' is not available here (have: ") and err.count("\n") == 1
