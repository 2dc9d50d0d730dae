#!/usr/bin/env python3
"""Fit ``y = x·w`` to three examples: the training example of deeplearn.js's introduction.

deeplearn.js built a graph (placeholders, ``g.variable('multiplier', randNormal([1, 3]))``,
``meanSquaredCost``) and trained it with ``session.train(cost, feeds, batchSize=3,
SGDOptimizer(0.00001), CostReduction.MEAN)`` over shuffled inputs. The eager equivalent, as in
TF.js: a variable, a cost function, and ``nf.train.sgd(lr).minimize(cost)`` once per batch.

    python examples/train_linear.py [--batches 10] [--learning-rate 1e-5] [--batch-size 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

import ndflow as nf
import ndflow.train  # noqa: F401  (makes nf.train available)

# The three examples: every input is a multiple of [1, 2, 3], every label 4 times that multiple.
INPUTS = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [100.0, 200.0, 300.0]], np.float32)
LABELS = np.array([[4.0], [40.0], [400.0]], np.float32)
TEST_INPUT = [0.1, 0.2, 0.3]  # the model should answer 0.4


def train(
    num_batches: int = 10,
    learning_rate: float = 0.00001,
    batch_size: int = 3,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> tuple[list[float], float]:
    """Train; return the average cost of each batch and the prediction for ``TEST_INPUT``."""
    rng = np.random.default_rng(seed)
    multiplier = nf.tidy(lambda: nf.variable(nf.random_normal([1, 3], seed=seed)))
    optimizer = nf.train.sgd(learning_rate)
    order: list[int] = []
    costs: list[float] = []
    try:
        for i in range(num_batches):
            # Shuffled batches that keep inputs and labels in sync (deeplearn.js's
            # InCPUMemoryShuffledInputProviderBuilder): a fresh permutation each pass.
            while len(order) < batch_size:
                order.extend(rng.permutation(len(INPUTS)).tolist())
            batch, order = order[:batch_size], order[batch_size:]
            x, y = nf.tensor2d(INPUTS[batch]), nf.tensor2d(LABELS[batch])

            def cost(x: nf.Tensor = x, y: nf.Tensor = y) -> nf.Tensor:
                # mean over the batch of each example's squared error (CostReduction.MEAN)
                return nf.mean(nf.square(nf.sub(nf.mat_mul(x, multiplier, False, True), y)))

            value = optimizer.minimize(cost, return_cost=True)
            costs.append(float(value.data_sync()[0]))
            nf.dispose([value, x, y])
            log(f"last average cost ({i}): {costs[-1]}")
        prediction = nf.tidy(lambda: nf.mat_mul(multiplier, nf.tensor2d([TEST_INPUT]), False, True))
        result = float(prediction.data_sync()[0])
        prediction.dispose()
        log("---inference output---")
        log(f"input {TEST_INPUT} -> {result} (expected 0.4)")
        return costs, result
    finally:
        optimizer.dispose()
        multiplier.dispose()


def main() -> None:
    """Command line: the deeplearn.js settings by default."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=0.00001)
    parser.add_argument("--batch-size", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train(args.batches, args.learning_rate, args.batch_size, args.seed)


if __name__ == "__main__":
    main()
