"""A prepared check of ndflow's GPU backends, run in one go on a lent GPU machine (docs/gpu.md).

    python benchmarks/gpu_check.py OUTDIR [--device auto|cpu] [--models DIR] [--quick] [--budget-s 240]

Writes ``OUTDIR/gpu_check.json`` and ``OUTDIR/gpu_check.md``. Steps, each isolated (an exception is recorded
with its type, message and a short traceback, and the next step runs), within a running time budget (steps
that no longer fit are skipped with a note):

1. ``machine``: GPU, driver, torch/CUDA, SM count and the fp32 peak (SMs x max SM clock x 128 lanes x 2),
   wgpu and the webgpu adapter, ndflow and its C modules, VK_DRIVER_FILES / LD_LIBRARY_PATH;
2. ``conformance``: TF.js fixture cases (ops, gradients, graph models) on each backend;
3. ``timings``: matmul, conv2d, the small models at batch 1 and 32, read latency, memory counters;
4. ``goals``: the issue's goals, met / not met / not measured.

``--device cpu`` (or no CUDA) is a dry run: GPU columns say "no GPU"; with ``--device cpu`` webgpu is skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_check_common import GPU_LABELS, Budget, set_flag, use  # noqa: E402
from gpu_check_report import goals, markdown  # noqa: E402
from gpu_check_steps import ROOT, conformance, machine_info, probe_webgpu  # noqa: E402
from gpu_check_timing import timings  # noqa: E402

import ndflow as nf  # noqa: E402

MODEL_CACHE = Path.home() / ".cache" / "ndflow-oracle" / "models" / "human"


def run_step(name: str, fn: Callable[[], Any], budget: Budget, need_s: float) -> dict[str, Any]:
    """Run one step: ``{"status": "ok", "result": ...}``, ``"error"`` with the exception, or ``"skipped"``."""
    if not budget.enough(need_s):
        return {"status": "skipped", "note": f"time budget spent ({budget.left():.0f} s left, {need_s:.0f} s needed)"}
    start = time.perf_counter()
    try:
        out = {"status": "ok", "result": fn()}
    except Exception as exc:  # noqa: BLE001 - the report records it and the next step runs
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        out = {
            "status": "error",
            "error": {"type": type(exc).__name__, "message": str(exc)[:500], "traceback": "".join(tb[-4:])[-2000:]},
        }
    out["seconds"] = round(time.perf_counter() - start, 2)
    print(f"gpu_check: {name}: {out['status']} in {out['seconds']} s ({budget.left():.0f} s left)", flush=True)
    return out


def gpu_backends(device: str) -> tuple[list[str], str, str]:
    """The GPU backend labels to test, the reason torch-cuda is absent, and the webgpu note."""
    if device == "cpu":
        return [], "no GPU (--device cpu)", "not tested (--device cpu)"
    labels = []
    cuda_note = ""
    try:
        from ndflow.backends.torch.device import cuda_available

        if cuda_available():
            labels.append("torch-cuda")
        else:
            cuda_note = "no GPU (torch sees no CUDA device)"
    except Exception as exc:  # noqa: BLE001
        cuda_note = f"no GPU (torch: {type(exc).__name__}: {exc})"
    ok, note = probe_webgpu()
    if ok:
        labels.append("webgpu")
    return labels, cuda_note, note if ok else f"no adapter: {note}"


def default_models() -> Path | None:
    for path in (ROOT / "gpu_carry" / "models", MODEL_CACHE):
        if path.exists():
            return path
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--device", choices=["auto", "cpu"], default="auto")
    parser.add_argument("--models", type=Path, default=None, help="model folder (default gpu_carry/models, else cache)")
    parser.add_argument("--quick", action="store_true", help="small sizes and few runs (tests)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="wall-clock budget for all steps")
    args = parser.parse_args(argv)
    budget = Budget(args.budget_s)
    args.outdir.mkdir(parents=True, exist_ok=True)
    models_dir = args.models if args.models is not None else default_models()

    gpus, cuda_note, webgpu_note = gpu_backends(args.device)
    gpu_run = "torch-cuda" in gpus
    labels = ["cpu", *gpus]
    if gpu_run:  # float32 means float32 on CUDA (flags set once: setting one bumps the flags' version)
        use("torch-cuda")
        set_flag("TORCH_TF32", False)
    nf.set_backend("cpu")
    report: dict[str, Any] = {
        "args": {"device": args.device, "models": str(models_dir), "quick": args.quick, "budget_s": args.budget_s},
        "backends": labels,
        "dry_run": not gpu_run,
        "absent": {
            label: (cuda_note if label == "torch-cuda" else webgpu_note) for label in GPU_LABELS if label not in gpus
        },
        "steps": {},
    }
    steps = report["steps"]
    steps["machine"] = run_step("machine", lambda: machine_info(gpus, args.device, webgpu_note), budget, 5)
    peak = (steps["machine"].get("result") or {}).get("fp32_peak_gflops")
    caps = {"cpu": 8.0 if args.quick else 25.0, "torch-cuda": 35.0, "webgpu": 35.0 if gpu_run else 15.0}
    steps["conformance"] = run_step("conformance", lambda: conformance(labels, budget, args.quick, caps), budget, 20)
    steps["timings"] = run_step(
        "timings", lambda: timings(labels, budget, args.quick, models_dir, peak, gpu_run), budget, 20
    )
    steps["goals"] = run_step("goals", lambda: goals(report), budget, 0)
    report["wall_s"] = round(budget.used(), 1)
    (args.outdir / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    (args.outdir / "gpu_check.md").write_text(markdown(report))
    print(f"gpu_check: wrote {args.outdir / 'gpu_check.md'} in {report['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
