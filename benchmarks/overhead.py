"""Per-op dispatch overhead: tiny and small ops on every installed backend, ndflow vs the backend's own library.

    python benchmarks/overhead.py [--backends cpu,torch,webgpu] [--n 10000] [--repeat 5]

For each backend, each case runs an ndflow op (output disposed, as a program inside ``tidy`` would) and the
call its kernel makes in the library underneath, on the very arrays the kernel reads: numpy for ``cpu``,
torch for ``torch`` (``webgpu`` has no such library: its times stand alone). Both are timed in alternating
runs of ``n`` calls, best of ``repeat``, after a warm-up. The overhead is ndflow's time minus the
library's: argument checks, dtype upcasting, kernel dispatch, the data store and tensor bookkeeping.
Issue 10's target: under 3 us per tiny op; issue 8's: the torch backend within 1.5x of torch on small ops.
``benchmarks/torch_overhead.py`` compares more op sizes on the torch backend alone.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from machine import describe

import ndflow as nf

TINY = "tiny"  # 1-element operands
SMALL = "small"  # 32x32 operands


@dataclass
class Case:
    """One op: its ndflow call, the library call it makes (None where there is no library), its size class."""

    name: str
    ndflow: Callable[[], Any]
    library: Callable[[], Any] | None
    size: str
    per: int = 1  # ops per call


@dataclass
class Result:
    name: str
    size: str
    library_us: float | None
    ndflow_us: float

    @property
    def overhead_us(self) -> float | None:
        return None if self.library_us is None else self.ndflow_us - self.library_us

    @property
    def ratio(self) -> float | None:
        return None if self.library_us is None else self.ndflow_us / self.library_us


def run_us(fn: Callable[[], Any], n: int, sync: Callable[[], None]) -> float:
    """One timed run of ``n`` calls, in microseconds per call (garbage collection off)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        return (time.perf_counter() - start) / n * 1e6
    finally:
        gc.enable()


