"""Small ops' fixed cost: ndflow's cpu backend against numpy and eager PyTorch (CPU), timed in the same run.

    python benchmarks/small_ops.py [--n 4000] [--repeat 7] [--torch-threads N]

Each case runs the ndflow op (output disposed, as a program inside ``tidy`` would), numpy's and torch's call
on the same values, in interleaved runs of ``n`` calls (numpy, torch, ndflow, numpy, ...) after a warm-up; the
table gives each one's median over ``repeat`` runs in microseconds per call and ndflow's ratio to each. The
cases: ``mat_mul`` of square float32 matrices (8, 64, 256), an element-wise add, a small 3x3 convolution and
two reductions. torch runs with its default thread count unless ``--torch-threads`` says otherwise.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from machine import describe, load

import ndflow as nf


@dataclass
class Case:
    """One op: its numpy, torch and ndflow calls (torch None where torch is not installed)."""

    name: str
    numpy: Callable[[], Any]
    torch: Callable[[], Any] | None
    ndflow: Callable[[], Any]


def cpu_features() -> str:
    """AVX-512F and AMX, as /proc/cpuinfo lists them (Linux)."""
    info = Path("/proc/cpuinfo")
    flags: set[str] = set()
    if info.exists():
        for line in info.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    found = [name for flag, name in (("avx512f", "AVX-512"), ("amx_tile", "AMX")) if flag in flags]
    return ", ".join(found) or "no AVX-512"


def run_us(fn: Callable[[], Any], n: int) -> float:
    """One timed run of ``n`` calls, in microseconds per call (garbage collection off)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n * 1e6
    finally:
        gc.enable()


def measure(case: Case, n: int, repeat: int) -> dict[str, float]:
    """Median microseconds per call of each library, from interleaved runs after a warm-up."""
    fns = {"numpy": case.numpy, "torch": case.torch, "ndflow": case.ndflow}
    fns = {k: f for k, f in fns.items() if f is not None}
    for f in fns.values():
        run_us(f, max(1, n // 10))
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            times[k].append(run_us(f, n))
    return {k: statistics.median(v) for k, v in times.items()}


def _conv_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A 'same' 3x3 convolution of NHWC ``x`` by HWIO ``w`` in numpy: padding, windows, one tensordot."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))  # N, H, W, C, 3, 3
    return np.tensordot(windows, w, axes=([4, 5, 3], [0, 1, 2]))


def cases(tensors: list[nf.Tensor], torch: Any) -> list[tuple[Case, int]]:
    """The cases and their call counts relative to ``--n`` (divisors for the slow ones); tensors made go to
    ``tensors``."""
    rng = np.random.default_rng(0)

    def pair(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, Any, Any, nf.Tensor, nf.Tensor]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.standard_normal(shape).astype(np.float32)
        a, b = nf.tensor(x), nf.tensor(y)
        tensors.extend([a, b])
        tx, ty = (None, None) if torch is None else (torch.from_numpy(x), torch.from_numpy(y))
        return x, y, tx, ty, a, b

    out: list[tuple[Case, int]] = []
    for size, divisor in ((8, 1), (64, 2), (256, 40)):
        x, y, tx, ty, a, b = pair((size, size))
        out.append(
            (
                Case(
                    f"mat_mul {size}x{size}",
                    lambda x=x, y=y: x @ y,
                    None if torch is None else lambda tx=tx, ty=ty: torch.matmul(tx, ty),
                    lambda a=a, b=b: nf.mat_mul(a, b).dispose(),
                ),
                divisor,
            )
        )
    x, y, tx, ty, a, b = pair((64, 64))
    out.append(
        (
            Case(
                "add 64x64",
                lambda x=x, y=y: np.add(x, y),
                None if torch is None else lambda tx=tx, ty=ty: torch.add(tx, ty),
                lambda a=a, b=b: nf.add(a, b).dispose(),
            ),
            1,
        )
    )
    out.append(
        (
            Case(
                "sum 64x64 (all)",
                lambda x=x: np.sum(x),
                None if torch is None else lambda tx=tx: torch.sum(tx),
                lambda a=a: nf.sum(a).dispose(),
            ),
            1,
        )
    )
    out.append(
        (
            Case(
                "mean 64x64 (axis 1)",
                lambda x=x: np.mean(x, axis=1),
                None if torch is None else lambda tx=tx: torch.mean(tx, dim=1),
                lambda a=a: nf.mean(a, 1).dispose(),
            ),
            1,
        )
    )
    x = rng.standard_normal((1, 16, 16, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    tx_, tw_ = nf.tensor(x), nf.tensor(w)
    tensors.extend([tx_, tw_])
    if torch is not None:
        cx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        cw = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1)))
    out.append(
        (
            Case(
                "conv2d 1x16x16x8, 3x3 -> 16",
                lambda: _conv_numpy(x, w),
                None if torch is None else lambda: torch.nn.functional.conv2d(cx, cw, padding=1),
                lambda: nf.conv2d(tx_, tw_, 1, "same").dispose(),
            ),
            4,
        )
    )
    return out


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    """Markdown: one row per case, median microseconds and ndflow's ratios."""
    lines = [
        "| case | numpy us | torch us | ndflow us | ndflow / numpy | ndflow / torch |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in rows:
        torch_us, ours = t.get("torch"), t["ndflow"]
        peer = "-" if torch_us is None else f"{torch_us:.2f}"
        ratio = "-" if torch_us is None else f"{ours / torch_us:.2f}x"
        lines.append(f"| {name} | {t['numpy']:.2f} | {peer} | {ours:.2f} | {ours / t['numpy']:.2f}x | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="calls per timed run of the fastest cases")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved runs per case (the median is reported)")
    parser.add_argument("--torch-threads", type=int, default=0, help="torch's intra-op threads (0: its default)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    previous = nf.get_backend()
    nf.set_backend("cpu")
    tensors: list[nf.Tensor] = []
    try:
        rows = [(case.name, measure(case, max(1, args.n // d), args.repeat)) for case, d in cases(tensors, torch)]
    finally:
        nf.dispose(tensors)
        nf.set_backend(previous)
    threads = "-" if torch is None else str(torch.get_num_threads())
    print(f"{describe()}; {cpu_features()}; {load()}")
    print(f"median of {args.repeat} interleaved runs; torch threads {threads}; microseconds per call\n")
    print(table(rows))
    print(f"\ntensors left after the benchmark: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
