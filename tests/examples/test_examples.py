"""Every script in ``examples/`` (and ``examples/ported/``, the TF.js programs ported line by line) runs as a
subprocess and prints what its seed document promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples" / "ported").glob("*.py"))
TIMEOUT_S = 120
#: Arguments for the examples that need some to run unattended ({tmp}: a temporary folder).
ARGS: dict[str, list[str]] = {
    "video_loop.py": ["--demo", "--frames", "1000", "--out", "{tmp}/annotated.avi"],
    "sequential_fit_save.py": ["{tmp}/linear-model"],
    "train_digits.py": "--epochs 2 --verbose 0 --tensorboard {tmp}/logs --plot {tmp}/history.png".split(),
}
#: Exit status of an example that cannot run here (the network is needed and unreachable): the test skips.
CANNOT_RUN_HERE = 3


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NDFLOW_FLAGS", None)
    return env


def _run(path: Path) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="ndflow-example-") as tmp:
        args = [a.format(tmp=tmp) for a in ARGS.get(path.name, [])]
        proc = _run_in(path, args)
        # what it wrote under {tmp} (path relative to it -> size), for FILE_CHECKS, before the folder goes
        proc.files = {p.relative_to(tmp).as_posix(): p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()}
        return proc


def _run_in(path: Path, args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, str(path), *args], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT, env=_env()
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, -9, exc.stdout or "", f"killed after {TIMEOUT_S} s")


@pytest.fixture(scope="module")
def outputs() -> dict[str, subprocess.CompletedProcess]:
    """Every example run once, as many at a time as there are CPUs (each is mostly interpreter start-up)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip([p.name for p in EXAMPLES], pool.map(_run, EXAMPLES), strict=True))


def _costs(lines: list[str]) -> list[float]:
    return [float(m.group(2)) for line in lines if (m := re.match(r"last average cost \((\d+)\): (\S+)", line))]


def check_intro_deeplearn(lines: list[str]) -> None:
    assert "mean squared difference: 9.0" in lines
    assert "arrays left by the scope: 0" in lines
    assert "output tensor shape: [1]" in lines
    costs = _costs(lines)
    assert len(costs) == 10 and costs[-1] < costs[0], costs
    inference = lines.index("---inference output---")
    assert lines[inference + 1] == "shape: [1]"
    assert float(lines[inference + 2].removeprefix("value: ")) == pytest.approx(0.4, abs=0.05)
    assert "arrays left at the end: 0" in lines


def check_train_linear(lines: list[str]) -> None:
    costs = _costs(lines)
    assert len(costs) == 10 and costs[-1] < costs[0], costs
    assert lines[-1].startswith("input [0.1, 0.2, 0.3] -> ")
    assert float(lines[-1].split("-> ")[1].split()[0]) == pytest.approx(0.4, abs=1e-3)


def check_leak_demo(lines: list[str]) -> None:
    phases: dict[str, list[int]] = {}
    current = None
    for line in lines:
        if m := re.match(r"== (\w[\w ]*) ==", line):
            current = m.group(1)
            phases[current] = []
        elif m := re.match(r"frame \d+: num_tensors = (\d+)", line):
            phases[current].append(int(m.group(1)))
    leaky, disposed, tidied = phases["leaky"], phases["dispose"], phases["tidy"]
    assert all(b > a for a, b in zip(leaky, leaky[1:], strict=False)), leaky  # growth ...
    assert len(set(disposed)) == 1 and len(set(tidied)) == 1, (disposed, tidied)  # ... then none
    finder = lines[lines.index("== leak finder ==") + 1 :]
    assert finder[0].startswith("3 tensor(s) were dropped without dispose()")
    assert all(re.match(r"  leak_demo\.py:\d+: tensor \d+ float32\[1, 32\]", line) for line in finder[1:4])


