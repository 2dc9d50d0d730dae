"""ndflow on the torch backend against calling torch directly, for the same ops on the same data.

    python benchmarks/torch_overhead.py [--device cpu|cuda] [--n 2000] [--repeat 5]

Each case runs an ndflow op on the torch backend (the output disposed, as a program in a ``tidy``
would) and the torch call its kernel makes (on the very tensors the kernel reads; NHWC data through
channels_last views on both sides; ndflow's transpose is a view, so torch's is too), on tensors of a
few sizes, in alternating timed runs, and prints microseconds per op and the ratio ndflow / torch.
On CUDA both sides synchronize once per timed run (not per op), so the figures are per-op
throughput. The ratio is ndflow's whole overhead: op argument checks, kernel dispatch, the data
store and tensor bookkeeping.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as tnf
from overhead import run_us

import ndflow as nf


def compare(a: Callable[[], object], b: Callable[[], object], n: int, repeat: int, sync) -> tuple[float, float]:
    """Best per-call times of ``a`` and ``b``, timed in alternating runs (so that both see the same
    machine load), after a warm-up of each."""
    run_us(a, max(1, n // 10), sync)
    run_us(b, max(1, n // 10), sync)
    best_a = best_b = float("inf")
    for _ in range(repeat):
        best_a = min(best_a, run_us(a, n, sync))
        best_b = min(best_b, run_us(b, n, sync))
    return best_a, best_b


def cases(device: torch.device) -> list[tuple[str, Callable[[], object], Callable[[], object], list[nf.Tensor]]]:
    """(name, ndflow call, torch call, ndflow tensors to dispose afterwards)."""
    rng = np.random.default_rng(0)
    result = []
    backend = nf.backend()

    def pair(shape: tuple[int, ...]) -> tuple[nf.Tensor, torch.Tensor]:
        t = nf.tensor(rng.standard_normal(shape).astype(np.float32))
        return t, backend.data[t.data_id].values  # the very tensor the kernel reads

    for size in (1, 32, 128, 512):
        shape = (size, size) if size > 1 else (1,)
        (a, ta), (b, tb) = pair(shape), pair(shape)
        label = "x".join(map(str, shape))
        result += [
            (f"add {label}", lambda a=a, b=b: nf.add(a, b).dispose(), lambda ta=ta, tb=tb: torch.add(ta, tb), [a, b]),
            (f"mul {label}", lambda a=a, b=b: nf.mul(a, b).dispose(), lambda ta=ta, tb=tb: torch.mul(ta, tb), []),
            (f"relu {label}", lambda a=a: nf.relu(a).dispose(), lambda ta=ta: torch.relu(ta), []),
            (f"exp {label}", lambda a=a: nf.exp(a).dispose(), lambda ta=ta: torch.exp(ta), []),
            (f"sum {label}", lambda a=a: nf.sum(a).dispose(), lambda ta=ta: torch.sum(ta), []),
        ]
        if size > 1:
            result += [
                (f"matMul {label}", lambda a=a, b=b: nf.mat_mul(a, b).dispose(), lambda ta=ta, tb=tb: ta @ tb, []),
                (f"transpose {label}", lambda a=a: nf.transpose(a).dispose(), lambda ta=ta: ta.permute(1, 0), []),
            ]
    for hw, c in ((8, 8), (32, 16), (64, 32)):
        (x, tx), (w, tw) = pair((1, hw, hw, c)), pair((3, 3, c, c))
        label = f"1x{hw}x{hw}x{c} * 3x3"
        weight = tw.permute(3, 2, 0, 1)

        def torch_conv(tx=tx, weight=weight) -> torch.Tensor:
            return tnf.conv2d(tx.permute(0, 3, 1, 2), weight, None, 1, 1).permute(0, 2, 3, 1)

        def torch_pool(tx=tx) -> torch.Tensor:
            return tnf.max_pool2d(tx.permute(0, 3, 1, 2), 2, 2).permute(0, 2, 3, 1)

        result += [
            (f"conv2d same {label}", lambda x=x, w=w: nf.conv2d(x, w, 1, "same").dispose(), torch_conv, [x, w]),
            (f"maxPool 2x2 {label[:-6]}", lambda x=x: nf.max_pool(x, 2, 2, "valid").dispose(), torch_pool, []),
        ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="TORCH_DEVICE for the torch backend (default: its own)")
    parser.add_argument("--n", type=int, default=2000, help="calls per timed run")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.device:
        nf.env().set("TORCH_DEVICE", args.device)
    if not nf.set_backend("torch"):
        raise SystemExit("the torch backend could not be initialized")
    backend = nf.backend()
    device = backend.device
    sync = backend.synchronize

    print(f"ndflow on torch {torch.__version__}, device {device}, {torch.get_num_threads()} threads")
    print(f"best of {args.repeat} runs of {args.n} calls; microseconds per op")
    print(f"{'case':<34} {'torch':>9} {'ndflow':>9} {'ratio':>7}")
    print("-" * 62)
    all_cases = cases(device)
    for name, nf_call, torch_call, _ in all_cases:
        t_torch, t_nf = compare(torch_call, nf_call, args.n, args.repeat, sync)
        print(f"{name:<34} {t_torch:9.2f} {t_nf:9.2f} {t_nf / t_torch:7.2f}")
    nf.dispose([t for case in all_cases for t in case[3]])
    print(f"tensors left after the benchmark: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
