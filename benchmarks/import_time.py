"""`import ndflow` time, the backend of first use, and a small model on it next to the other backends.

    python benchmarks/import_time.py [--runs 15] [--reps 15] [--backends cpu,torch,webgpu] [--no-models]

1. Import time: ``import numpy`` (the floor: ndflow needs it) and ``import ndflow``, each in a fresh interpreter
   (this Python), interleaved, median of ``--runs``; timed inside the child (``perf_counter`` around the import)
   and as the child's wall time (interpreter start and exit included). In two bytecode states: as this
   environment has it (with ``PYTHONDONTWRITEBYTECODE=1`` every module's source is compiled at each start) and
   with compiled bytecode cached (``PYTHONPYCACHEPREFIX`` in a temporary directory, filled by one run first),
   which is what an installed package has.
2. The first use, in a fresh interpreter: the optional libraries in ``sys.modules`` after ``import ndflow``
   (none expected: torch, wgpu and numba load on first use), the backend the engine chooses, and the time to
   the first op's value (choosing the backend included).
3. Workloads on each backend that initializes here, interleaved (one run of each backend in turn), median ms
   after a warm-up, with the ratio to the default backend: a small MLP's ``fit`` (32 -> 64 -> 64 -> 10, sgd,
   256 samples in batches of 32: ms per step), a small CNN's ``predict`` (64x64x3, two conv + pool blocks,
   batch 8) and a 32x32 ``add`` (us per op).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from machine import describe, load

OPTIONAL = ("torch", "wgpu", "numba", "scipy")

IMPORT_CHILD = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"

FIRST_USE_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import ndflow as nf
t1 = time.perf_counter()
loaded = [m for m in {optional!r} if m in sys.modules]
x = nf.tensor([1.0, 2.0])
y = x + 1.0
y.data_sync()
t2 = time.perf_counter()
nf.dispose([x, y])
print(json.dumps({{"import_s": t1 - t0, "first_op_s": t2 - t1, "backend": nf.get_backend(), "loaded": loaded,
                  "after_first_op": [m for m in {optional!r} if m in sys.modules]}}))
"""


# ---------------------------------------------------------------------------------------------
# import time
# ---------------------------------------------------------------------------------------------
def child_env(cached: bool, prefix: str) -> dict[str, str]:
    """The child's environment: as this one, or with bytecode written to and read from ``prefix``."""
    environ = dict(os.environ)
    if cached:
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        environ["PYTHONPYCACHEPREFIX"] = prefix
    return environ


def time_import(module: str, environ: dict[str, str]) -> tuple[float, float]:
    """One fresh interpreter importing ``module``: (seconds inside the child, wall seconds of the child)."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_CHILD.format(module=module)],
        env=environ, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    return float(out.stdout.strip().splitlines()[-1]), wall


def import_times(runs: int, cached: bool, prefix: str) -> dict[str, tuple[float, float]]:
    """Median (inside, wall) seconds of ``import numpy`` and ``import ndflow``, runs interleaved."""
    environ = child_env(cached, prefix)
    modules = ("numpy", "ndflow")
    for module in modules:  # warm the disk cache (and, cached, write the bytecode)
        time_import(module, environ)
    samples: dict[str, list[tuple[float, float]]] = {m: [] for m in modules}
    for _ in range(runs):
        for module in modules:
            samples[module].append(time_import(module, environ))
    return {m: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v)) for m, v in samples.items()}


def first_use(cached: bool, prefix: str) -> dict[str, Any]:
    """What a fresh ``import ndflow`` loads, and the first op: its backend and time."""
    code = FIRST_USE_CHILD.format(optional=OPTIONAL)
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(cached, prefix), capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def import_section(runs: int) -> tuple[str, dict[str, float]]:
    """The import table and the first-use table; and the median ``import ndflow`` seconds of each bytecode
    state (``as-is``, ``cached``)."""
    medians: dict[str, float] = {}
    lines = [
        f"`import` in a fresh interpreter (Python {platform.python_version()}), median of {runs} interleaved runs:",
        "",
        "| bytecode | import numpy ms | import ndflow ms | ndflow - numpy ms | numpy wall ms | ndflow wall ms |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="ndflow-pycache-") as prefix:
        as_is = "as the environment has it"
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            as_is += " (PYTHONDONTWRITEBYTECODE=1: compiled at each start)"
        states = [(False, as_is), (True, "cached (an installed package)")]
        firsts = []
        for cached, label in states:
            t = import_times(runs, cached, prefix)
            (np_in, np_wall), (nf_in, nf_wall) = t["numpy"], t["ndflow"]
            medians["cached" if cached else "as-is"] = nf_in
            lines.append(
                f"| {label} | {np_in * 1e3:.0f} | {nf_in * 1e3:.0f} | {(nf_in - np_in) * 1e3:.0f} | "
                f"{np_wall * 1e3:.0f} | {nf_wall * 1e3:.0f} |"
            )
            firsts.append((label, first_use(cached, prefix)))
    lines += ["", "| bytecode | loaded by `import ndflow` | backend of first use | first op ms | loaded after it |",
              "|---|---|---|---|---|"]  # fmt: skip
    for label, info in firsts:
        lines.append(
            f"| {label} | {', '.join(info['loaded']) or 'none'} | {info['backend']} | "
            f"{info['first_op_s'] * 1e3:.0f} | {', '.join(info['after_first_op']) or 'none'} |"
        )
    return "\n".join(lines), medians


# ---------------------------------------------------------------------------------------------
# workloads on each backend
# ---------------------------------------------------------------------------------------------
def mlp(nf: Any) -> Callable[[], float]:
    """A small MLP's fit over 8 batches: ms per step."""
    rng = np.random.default_rng(0)
    model = nf.sequential()
    model.add(nf.layers.dense(units=64, activation="relu", input_shape=[32]))
    model.add(nf.layers.dense(units=64, activation="relu"))
    model.add(nf.layers.dense(units=10, activation="softmax"))
    model.compile(optimizer=nf.train.sgd(0.01), loss="categoricalCrossentropy")
    x = nf.tensor(rng.standard_normal((256, 32)).astype(np.float32))
    y = nf.one_hot(nf.tensor(rng.integers(0, 10, 256).astype(np.int32), dtype="int32"), 10).cast("float32")
    steps = 256 // 32

    def run() -> float:
        start = time.perf_counter()
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
        return (time.perf_counter() - start) * 1e3 / steps

    run.dispose = lambda: (nf.dispose([x, y]), model.dispose())  # type: ignore[attr-defined]
    return run