def check_backends(lines: list[str]) -> None:
    assert lines[0] == "registered backends (highest priority first):"
    assert any(line.startswith("  cpu") for line in lines)
    assert "cpu: sum(square([1, 2, 3])) = 14.0 (computed on 'cpu')" in lines
    assert "after set_backend('cpu-b'): a is still on 'cpu' (nothing moved yet)" in lines
    assert any(line.startswith("after b = a + 1: a is on 'cpu-b', b on 'cpu-b'") for line in lines)
    assert "memory: num_tensors=0" in lines and "cpu-b" not in lines[-1]  # the demo backend is removed


def check_async_reads(lines: list[str]) -> None:
    assert "await y.data()  -> [7.0, 10.0, 15.0, 22.0]" in lines
    assert "await y.array() -> [[7.0, 10.0], [15.0, 22.0]]" in lines
    assert "gathered sum, mean, max -> [54.0, 13.5, 22.0]" in lines
    ticks = next(line for line in lines if line.startswith("total "))
    assert int(re.search(r"ticker ran (\d+) times", ticks).group(1)) >= 1
    assert any(line.startswith("await a.val(2) -> 30.0") for line in lines)
    assert any(line.startswith("tidy(async fn) -> TypeError") for line in lines)
    assert lines[-1] == "num_tensors at the end: 0"


def check_warmup(lines: list[str]) -> None:
    assert any(line.startswith("first call (cold): wall ") for line in lines)
    assert any(line.startswith("after warm-up: median of 20 runs") for line in lines)
    assert "prediction shape: [32, 10]; rows sum to 1.0000" in lines
    assert lines[-1] == "num_tensors at the end: 0"


