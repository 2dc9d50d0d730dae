"""Initializers, regularizers, constraints and activations: TF.js names, values, configs, seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndflow as nf
from ndflow.layers import activations, constraints, initializers, regularizers


def values(initializer, shape, dtype=None) -> np.ndarray:
    t = initializer.apply(shape, dtype)
    try:
        return t.numpy()
    finally:
        t.dispose()


def test_deterministic_initializers():
    np.testing.assert_array_equal(values(initializers.zeros(), [2, 3]), np.zeros((2, 3)))
    np.testing.assert_array_equal(values(initializers.ones(), [4]), np.ones(4))
    np.testing.assert_allclose(values(initializers.constant(value=0.25), [2, 2]), np.full((2, 2), 0.25))
    np.testing.assert_allclose(values(initializers.identity(gain=3), [3, 3]), 3 * np.eye(3))
    assert values(initializers.zeros(), [2], "int32").dtype == np.int32
    with pytest.raises(ValueError, match="2D square"):
        initializers.identity().apply([2, 3])


@pytest.mark.parametrize(
    "factory, scale, mode, distribution",
    [(initializers.glorot_uniform, 1.0, "fan_avg", "uniform"), (initializers.glorot_normal, 1.0, "fan_avg", "normal"),
     (initializers.he_uniform, 2.0, "fan_in", "uniform"), (initializers.he_normal, 2.0, "fan_in", "normal"),
     (initializers.le_cun_uniform, 1.0, "fan_in", "uniform"), (initializers.le_cun_normal, 1.0, "fan_in", "normal")],
)  # fmt: skip
def test_variance_scaling_presets(factory, scale, mode, distribution):
    init = factory(seed=5)
    assert init.get_class_name() == "VarianceScaling"
    assert initializers.serialize_initializer(init) == {
        "class_name": "VarianceScaling",
        "config": {"scale": scale, "mode": mode, "distribution": distribution, "seed": 5},
    }
    shape = [200, 100]
    fan = {"fan_avg": 150, "fan_in": 200}[mode]
    v = values(init, shape)
    np.testing.assert_array_equal(v, values(factory(seed=5), shape))  # seeded: reproducible
    if distribution == "uniform":
        limit = math.sqrt(3 * scale / fan)
        assert np.abs(v).max() <= limit and np.abs(v).max() > 0.95 * limit
    else:
        assert np.abs(v).max() <= 2 * math.sqrt(scale / fan) + 1e-6  # truncated at two stddevs
        assert abs(v.std() / math.sqrt(scale / fan) - 0.88) < 0.05


def test_random_initializers_and_configs():
    u = values(initializers.random_uniform(minval=0, maxval=2, seed=1), [1000])
    assert u.min() >= 0 and u.max() < 2 and u.min() < 0.05  # an explicit 0 is kept (TF.js would use -0.05)
    n = values(initializers.random_normal(mean=1, stddev=0.1, seed=2), [2000])
    assert abs(n.mean() - 1) < 0.02
    t = values(initializers.truncated_normal(stddev=1, seed=3), [2000])
    assert np.abs(t).max() <= 2
    assert initializers.RandomUniform().get_config() == {"minval": -0.05, "maxval": 0.05, "seed": None}
    assert initializers.TruncatedNormal(mean=1).get_config() == {"mean": 1, "stddev": 0.05, "seed": None}
    vs = initializers.variance_scaling(scale=2, mode="fanOut", distribution="truncated_normal")
    assert vs.get_config() == {"scale": 2, "mode": "fan_out", "distribution": "truncated_normal", "seed": None}
    with pytest.raises(ValueError, match="not a valid mode"):
        initializers.variance_scaling(mode="fan_sideways")
    with pytest.raises(ValueError, match="positive"):
        initializers.variance_scaling(scale=-1)


def test_orthogonal():
    q = values(initializers.orthogonal(gain=2, seed=4), [6, 4])
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-5)
    wide = values(initializers.orthogonal(seed=4), [3, 5])
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    with pytest.raises(NotImplementedError, match="at least 2D"):
        initializers.orthogonal().apply([3])


@pytest.mark.parametrize("name", ["glorotUniform", "glorot_uniform", "GlorotUniform", "leCunNormal", "lecun_normal"])
def test_get_initializer_spellings(name):
    assert isinstance(initializers.get_initializer(name), initializers.VarianceScaling)


def test_get_initializer_forms():
    assert isinstance(initializers.get_initializer("zeros"), initializers.Zeros)
    assert isinstance(initializers.get_initializer({"class_name": "Ones", "config": {}}), initializers.Ones)
    init = initializers.constant(value=3)
    assert initializers.get_initializer(init) is init
    with pytest.raises(TypeError):
        initializers.constant()  # value is required
    with pytest.raises(TypeError, match="initializer must be"):
        initializers.get_initializer(3)


def test_regularizers():
    x = nf.tensor([[1.0, -2.0], [3.0, -4.0]])
    penalties = [regularizers.l1(l1=0.1).apply(x), regularizers.l2(l2=0.5).apply(x), regularizers.l1l2().apply(x)]
    try:
        np.testing.assert_allclose([p.numpy() for p in penalties], [1.0, 15.0, 0.1 + 0.3], rtol=1e-6)
        assert penalties[0].shape == ()
    finally:
        nf.dispose([x, penalties])
    assert regularizers.serialize_regularizer(regularizers.l2(l2=0.5)) == {
        "class_name": "L1L2",
        "config": {"l1": 0, "l2": 0.5},
    }
    assert regularizers.get_regularizer("l1l2").get_config() == {"l1": 0.01, "l2": 0.01}
    keras_l2 = regularizers.get_regularizer({"class_name": "L2", "config": {"l2": 0.3}})
    assert keras_l2.get_config() == {"l1": 0, "l2": 0.3}
    assert regularizers.get_regularizer(None) is None
    with pytest.raises(ValueError, match="Unknown regularizer: l3"):
        regularizers.get_regularizer("l3")


def test_constraints():
    w = nf.tensor([[3.0, 0.0], [4.0, 0.5]])
    outs = [
        constraints.max_norm(max_value=2).apply(w), constraints.unit_norm().apply(w), constraints.non_neg().apply(w),
        constraints.min_max_norm(min_value=1, max_value=2, rate=0.5).apply(w),
    ]  # fmt: skip
    try:
        eps = 1e-7
        norms = np.array([5.0, 0.5])
        np.testing.assert_allclose(outs[0].numpy(), w.numpy() * np.clip(norms, 0, 2) / (eps + norms), rtol=1e-6)
        np.testing.assert_allclose(outs[1].numpy(), w.numpy() / (eps + norms), rtol=1e-6)
        np.testing.assert_allclose(outs[2].numpy(), w.numpy())
        desired = 0.5 * np.clip(norms, 1, 2) + 0.5 * norms
        np.testing.assert_allclose(outs[3].numpy(), w.numpy() * desired / (eps + norms), rtol=1e-6)
    finally:
        nf.dispose([w, outs])
    assert constraints.serialize_constraint(constraints.max_norm(max_value=3, axis=1)) == {
        "class_name": "MaxNorm", "config": {"max_value": 3, "axis": 1},
    }  # fmt: skip
    assert isinstance(constraints.get_constraint("maxNorm"), constraints.MaxNorm)
    assert isinstance(constraints.get_constraint("non_neg"), constraints.NonNeg)
    assert constraints.get_constraint({"class_name": "UnitNorm", "config": {"axis": 1}}).axis == 1
    with pytest.raises(ValueError, match="Unknown constraint: tight"):
        constraints.get_constraint("tight")


def test_activation_registry():
    expected = {"linear", "relu", "relu6", "elu", "selu", "sigmoid", "hardSigmoid", "softmax", "softplus",
                "softsign", "tanh", "swish", "mish", "gelu", "gelu_new", "logSoftmax"}  # fmt: skip
    assert set(activations.ACTIVATIONS) == expected
    for name in expected:
        act = activations.get_activation(name)
        assert activations.get_activation(activations.serialize_activation(act)).get_class_name() == name
    assert activations.serialize_activation(activations.get_activation("logSoftmax")) == "log_softmax"
    assert isinstance(activations.get_activation(None), activations.Linear)
    x = nf.tensor([-1.0, 0.0, 2.0])
    before = nf.memory().num_tensors
    outs = [activations.get_activation(name).apply(x) for name in sorted(expected - {"linear"})]
    assert nf.memory().num_tensors == before + len(outs)  # no temporaries left behind
    nf.dispose([x, outs])
