#!/usr/bin/env python3
"""deeplearn.js's introduction, in Python: ``math.scope``, then a graph trained by a session.

Three parts, as in the seed document:

1. the mean squared difference of two arrays, computed inside ``math.scope`` so that every
   intermediate array is freed (``track`` adopts the arrays made for the computation);
2. a graph (placeholders, a variable, ``matmul``, ``meanSquaredCost``) trained by a ``Session``
   with ``SGDOptimizer`` over inputs shuffled by ``InCPUMemoryShuffledInputProviderBuilder``;
3. inference with the trained graph (``session.eval`` fed an array).

Only the syntax changes from JavaScript: ``new Graph()`` is ``Graph()``, an object literal
``{tensor: t, data: d}`` is a dict, and values are read with ``get()``.

    python examples/intro_deeplearn.py [--batches 10] [--seed 0] [--backend cpu]
"""

from __future__ import annotations

import argparse

import ndflow as nf
from ndflow.legacy import (
    Array1D,
    Array2D,
    CostReduction,
    FeedEntry,
    Graph,
    InCPUMemoryShuffledInputProviderBuilder,
    NDArrayMathCPU,
    NDArrayMathGPU,
    Scalar,
    Session,
    SGDOptimizer,
)


def make_math(backend: str):
    """``new NDArrayMathGPU()`` where the webgpu backend is available, else the CPU one."""
    if backend == "webgpu" or (backend == "auto" and "webgpu" in nf.engine().backend_names()):
        try:
            return NDArrayMathGPU()
        except RuntimeError as exc:
            print(f"({exc}; using NDArrayMathCPU)")
    return NDArrayMathCPU()


def mean_squared_difference(math) -> float:
    """Part 1: ``math.scope`` frees ``diff``, ``squaredDiff``, ``sum`` and ``size``."""

    def scope(keep, track):
        a = track(Array1D.new([1, 2, 3]))
        b = track(Array1D.new([4, 5, 6]))
        diff = math.sub(a, b)
        squared_diff = math.elementWiseMul(diff, diff)
        total = math.sum(squared_diff)
        size = Scalar.new(a.size)
        average = math.divide(total, size)
        return average.get()  # a number: the scope frees every array

    before = nf.memory().num_tensors
    value = math.scope(scope)
    print(f"mean squared difference: {value}")
    print(f"arrays left by the scope: {nf.memory().num_tensors - before}")
    return value


def train_and_infer(math, num_batches: int, seed: int) -> tuple[list[float], list[int], float]:
    """Parts 2 and 3: fit ``output = multiplier . input``; every label is 4 times its input's first value."""
    g = Graph()
    # Placeholders are input containers: where an input array is fed when the graph runs.
    input_tensor = g.placeholder("input", [3])
    label_tensor = g.placeholder("label", [1])
    # Variables hold values that training updates; the multiplier starts random.
    multiplier = g.variable("multiplier", Array2D.randNormal([1, 3], seed=seed))
    # Graph methods take symbolic tensors and return symbolic tensors.
    output_tensor = g.matmul(multiplier, input_tensor)
    cost_tensor = g.meanSquaredCost(label_tensor, output_tensor)
    print(f"output tensor shape: {output_tensor.shape}")

    learning_rate = 0.00001
    batch_size = 3
    session = Session(g, math)
    optimizer = SGDOptimizer(learning_rate)

    inputs = [Array1D.new([1.0, 2.0, 3.0]), Array1D.new([10.0, 20.0, 30.0]), Array1D.new([100.0, 200.0, 300.0])]
    labels = [Array1D.new([4.0]), Array1D.new([40.0]), Array1D.new([400.0])]

    # Shuffles inputs and labels and keeps them mutually in sync.
    builder = InCPUMemoryShuffledInputProviderBuilder([inputs, labels], seed=seed)
    input_provider, label_provider = builder.getInputProviders()
    # Maps symbolic tensors to input providers: FeedEntry objects, or dicts like JS object literals.
    feed_entries = [
        FeedEntry(input_tensor, input_provider),
        {"tensor": label_tensor, "data": label_provider},
    ]

    costs: list[float] = []
    try:
        for i in range(num_batches):
            # Train in a scope, so that the returned cost is freed after it is read.
            def train_batch(i: int = i) -> None:
                cost = session.train(cost_tensor, feed_entries, batch_size, optimizer, CostReduction.MEAN)
                costs.append(cost.get())
                print(f"last average cost ({i}): {costs[-1]}")

            math.scope(train_batch)

        # Inference in a scope too: session.eval can take an array as input data.
        def infer(keep, track):
            test_input = track(Array1D.new([0.1, 0.2, 0.3]))
            test_output = session.eval(output_tensor, [{"tensor": input_tensor, "data": test_input}])
            print("---inference output---")
            print(f"shape: {list(test_output.shape)}")
            print(f"value: {test_output.get(0)}")
            return list(test_output.shape), test_output.get(0)

        shape, value = math.scope(infer)
    finally:
        # Clean up the training data, the session's variables and the optimizer's state.
        nf.dispose([inputs, labels])
        session.dispose()
    return costs, shape, value


def main() -> None:
    """Command line: the introduction's settings by default."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="cpu", help="cpu, webgpu, or auto (webgpu when available)")
    args = parser.parse_args()
    start = nf.memory().num_tensors
    math = make_math(args.backend)
    mean_squared_difference(math)
    costs, _, _ = train_and_infer(math, args.batches, args.seed)
    print(f"cost: {costs[0]} -> {costs[-1]} ({'lower' if costs[-1] < costs[0] else 'NOT lower'})")
    print(f"arrays left at the end: {nf.memory().num_tensors - start}")


if __name__ == "__main__":
    main()