def check_debug_mode(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert re.search(r"\[ndflow\] BatchMatMul +\d+\.\d+ ms +2D \[2, 2\]", text)
    assert re.search(r"\[ndflow\] Softmax ", text)
    assert "caught ComputationError: The result of the 'Log' kernel contains Infinity" in text
    assert "math.sum(math.square([1, 2, 3])) = 14.0" in lines
    assert re.search(r"kernels: \['BatchMatMul', 'Relu', 'Mean'\]", text)
    assert lines[-1] == "num_tensors at the end: 0"


def check_video_loop(lines: list[str]) -> None:
    """1,000 frames of the demo clip: a face in each, the tensor count the same after every frame, and back to
    zero at the end."""
    m = re.match(r"frames: (\d+), faces found: (\d+)", next(line for line in lines if line.startswith("frames: ")))
    assert m and int(m.group(1)) == 1000 and int(m.group(2)) >= 950, lines
    m = re.match(r"num_tensors: (\d+) before, (\d+)\.\.(\d+) after each frame, (\d+) at the end", lines[-3])
    assert m, lines
    before, low, high, end = map(int, m.groups())
    assert before == low == high and end == 0, lines
    assert float(lines[-2].split(": ")[1].split()[0]) > 0


def _value(lines: list[str], label: str) -> float:
    """The number printed after ``label`` (the first such line)."""
    line = next(line for line in lines if line.startswith(label))
    return float(line.removeprefix(label).split()[0])


def check_tensors_tidy_memory(lines: list[str]) -> None:
    assert lines[0] == "shape: (2, 2) dtype: float32 rank: 2"
    assert "matMul: [[19.0, 22.0], [43.0, 50.0]]" in lines
    assert _value(lines, "sum(a^2 + b):") == 56 and _value(lines, "mean(a^2):") == 7.5
    assert _value(lines, "tensors after tidy:") == 4 and _value(lines, "tensors before dispose:") == 6
    assert lines[-1] == "tensors after dispose: 0"


def check_sequential_fit_save(lines: list[str]) -> None:
    assert "epochs: 250" in lines
    assert _value(lines, "last loss:") < _value(lines, "first loss:") / 100
    assert _value(lines, "saved weight bytes:") == 8  # a float32 kernel [1, 1] and bias [1]
    assert _value(lines, "prediction for 10:") == pytest.approx(19, abs=0.1)  # y = 2x - 1
    assert lines[-1] == "tensors at the end: 0"


def check_custom_loop_adam(lines: list[str]) -> None:
    losses = [float(m.group(1)) for line in lines if (m := re.match(r"step \d+: loss (\S+)", line))]
    assert len(losses) == 3 and losses[-1] < losses[0] / 1000, losses
    assert _value(lines, "new tensors after 600 steps:") == 8  # Adam's two moments for each of 4 variables
    for name, want in (("a", -0.8), ("b", -0.2), ("c", 0.9), ("d", 0.5)):
        assert _value(lines, f"{name}:") == pytest.approx(want, abs=0.02), lines


def check_graph_model_image(lines: list[str]) -> None:
    assert lines[0] == "model input: [1, 256, 256, 3]"
    assert lines[1] == "image: (256, 256, 3) int32"
    shapes = sorted(line for line in lines if line.startswith("output: "))
    assert shapes == ["output: (1, 384, 1)", "output: (1, 384, 16)", "output: (1, 512, 1)", "output: (1, 512, 16)"]
    assert _value(lines, "best face score:") > 0.75  # the astronaut's face
    assert lines[-1] == "tensors at the end: 0"


def check_data_pipeline(lines: list[str]) -> None:
    assert lines[0] == "batch shapes: (8, 1) (8, 1)"
    assert _value(lines, "last loss:") < _value(lines, "first loss:") / 100
    assert _value(lines, "prediction for 2:") == pytest.approx(8, abs=0.05)  # y = 3x + 2
    assert lines[-1] == "tensors at the end: 0"


def check_train_digits(lines: list[str]) -> None:
    assert _value(lines, "test accuracy:") > 0.5
    assert any(line.startswith("TensorBoard logs: ") for line in lines)
    assert any(line.startswith("training curves: ") for line in lines)
    assert lines[-1] == "tensors left: 0"


def check_train_digits_files(files: dict[str, int]) -> None:
    """``--tensorboard DIR`` left event files under DIR/train and DIR/val; ``--plot`` a PNG."""
    for split in ("train", "val"):
        assert any(
            name.startswith(f"logs/{split}/events.out.tfevents.") and size > 0 for name, size in files.items()
        ), files
    assert files.get("history.png", 0) > 1000, files


CHECKS: dict[str, Callable[[list[str]], None]] = {
    "intro_deeplearn.py": check_intro_deeplearn,
    "train_linear.py": check_train_linear,
    "leak_demo.py": check_leak_demo,
    "backends.py": check_backends,
    "async_reads.py": check_async_reads,
    "warmup.py": check_warmup,
    "debug_mode.py": check_debug_mode,
    "video_loop.py": check_video_loop,
    "tensors_tidy_memory.py": check_tensors_tidy_memory,
    "sequential_fit_save.py": check_sequential_fit_save,
    "custom_loop_adam.py": check_custom_loop_adam,
    "graph_model_image.py": check_graph_model_image,
    "data_pipeline.py": check_data_pipeline,
    "train_digits.py": check_train_digits,
}
#: Checks of the files an example wrote under {tmp}.
FILE_CHECKS: dict[str, Callable[[dict[str, int]], None]] = {"train_digits.py": check_train_digits_files}


def test_every_example_has_a_check():
    assert {p.name for p in EXAMPLES} >= set(CHECKS), "an example listed here is missing from examples/"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_prints_what_it_promises(path: Path, outputs):
    proc = outputs[path.name]
    if proc.returncode == CANNOT_RUN_HERE:
        pytest.skip(f"{path.name} cannot run here: {proc.stderr.strip()}")
    if proc.returncode != 0 and (m := re.search(r"pip install '?ndflow\[(\w+)\]", proc.stderr)):
        pytest.skip(f"{path.name} needs the extra '{m.group(1)}', which is not installed here")
    if proc.returncode != 0 and "NpmUnreachableError" in proc.stderr:
        pytest.skip(f"{path.name} needs a model from npm, and the registry cannot be reached")
    assert proc.returncode == 0, f"{path.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    check = CHECKS.get(path.name)
    if check is not None:  # a new example without a check still has to run cleanly
        check(lines)
    if path.name in FILE_CHECKS:
        FILE_CHECKS[path.name](proc.files)