def cnn(nf: Any) -> Callable[[], float]:
    """A small CNN's predict on a batch of 8: ms per call (output read back)."""
    rng = np.random.default_rng(1)
    model = nf.sequential()
    model.add(nf.layers.conv2d(filters=16, kernel_size=3, activation="relu", input_shape=[64, 64, 3]))
    model.add(nf.layers.max_pooling2d(pool_size=2))
    model.add(nf.layers.conv2d(filters=32, kernel_size=3, activation="relu"))
    model.add(nf.layers.max_pooling2d(pool_size=2))
    model.add(nf.layers.flatten())
    model.add(nf.layers.dense(units=10, activation="softmax"))
    x = nf.tensor(rng.standard_normal((8, 64, 64, 3)).astype(np.float32))

    def run() -> float:
        start = time.perf_counter()
        out = model.predict(x)
        out.data_sync()
        elapsed = (time.perf_counter() - start) * 1e3
        out.dispose()
        return elapsed

    run.dispose = lambda: (x.dispose(), model.dispose())  # type: ignore[attr-defined]
    return run


def add_op(nf: Any) -> Callable[[], float]:
    """100 ``add``s of 32x32 tensors in one tidy, the last read back: us per op."""
    a = nf.ones([32, 32])
    b = nf.ones([32, 32])

    def body() -> None:
        y = a
        for _ in range(100):
            y = nf.add(y, b)
        y.data_sync()

    def run() -> float:
        start = time.perf_counter()
        nf.tidy(body)
        return (time.perf_counter() - start) * 1e6 / 100

    run.dispose = lambda: nf.dispose([a, b])  # type: ignore[attr-defined]
    return run


WORKLOADS: dict[str, tuple[str, Callable[[Any], Callable[[], float]]]] = {
    "MLP fit, ms/step": ("ms", mlp),
    "CNN predict, ms": ("ms", cnn),
    "add 32x32, us/op": ("us", add_op),
}


def workload_section(wanted: list[str] | None, reps: int, warmup: int) -> str:
    import ndflow as nf

    default = nf.get_backend()  # the engine's choice on first use, in this process
    names = wanted or nf.engine().backend_names()
    backends = [n for n in names if nf.find_backend(n) is not None]
    runs: dict[tuple[str, str], Callable[[], float]] = {}
    for backend in backends:
        nf.set_backend(backend)
        for workload, (_, make) in WORKLOADS.items():
            runs[(workload, backend)] = make(nf)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
    for rep in range(warmup + reps):
        for workload in WORKLOADS:
            for backend in backends:  # interleaved: one run of each backend in turn
                nf.set_backend(backend)
                elapsed = runs[(workload, backend)]()
                if rep >= warmup:
                    times[(workload, backend)].append(elapsed)
    for backend in backends:
        nf.set_backend(backend)
        for workload in WORKLOADS:
            runs[(workload, backend)].dispose()  # type: ignore[attr-defined]
    nf.set_backend(default)
    head = "| workload | " + " | ".join(f"{b}{' (default)' if b == default else ''}" for b in backends) + " |"
    lines = [
        f"Default backend here: `{default}` (registered, by priority: {', '.join(nf.engine().backend_names())}). "
        f"Median of {reps} interleaved runs after {warmup}; ratio to `{default}` in brackets.",
        "",
        head,
        "|---" * (len(backends) + 1) + "|",
    ]
    for workload in WORKLOADS:
        base = statistics.median(times[(workload, default)]) if default in backends else None
        cells = []
        for backend in backends:
            med = statistics.median(times[(workload, backend)])
            cells.append(f"{med:.2f}" + (f" ({med / base:.2f}x)" if base else ""))
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=15, help="fresh interpreters per import timing")
    p.add_argument("--reps", type=int, default=15, help="timed runs per workload and backend")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    p.add_argument("--backends", default=None, help="comma-separated (default: every backend that initializes)")
    p.add_argument("--no-models", action="store_true", help="time the imports only")
    return p


def main() -> None:
    args = parser().parse_args()
    print(f"machine: {describe()}; {load()}\n")
    print(import_section(args.runs)[0])
    if not args.no_models:
        print()
        wanted = args.backends.split(",") if args.backends else None
        print(workload_section(wanted, args.reps, args.warmup))


if __name__ == "__main__":
    main()
