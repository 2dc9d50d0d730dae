"""ndflow's ``torch`` backend vs the same graph model hand-written in eager PyTorch (``torch_eager.py``).

    python benchmarks/torch_models.py [NAME ...] [--runs 10] [--warmup 2] [--backends torch,cpu]

For each human model whose op types the eager reference covers (the others are listed with the ops it
lacks), on TF.js's dumped input (``benchmarks/models.py`` makes the dumps): both outputs are compared with
TF.js cpu's (max |difference| / max |TF.js value|; the reference must match too, or its time means
nothing), then ndflow and the reference are timed in alternating runs (median ms after warm-up, outputs
read back to numpy). The ratio is ndflow's time over the reference's (issue 10's target: at most 1.5x).
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin for a while after each torch op; measured in one process next to the cpu
# backend (OpenBLAS threads), the spinning made cpu figures up to 10x too slow. Passive waiting ends that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from models import DUMPS, MODELS, RTOL, _execute, available, load_output, rel_error
from torch_eager import EagerModel, UnsupportedError

import ndflow as nf


@dataclass
class EagerRow:
    """One model: errors and median times of the eager reference and of each ndflow backend."""

    name: str
    eager_error: float | None = None
    eager_ms: float | None = None
    errors: dict[str, float] = field(default_factory=dict)
    ndflow_ms: dict[str, float] = field(default_factory=dict)
    problem: str = ""


def _timed(run: Any) -> float:
    start = time.perf_counter()
    outs = run()
    for t in outs:
        np.asarray(t.data_sync() if isinstance(t, nf.Tensor) else t.numpy())
    elapsed = (time.perf_counter() - start) * 1000
    if outs and isinstance(outs[0], nf.Tensor):
        nf.dispose(outs)
    return elapsed


def measure(name: str, backends: list[str], runs: int, warmup: int) -> EagerRow:
    """The reference, then each ndflow backend timed against it in alternating runs."""
    from ndflow.converter import load_graph_model

    row = EagerRow(name)
    folder = DUMPS / name
    if not (folder / "cpu_outputs.json").exists():
        row.problem = "no TF.js dump (run benchmarks/models.py on it first)"
        return row
    ref = json.loads((folder / "cpu_outputs.json").read_text())
    names = [o["name"] for o in ref["outputs"]]
    arrays = {s["name"]: np.load(folder / s["file"]) for s in ref["inputs"]}
    try:
        eager = EagerModel(str(MODELS / f"{name}.json"), names)
    except UnsupportedError as exc:
        row.problem = str(exc)
        return row
    outs = eager(arrays)
    want = [load_output(folder, rec) for rec in ref["outputs"]]
    row.eager_error = max((rel_error(o.numpy(), w) for o, w in zip(outs, want, strict=True)), default=0.0)
    if row.eager_error > RTOL:
        row.problem = f"the eager reference does not match TF.js (error {row.eager_error:.1e})"
        return row
    eager_times: list[float] = []
    previous = nf.get_backend()
    try:
        for backend in backends:
            nf.set_backend(backend)
            model = load_graph_model(str(MODELS / f"{name}.json"))
            feeds = {s["name"]: nf.tensor(arrays[s["name"]], s["shape"], s["dtype"]) for s in ref["inputs"]}
            try:
                needs_async = model.needs_async()
                got = _execute(model, feeds, names, needs_async)
                row.errors[backend] = max((rel_error(t.numpy(), w) for t, w in zip(got, want, strict=True)))
                nf.dispose(got)
                mine = []
                for i in range(warmup + runs):
                    t_nf = _timed(lambda: _execute(model, feeds, names, needs_async))  # noqa: B023
                    t_eager = _timed(lambda: eager(arrays))
                    if i >= warmup:
                        mine.append(t_nf)
                        eager_times.append(t_eager)
                row.ndflow_ms[backend] = statistics.median(mine)
            finally:
                nf.dispose(list(feeds.values()))
                model.dispose()
    finally:
        nf.set_backend(previous)
    row.eager_ms = statistics.median(eager_times) if eager_times else None
    return row


def table(rows: list[EagerRow], backends: list[str]) -> str:
    """Markdown: times, ratios and errors per model (covered models first)."""
    head = (["model", "eager PyTorch ms"] + [f"ndflow {b} ms" for b in backends] + [f"{b} / eager" for b in backends]
            + ["eager error vs TF.js cpu"] + [f"{b} error" for b in backends])  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.eager_ms is None:
            continue
        cells = ([r.name, f"{r.eager_ms:.2f}"] + [f"{r.ndflow_ms[b]:.2f}" for b in backends]
                 + [f"{r.ndflow_ms[b] / r.eager_ms:.2f}x" for b in backends] + [f"{r.eager_error:.1e}"]
                 + [f"{r.errors[b]:.1e}" for b in backends])  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: list[EagerRow], backends: list[str], target: float = 1.5) -> str:
    """Geometric mean ratio per backend, the models within ``target``, and the models not covered."""
    done = [r for r in rows if r.eager_ms is not None]
    lines = []
    for b in backends:
        ratios = [r.ndflow_ms[b] / r.eager_ms for r in done]
        if ratios:
            geo = float(np.exp(np.mean(np.log(ratios))))
            met = sum(x <= target for x in ratios)
            spread = f"best {min(ratios):.2f}x, worst {max(ratios):.2f}x"
            lines.append(
                f"- ndflow {b} / eager PyTorch: geometric mean {geo:.2f}x over {len(ratios)} models ({spread}); "
                f"{met}/{len(ratios)} within {target}x"
            )
    lines += [f"- {r.name}: {r.problem}" for r in rows if r.eager_ms is None]
    return "\n".join(lines)


def run_all(names: list[str], backends: list[str], runs: int, warmup: int) -> list[EagerRow]:
    """Every named model (all in the cache when none is), printing a line per model as it goes."""
    rows = []
    for name in names or sorted(q.stem for q in MODELS.glob("*.json")):
        row = measure(name, backends, runs, warmup)
        times = " ".join(f"{b}={row.ndflow_ms[b]:.2f}ms" for b in row.ndflow_ms)
        eager = "-" if row.eager_ms is None else f"{row.eager_ms:.2f}ms"
        print(f"{name}: eager={eager} {times} {row.problem}", flush=True)
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="model names (default: all in the cache)")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--backends", default="torch", help="ndflow backends to time against the reference")
    args = p.parse_args()
    backends, notes = available([b for b in args.backends.split(",") if b])
    for note in notes:
        print(note)
    if not backends:
        raise SystemExit("no ndflow backend to measure")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.runs} alternating runs")
    rows = run_all(args.names, backends, args.runs, args.warmup)
    print()
    print(table(rows, backends))
    print()
    print(summary(rows, backends))


if __name__ == "__main__":
    main()