def compare(case: Case, n: int, repeat: int, sync: Callable[[], None]) -> Result:
    """Best per-call times of the library call and the ndflow call, in alternating runs after a warm-up."""
    fns = [f for f in (case.library, case.ndflow) if f is not None]
    for f in fns:
        run_us(f, max(1, n // 10), sync)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, f in enumerate(fns):
            best[k] = min(best[k], run_us(f, n, sync))
    best = [t / case.per for t in best]
    return Result(case.name, case.size, best[0] if case.library else None, best[-1])


def _library(backend: Any) -> tuple[str, Any, Callable[[nf.Tensor], Any]] | None:
    """(name, module, tensor -> the array its kernels read) for the backend's library; None without one."""
    name = nf.get_backend()
    if name == "cpu":
        return "numpy", np, lambda t: backend.values(t.data_id)
    if name == "torch":
        import torch

        return "torch", torch, lambda t: backend.values(t.data_id)
    return None


def cases(tensors: list[nf.Tensor]) -> list[Case]:
    """The cases on the active backend; the tensors they make are appended to ``tensors``."""
    backend = nf.backend()
    lib = _library(backend)
    rng = np.random.default_rng(0)
    out: list[Case] = []
    m = None if lib is None else lib[1]
    torch_like = lib is not None and lib[0] == "torch"
    for size, shape in ((TINY, (1,)), (SMALL, (32, 32))):
        a = nf.tensor(rng.standard_normal(shape).astype(np.float32))
        b = nf.tensor(rng.standard_normal(shape).astype(np.float32))
        tensors += [a, b]
        la, lb = (None, None) if lib is None else (lib[2](a), lib[2](b))

        def ref(fn: Callable[[], Any]) -> Callable[[], Any] | None:
            return None if lib is None else fn

        out += [
            Case("add", lambda a=a, b=b: nf.add(a, b).dispose(), ref(lambda la=la, lb=lb: m.add(la, lb)), size),
            Case("mul", lambda a=a, b=b: nf.mul(a, b).dispose(), ref(lambda la=la, lb=lb: m.multiply(la, lb)), size),
            Case("a + b (operator)", lambda a=a, b=b: (a + b).dispose(), ref(lambda la=la, lb=lb: la + lb), size),
            Case("a + 1.0 (python scalar)", lambda a=a: (a + 1.0).dispose(), ref(lambda la=la: la + 1.0), size),
            Case("neg", lambda a=a: nf.neg(a).dispose(), ref(lambda la=la: m.negative(la)), size),
            Case("exp", lambda a=a: nf.exp(a).dispose(), ref(lambda la=la: m.exp(la)), size),
            Case(
                "relu",
                lambda a=a: nf.relu(a).dispose(),
                ref(lambda la=la: m.relu(la) if torch_like else np.maximum(la, 0)),
                size,
            ),
            Case("sum", lambda a=a: nf.sum(a).dispose(), ref(lambda la=la: m.sum(la)), size),
            Case("reshape", lambda a=a: nf.reshape(a, [-1]).dispose(), ref(lambda la=la: la.reshape(-1)), size),
        ]
        if size == SMALL:
            out.append(
                Case("mat_mul", lambda a=a, b=b: nf.mat_mul(a, b).dispose(), ref(lambda la=la, lb=lb: la @ lb), size)
            )
        else:

            def add_100_in_tidy(a: nf.Tensor = a, b: nf.Tensor = b) -> None:
                def body() -> None:  # returns nothing: tidy disposes all 100 outputs
                    for _ in range(100):
                        nf.add(a, b)

                nf.tidy(body)

            def ref_100(la: Any = la, lb: Any = lb) -> None:
                for _ in range(100):
                    m.add(la, lb)

            out.append(Case("add, 100 in one tidy (per op)", add_100_in_tidy, ref(ref_100), size, per=100))
    return out


def measure(backend_name: str, n: int, repeat: int) -> tuple[str, list[Result]]:
    """(library name, results) for one backend."""
    nf.set_backend(backend_name)
    backend = nf.backend()
    sync = getattr(backend, "synchronize", None) or (lambda: None)
    lib = _library(backend)
    tensors: list[nf.Tensor] = []
    try:
        results = []
        for case in cases(tensors):
            calls = max(1, n // case.per)
            results.append(compare(case, calls, repeat, sync))
        return (lib[0] if lib else "-"), results
    finally:
        nf.dispose(tensors)


def table(backend_name: str, library: str, results: list[Result]) -> str:
    """Markdown: one row per case."""
    lines = [
        f"| {backend_name}: case | size | {library} us | ndflow us | overhead us | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lib = "-" if r.library_us is None else f"{r.library_us:.2f}"
        over = "-" if r.overhead_us is None else f"{r.overhead_us:.2f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(f"| {r.name} | {r.size} | {lib} | {r.ndflow_us:.2f} | {over} | {ratio} |")
    return "\n".join(lines)


def summary(backend_name: str, results: list[Result]) -> str:
    """Median overhead of the tiny ops and the ratios, against the issues' targets."""
    tiny = [r for r in results if r.size == TINY and r.overhead_us is not None]
    if not tiny:
        median = statistics.median(r.ndflow_us for r in results if r.size == TINY)
        return f"- {backend_name}: no library to compare with; median tiny op {median:.2f} us"
    overheads = [r.overhead_us for r in tiny]
    ratios = [r.ratio for r in results if r.ratio is not None]
    small = [r.ratio for r in results if r.size == SMALL and r.ratio is not None]
    line = (
        f"- {backend_name}: tiny-op overhead median {statistics.median(overheads):.2f} us, max {max(overheads):.2f} us "
        f"(target < 3 us); ratio ndflow/library median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x"
    )
    if small:
        line += f" (small ops: median {statistics.median(small):.2f}x, max {max(small):.2f}x; torch target < 1.5x)"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=None, help="comma-separated (default: every backend that initializes)")
    parser.add_argument("--n", type=int, default=10_000, help="calls per timed run")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = args.backends.split(",") if args.backends else nf.engine().backend_names()
    names = [b for b in names if nf.find_backend(b) is not None]
    previous = nf.get_backend()
    print(describe())
    print(f"best of {args.repeat} alternating runs of {args.n} calls; microseconds per op\n")
    lines = []
    for name in names:
        library, results = measure(name, args.n, args.repeat)
        print(table(name, library, results) + "\n", flush=True)
        lines.append(summary(name, results))
    nf.set_backend(previous)
    print("\n".join(lines))
    print(f"tensors left after the benchmark: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
