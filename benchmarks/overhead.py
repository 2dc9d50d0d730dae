"""Per-op dispatch overhead: tiny ops on 1-element tensors, ndflow vs the backend's own library.

    python benchmarks/overhead.py [--backend cpu|torch] [--n 200000]

Prints a table of microseconds per op. The reference is the library the backend calls for the same
work on the same data: numpy for ``cpu``, torch for ``torch`` (``benchmarks/torch_overhead.py``
compares more ops and sizes). ndflow's overhead is its time minus the reference's.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

import numpy as np

import ndflow as nf


def per_op_us(fn, n: int, repeat: int = 5) -> float:
    """Best of ``repeat`` runs of ``n`` calls, in microseconds per call."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
        gc.enable()
    return best


def reference(a: nf.Tensor, b: nf.Tensor, a_np: np.ndarray, b_np: np.ndarray) -> tuple[str, Callable, Callable]:
    """(library name, add, relu) called directly on the data the active backend's kernels read."""
    if nf.get_backend() == "torch":
        import torch

        ta, tb = nf.backend().values(a.data_id), nf.backend().values(b.data_id)
        return "torch", lambda: torch.add(ta, tb), lambda: torch.relu(ta)
    return "numpy", lambda: np.add(a_np, b_np), lambda: np.maximum(a_np, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    nf.set_backend(args.backend)
    n = args.n

    a_np = np.ones(1, np.float32)
    b_np = np.ones(1, np.float32)
    a, b = nf.tensor(a_np), nf.tensor(b_np)

    def nf_add_dispose() -> None:
        nf.add(a, b).dispose()

    def nf_op_add_dispose() -> None:
        (a + b).dispose()

    def nf_add_scalar_dispose() -> None:
        (a + 1.0).dispose()

    def nf_relu_dispose() -> None:
        nf.relu(a).dispose()

    def nf_add_in_tidy() -> None:
        nf.add(a, b)

    def nf_tidy_100() -> None:
        nf.tidy(lambda: [nf_add_in_tidy() for _ in range(100)])

    library, ref_add, ref_relu = reference(a, b, a_np, b_np)
    rows = [
        (f"{library} add (reference)", per_op_us(ref_add, n), 1),
        ("nf.add + dispose", per_op_us(nf_add_dispose, n), 1),
        ("a + b operator + dispose", per_op_us(nf_op_add_dispose, n), 1),
        ("a + 1.0 (python scalar) + dispose", per_op_us(nf_add_scalar_dispose, n), 1),
        (f"{library} relu (reference)", per_op_us(ref_relu, n), 1),
        ("nf.relu + dispose", per_op_us(nf_relu_dispose, n), 1),
        ("nf.add x100 inside one tidy (per op)", per_op_us(nf_tidy_100, max(n // 100, 1)) / 100, 1),
    ]
    ref = rows[0][1]
    print(f"backend: {nf.get_backend()}   ops: {n} per run, best of 5")
    print(f"{'case':<40} {'us/op':>8} {'overhead us':>12}")
    print("-" * 62)
    for name, us, _ in rows:
        base = rows[4][1] if "relu" in name else ref
        over = "" if "reference" in name else f"{us - base:12.2f}"
        print(f"{name:<40} {us:8.2f} {over:>12}")
    nf.dispose([a, b])
    leaked = nf.memory().num_tensors
    print(f"tensors left after the benchmark: {leaked}")


if __name__ == "__main__":
    main()
