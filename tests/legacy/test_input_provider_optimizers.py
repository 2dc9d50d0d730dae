"""Shuffled input providers (in sync across inputs, epochs, ownership) and the legacy optimizers."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
import ndflow.legacy as dl


def _read(provider):
    copy = provider.getNextCopy()
    try:
        return copy.getValues().tolist()
    finally:
        provider.disposeCopy(copy)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_providers_stay_in_sync_and_visit_every_example(kind):
    inputs = [dl.Array1D.new([i, i]) for i in range(5)]
    labels = [dl.Array1D.new([10 * i]) for i in range(5)]
    cls = dl.InCPUMemoryShuffledInputProviderBuilder if kind == "cpu" else dl.InGPUMemoryShuffledInputProviderBuilder
    builder = cls([inputs, labels], seed=3)
    xp, yp = builder.getInputProviders()
    try:
        seen = []
        for _ in range(5):
            x, y = _read(xp), _read(yp)
            assert y == [10 * x[0]]
            seen.append(int(x[0]))
        assert sorted(seen) == [0, 1, 2, 3, 4] and builder.getEpoch() == 1
        copy = xp.getNextCopy()
        assert copy is not inputs[seen[0]] and isinstance(copy, dl.Array1D)
        xp.disposeCopy(copy)
        _read(yp)
        assert _read(xp) == [seen[1]] * 2  # the same order again in the next epoch
    finally:
        nf.dispose([inputs, labels])


def test_cpu_builder_keeps_host_copies():
    inputs = [dl.Array1D.new([1, 2]), dl.Array1D.new([3, 4])]
    builder = dl.InCPUMemoryShuffledInputProviderBuilder([inputs])
    nf.dispose(inputs)  # the examples live in host memory now
    (provider,) = builder.getInputProviders()
    assert sorted([_read(provider), _read(provider)]) == [[1, 2], [3, 4]]


def test_gpu_builder_owns_what_it_made():
    before = nf.memory().num_tensors
    builder = dl.InGPUMemoryShuffledInputProviderBuilder([np.ones((4, 3)), [[1, 2]] * 4])
    assert nf.memory().num_tensors == before + 8
    (xp, _) = builder.getInputProviders()
    assert _read(xp) == [1, 1, 1]
    builder.dispose()
    assert nf.memory().num_tensors == before


def test_builder_errors():
    with pytest.raises(ValueError, match="Number of examples must match"):
        dl.InCPUMemoryShuffledInputProviderBuilder([[[1], [2]], [[1]]])
    with pytest.raises(ValueError, match="does not have the shape"):
        dl.InCPUMemoryShuffledInputProviderBuilder([[[1], [2, 3]]])
    with pytest.raises(ValueError, match="at least one input"):
        dl.InCPUMemoryShuffledInputProviderBuilder([])


def test_optimizer_arguments_follow_deeplearn():
    nodes = ["node"]
    made = [
        dl.SGDOptimizer(0.1, nodes),
        dl.MomentumOptimizer(0.1, 0.9, nodes, True),
        dl.AdagradOptimizer(0.1, nodes, 0.2),
        dl.AdadeltaOptimizer(0.1, 0.8, nodes, 1e-6),
        dl.AdamOptimizer(0.1, 0.8, 0.99, 1e-7, nodes),
        dl.AdamaxOptimizer(0.1, 0.8, 0.99, 1e-7, 0.5, nodes),
        dl.RMSPropOptimizer(0.1, 0.8, 0.5, nodes, 1e-6),
    ]
    assert all(o.specifiedVariableList is nodes and o.learningRate == 0.1 for o in made)
    assert isinstance(made[0], nf.SGDOptimizer) and isinstance(made[4], nf.AdamOptimizer)
    assert made[1].use_nesterov and made[1].momentum == 0.9
    assert made[2].initial_accumulator_value == 0.2 and made[3].rho == 0.8
    assert (made[4].beta1, made[4].beta2, made[4].epsilon) == (0.8, 0.99, 1e-7)
    assert made[5].decay == 0.5 and (made[6].decay, made[6].momentum, made[6].epsilon) == (0.8, 0.5, 1e-6)
    made[0].setLearningRate(0.5)
    made[1].setMomentum(0.5)
    assert made[0].learningRate == 0.5 and made[1].momentum == 0.5


def test_eager_minimize_with_camel_case_arguments():
    init = dl.Scalar.new(3)
    x = dl.variable(init)
    optimizer = dl.SGDOptimizer(0.25)
    try:
        cost = optimizer.minimize(lambda: nf.square(x), returnCost=True, varList=[x])
        assert isinstance(cost, dl.Scalar) and cost.get() == 9.0
        assert x.get() == pytest.approx(1.5)  # 3 - 0.25 * 2 * 3
        grads = optimizer.computeGradients(lambda: nf.square(x))
        optimizer.applyGradients(grads.grads)
        assert x.get() == pytest.approx(0.75)
        nf.dispose([cost, grads])
    finally:
        nf.dispose([init, x])
        optimizer.dispose()
