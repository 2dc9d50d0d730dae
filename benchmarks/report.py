"""Run the benchmarks and write docs/performance.md: the tables, the machine, and issue 10's targets met or not.

    python tools/gen_models_doc.py                       # the models table (long: TF.js and ndflow, all models)
    python benchmarks/report.py [--quick]                # the rest, then the page (models from their saved rows)

The models table is read from the rows ``benchmarks/models.py`` saved beside each model's TF.js dump (run
``tools/gen_models_doc.py`` or ``benchmarks/models.py`` first); everything else is measured here, in this
order: import time and the default backend (``import_time.py``), per-op overhead (``overhead.py``), the
training step (``train.py``), the torch backend against eager PyTorch on the human models
(``torch_models.py``), and ``ndflow bench`` on the default MobileNetV2-class model. ``--quick`` shortens every
run (for a smoke test; the page says so).
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin for a while after each torch op; measured in one process next to the cpu
# backend (OpenBLAS threads), the spinning made cpu figures up to 10x too slow. Passive waiting ends that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime
import re
import statistics
import sys
from pathlib import Path

import import_time
import models
import overhead
import torch_models
import train
from machine import describe, load

import ndflow as nf
from ndflow.cli.bench import DEFAULT_MODEL, bench, default_model, report

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"


INTROS = {
    "Import time and the default backend": (
        "`import ndflow` and `import numpy` in fresh interpreters (median of interleaved runs), with bytecode as "
        "the environment has it and cached; what `import ndflow` loads, the backend the engine chooses on first "
        "use and the first op's time; then small workloads on every backend, interleaved, with the ratio to the "
        "default (why it is the default: docs/torch.md, choosing the default backend)."
    ),
    "Per-op dispatch overhead": (
        "Microseconds per op on 1-element (tiny) and 32x32 (small) float32 tensors, output disposed; the library "
        "column is the call the kernel makes (numpy for `cpu`, torch for `torch`) on the very arrays it reads, so "
        "the overhead column is ndflow's own cost: argument checks, dispatch, data store, bookkeeping. Best of "
        "alternating runs."
    ),
    "Training step": (
        "conv 3x3 (8) + relu, max-pool, conv 3x3 (16) + relu, dense 10 + softmax on 28x28x1: forward, backward "
        "and SGD update, the loss read back. ndflow through the Layers API (`train_on_batch`) and through "
        "`nf.train` (`optimizer.minimize`) against the same model in eager PyTorch (NCHW, `torch.optim.SGD`), "
        "from the same initial weights (the first losses agree)."
    ),
    "`torch` backend vs eager PyTorch": (
        "Each human model whose op types `benchmarks/torch_eager.py` covers, run as hand-written eager PyTorch "
        "would run it (direct `torch.nn.functional` calls on channels_last data under `torch.inference_mode()`, "
        "weights prepared once, no ndflow engine), against ndflow's `torch` backend, alternating runs, outputs "
        "read back. Both match TF.js cpu (error columns); the models not covered are listed with the ops "
        "missing."
    ),
    "`ndflow bench` on the default model": (
        "Per-inference median, FLOPs counted from the shapes each convolution and matrix product ran with, "
        "effective GFLOP/s, and the kernel profile of one run (`nf.profile`) summed per kernel."
    ),
    "Human models vs TF.js wasm": (
        "From the rows `tools/gen_models_doc.py` saved (see `docs/models.md` for the columns); TF.js 4.22's wasm "
        "backend (XNNPACK) timed in the same run as ndflow."
    ),
}


def yes(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def models_section(backends: list[str]) -> tuple[str, list[str]]:
    rows = [r for r in (models.load_row(p.stem) for p in sorted(models.MODELS.glob("*.json"))) if r is not None]
    if not rows:
        return "No saved model rows: run `python tools/gen_models_doc.py` first.\n", []
    have = [b for b in backends if any(r.ndflow_ms.get(b) is not None for r in rows)]
    text = models.table(rows, ["wasm"], have) + "\n\n" + models.summary(rows, have) + "\n"
    targets = []
    ratios = [x for x in (r.ratio("cpu") for r in rows) if x is not None]
    if ratios:
        met = sum(x <= 0.3 for x in ratios)
        targets.append(
            f"| `cpu` at most 0.3x TF.js wasm on every human model | {met}/{len(ratios)} models; median "
            f"{statistics.median(ratios):.2f}x | {yes(met == len(ratios))} |"
        )
    return text, targets


def overhead_section(n: int, repeat: int) -> tuple[str, list[str]]:
    parts, targets = [], []
    for name in [b for b in nf.engine().backend_names() if nf.find_backend(b) is not None]:
        library, results = overhead.measure(name, n, repeat)
        parts.append(overhead.table(name, library, results) + "\n")
        parts.append(overhead.summary(name, results) + "\n")
        tiny = [r.overhead_us for r in results if r.size == overhead.TINY and r.overhead_us is not None]
        if tiny:
            med = statistics.median(tiny)
            targets.append(
                f"| per-op overhead under 3 us for tiny ops (`{name}`) | median {med:.2f} us | {yes(med < 3)} |"
            )
        if name == "torch":
            ratios = [r.ratio for r in results if r.ratio is not None]
            med = statistics.median(ratios)
            targets.append(
                f"| issue 8: `torch` backend within 1.5x of torch on small ops | median {med:.2f}x, "
                f"max {max(ratios):.2f}x | {yes(max(ratios) < 1.5)} |"
            )
    return "\n".join(parts), targets


def train_section(quick: bool) -> tuple[str, list[str]]:
    args = train.parser().parse_args(["--steps", "3" if quick else "20", "--warmup", "1" if quick else "3"])
    results = train.run_all(args)
    ratios = train.ratios(results)
    targets = [
        f"| training step within 2x of eager PyTorch (`{b}`, {way}) | {r:.2f}x | {yes(r <= 2)} |"
        for (b, way), r in ratios.items()
    ]
    head = f"Batch {args.batch}, {args.optimizer}, median of {args.steps} alternating steps after {args.warmup}.\n\n"
    return head + train.table(results) + "\n", targets


def eager_section(quick: bool, runs: int) -> tuple[str, list[str]]:
    backends, _ = models.available(["torch"])
    if not backends:
        return "The torch backend is not installed here.\n", []
    names = ["emotion", "blazeface"] if quick else []
    rows = torch_models.run_all(names, backends, 2 if quick else runs, 1)
    done = [r for r in rows if r.eager_ms is not None]
    targets = []
    if done:
        ratios = [r.ndflow_ms["torch"] / r.eager_ms for r in done]
        geo = statistics.geometric_mean(ratios)
        met = sum(x <= 1.5 for x in ratios)
        targets.append(
            f"| `torch` within 1.5x of the model hand-written in eager PyTorch | {met}/{len(ratios)} models; "
            f"geometric mean {geo:.2f}x | {yes(met == len(ratios))} |"
        )
    text = torch_models.table(rows, backends) + "\n\n" + torch_models.summary(rows, backends) + "\n"
    return text, targets


def import_section(quick: bool) -> tuple[str, list[str]]:
    table, medians = import_time.import_section(3 if quick else 15)
    workloads = import_time.workload_section(None, 3 if quick else 15, 1 if quick else 3)
    worst = max(medians.values())
    ms = f"{worst * 1e3:.0f} ms"
    targets = [f"| `import ndflow` under 0.5 s (no optional library loaded) | {ms} | {yes(worst < 0.5)} |"]
    return table + "\n\n" + workloads + "\n", targets


def bench_section(quick: bool) -> tuple[str, list[str]]:
    path = default_model()
    if not path.exists():
        return f"{DEFAULT_MODEL} is not in the cache (`python tools/fetch_models.py`).\n", []
    parts, targets = [], []
    for name in [b for b in ("cpu", "torch") if nf.find_backend(b) is not None]:
        result = bench(str(path), name, runs=2 if quick else 10, warmup=1 if quick else 2)
        parts.append("```\n$ ndflow bench --backend " + name + "\n" + report(result, top=8) + "\n```\n")
        rate = result.gflops_per_s
        targets.append(
            f"| MobileNetV2-class model ({DEFAULT_MODEL}) at least 40 GFLOP/s (`{name}`) | {rate:.1f} GFLOP/s "
            f"({result.median_ms:.1f} ms) | {yes(rate >= 40)} |"
        )
    return "\n".join(parts), targets


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short runs (a smoke test of the script)")
    p.add_argument("--out", default=str(DOC), help="where to write the page")
    p.add_argument("--n", type=int, default=10_000, help="calls per timed run of the overhead benchmark")
    p.add_argument("--model-runs", type=int, default=10, help="alternating runs per model against eager PyTorch")
    args = p.parse_args()
    sections = []
    targets: list[str] = []
    steps = [
        ("Import time and the default backend (`benchmarks/import_time.py`)", lambda: import_section(args.quick)),
        ("Per-op dispatch overhead (`benchmarks/overhead.py`)",
         lambda: overhead_section(1000 if args.quick else args.n, 2 if args.quick else 5)),
        ("Training step (`benchmarks/train.py`)", lambda: train_section(args.quick)),
        ("`torch` backend vs eager PyTorch (`benchmarks/torch_models.py`)",
         lambda: eager_section(args.quick, args.model_runs)),
        ("`ndflow bench` on the default model", lambda: bench_section(args.quick)),
        ("Human models vs TF.js wasm (`benchmarks/models.py`)", lambda: models_section(["cpu", "torch"])),
    ]  # fmt: skip
    loads = []
    for title, run in steps:
        print(f"== {title}", file=sys.stderr, flush=True)
        loads.append(load())
        text, met = run()
        sections.append(f"## {title}\n\n{INTROS[title.split(' (')[0]]}\n\n{text}")
        targets += met
    head = (
        "# Performance\n\n"
        f"Measured {datetime.date.today().isoformat()} on {describe()}"
        f"{' (quick smoke-test runs: not figures to quote)' if args.quick else ''}. Every figure is a median or best "
        "of repeated runs, and the ratios are taken within one run (the two sides alternate), but the machine "
        f"was shared with other work while measuring ({', '.join(loads)} at the start of each section, in "
        "order): treat single numbers as indicative. Regenerate with "
        "`python tools/gen_models_doc.py && python benchmarks/report.py`.\n\n"
        "## Issue 10's targets\n\n| target | measured | |\n|---|---|---|\n" + "\n".join(targets) + "\n\n"
    )
    generated = {title for title, _ in steps} | {"Issue 10's targets"}
    kept = _other_sections(Path(args.out), generated)  # sections other benchmarks write (peers, cold start, ...)
    Path(args.out).write_text(head + "\n".join(sections) + ("\n" + "\n".join(kept) if kept else ""))
    print(f"wrote {args.out}", file=sys.stderr)


def _other_sections(path: Path, generated: set[str]) -> list[str]:
    """The ``## `` sections of the page at ``path`` that this script does not write, in their order."""
    if not path.exists():
        return []
    parts = re.split(r"(?m)^(?=## )", path.read_text())
    return [part.rstrip("\n") + "\n" for part in parts[1:] if part[3:].split("\n", 1)[0].strip() not in generated]


if __name__ == "__main__":
    main()
