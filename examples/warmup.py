#!/usr/bin/env python3
"""Warm up a model before timing it, as the platform guide advises.

The first call of a model pays one-time costs: on webgpu, compiling each shader and uploading
the weights; on every backend, first-use allocations. Run it once on a dummy input of the right
shape (and dispose the result) before serving or timing; later calls show the steady cost.
``nf.time(fn)`` reports ``kernel_ms`` (time in kernels) and ``wall_ms``.

    python examples/warmup.py [--runs 20] [--backend cpu]
"""

from __future__ import annotations

import argparse
import statistics

import ndflow as nf

INPUT_SHAPE = [32, 256]


class MLP:
    """A two-layer perceptron whose weights are variables."""

    def __init__(self, seed: int = 0) -> None:
        def init() -> list[nf.Variable]:
            return [
                nf.variable(nf.random_normal([256, 512], 0, 0.05, seed=seed)),
                nf.variable(nf.zeros([512])),
                nf.variable(nf.random_normal([512, 10], 0, 0.05, seed=seed + 1)),
                nf.variable(nf.zeros([10])),
            ]

        self.weights = nf.tidy(init)

    def predict(self, x: nf.Tensor) -> nf.Tensor:
        """Class probabilities for a batch ``x`` of shape ``[n, 256]``."""
        w1, b1, w2, b2 = self.weights

        def forward() -> nf.Tensor:
            hidden = nf.relu(nf.add(nf.mat_mul(x, w1), b1))
            return nf.softmax(nf.add(nf.mat_mul(hidden, w2), b2))

        return nf.tidy(forward)

    def dispose(self) -> None:
        """Free the weights."""
        nf.dispose(self.weights)


def main() -> None:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backend", default=None)
    args = parser.parse_args()
    if args.backend is not None and not nf.set_backend(args.backend):
        raise SystemExit(f"backend '{args.backend}' could not be initialized")
    print(f"backend: {nf.get_backend()}")
    model = MLP()
    x = nf.random_normal(INPUT_SHAPE, seed=2)
    try:
        cold = nf.time(lambda: model.predict(x))
        print(f"first call (cold): wall {cold.wall_ms:.2f} ms, kernels {cold.kernel_ms:.2f} ms")

        # The warm-up: one prediction on zeros of the input's shape, its result disposed at once.
        nf.tidy(lambda: model.predict(nf.zeros(INPUT_SHAPE))).dispose()

        warm = [nf.time(lambda: model.predict(x)) for _ in range(args.runs)]
        wall = statistics.median(t.wall_ms for t in warm)
        kernel = statistics.median(t.kernel_ms for t in warm)
        print(f"after warm-up: median of {args.runs} runs: wall {wall:.2f} ms, kernels {kernel:.2f} ms")
        print(f"the cold call took {cold.wall_ms / max(wall, 1e-9):.1f}x the warm median")
        probs = model.predict(x)
        print(f"prediction shape: {list(probs.shape)}; rows sum to {nf.tidy(lambda: float(nf.sum(probs))) / 32:.4f}")
        probs.dispose()
    finally:
        x.dispose()
        model.dispose()
    print(f"num_tensors at the end: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
