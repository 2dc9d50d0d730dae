"""Kernels a Layers training step leaves out (same results): the separate bias add of a Dense layer
whose activation cannot be fused, the duplicate mean of a single output's loss, the cast of float labels."""

from __future__ import annotations

import numpy as np

import ndflow as nf


def _model(activation: str) -> nf.layers.Layer:
    model = nf.sequential()
    model.add(nf.layers.dense(units=3, activation=activation, input_shape=[4], bias_initializer="ones"))
    return model


def test_dense_bias_goes_into_the_fused_product(backend):
    model = _model("softmax")
    x = nf.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    try:
        kernel, bias = (w.read() for w in model.weights)
        expected = nf.tidy(lambda: nf.softmax(nf.add(nf.mat_mul(x, kernel), bias)).numpy())
        info = nf.profile(lambda: model.predict(x))
        names = [k.name for k in info.kernels]
        np.testing.assert_allclose(info.result.numpy(), expected, rtol=1e-6)
        info.result.dispose()
    finally:
        x.dispose()
        model.dispose()
    assert "_FusedMatMul" in names
    assert "Add" not in names


def test_single_output_training_step_takes_one_mean(backend):
    model = _model("softmax")
    model.compile(optimizer="sgd", loss="categoricalCrossentropy")
    x = nf.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    y = nf.tensor(np.eye(3, dtype=np.float32)[[0, 2]])
    try:
        probs = model.predict(x)
        expected = float(np.mean(-np.log(np.clip(probs.numpy(), 1e-7, 1 - 1e-7))[[0, 1], [0, 2]]))
        probs.dispose()
        info = nf.profile(lambda: model.train_on_batch(x, y))
    finally:
        nf.dispose([x, y])
        model.dispose()
    names = [k.name for k in info.kernels]
    forward = names[: names.index("OnesLike")]  # the backward pass starts from a seed of ones
    assert abs(info.result - expected) < 1e-5
    assert names.count("Mean") == 1
    assert "Cast" not in forward  # float labels are used as they are
