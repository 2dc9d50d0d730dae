"""TF.js parity of the Layers API core (fixtures from ``tests/fixtures/gen_layers_core.py``).

For each model: default names, weight names, ``to_json()`` (byte for byte), ``summary()`` lines,
and ``predict`` with TF.js's weights; then the same after rebuilding the model from TF.js's JSON.
"""

from __future__ import annotations

import numpy as np
import pytest
from layers_cases import ACTIVATIONS, MODELS, load_fixture

import ndflow as nf
from ndflow import layers

FIXTURE = load_fixture()


def as_tensor(record: dict) -> nf.Tensor:
    return nf.tensor(np.array(record["values"], dtype=np.float32).reshape(record["shape"]))


def assert_close(t: nf.Tensor, record: dict, atol: float = 1e-5) -> None:
    assert list(t.shape) == record["shape"]
    np.testing.assert_allclose(t.numpy().ravel(), np.array(record["values"], dtype=np.float32), rtol=1e-5, atol=atol)


def check_predict(model: layers.LayersModel, record: dict) -> None:
    weights = [as_tensor(w) for w in record["weights"]]
    xs = [as_tensor(x) for x in record["inputs"]]
    try:
        model.set_weights(weights)
        for _ in range(2):  # the second call runs the compiled graph where the model is traceable (LAYERS_COMPILE)
            y = model.predict(xs if len(xs) > 1 else xs[0])
            ys = y if isinstance(y, list) else [y]
            assert len(ys) == len(record["outputs"])
            for out, ref in zip(ys, record["outputs"], strict=True):
                assert_close(out, ref)
            nf.dispose(ys)
    finally:
        nf.dispose([weights, xs])


@pytest.mark.parametrize("case", list(MODELS))
def test_names_json_summary(case):
    record = FIXTURE[case]
    model = MODELS[case]()
    try:
        assert model.name == record["model_name"]
        assert [layer.name for layer in model.layers] == record["layer_names"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        assert model.to_json(return_string=False) == record["json"]
        assert model.to_json() == record["json_string"]
        for summary in record["summaries"]:
            lines: list[str] = []
            model.summary(summary["line_length"], summary["positions"], print_fn=lines.append)
            assert lines == summary["lines"]
    finally:
        model.dispose()


@pytest.mark.parametrize("case", list(MODELS))
def test_predict_matches_tfjs(case):
    model = MODELS[case]()
    try:
        check_predict(model, FIXTURE[case])
    finally:
        model.dispose()


@pytest.mark.parametrize("case", list(MODELS))
def test_model_from_tfjs_json(case):
    """TF.js's toJSON() rebuilds an ndflow model that serializes back identically and predicts the same."""
    record = FIXTURE[case]
    model = layers.deserialize_layer(record["json"])
    try:
        assert model.to_json() == record["json_string"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        check_predict(model, record)
    finally:
        model.dispose()


def test_constraints_on_set_weights_and_regularizer_losses():
    record = FIXTURE["config_zoo"]
    model = MODELS["config_zoo"]()
    weights = [as_tensor(w) for w in record["weights"]]
    try:
        model.set_weights(weights)
        got = model.get_weights()
        for w, ref in zip(got, record["weights_after_set"], strict=True):
            assert_close(w, ref)
        losses = model.calculate_losses()
        assert len(losses) == len(record["losses"])
        for loss, ref in zip(losses, record["losses"], strict=True):
            assert_close(loss, ref, atol=1e-4)
        nf.dispose([got, losses])
    finally:
        nf.dispose(weights)
        model.dispose()


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_layers(name):
    record = FIXTURE["activations"]
    x = as_tensor(record["input"])
    layer = layers.activation(activation=name)
    y = layer.apply(x)
    try:
        assert_close(y, record["outputs"][name])
    finally:
        nf.dispose([x, y])
