"""Class registry, Keras-format configs, JSON round trips, custom layers, and clear errors."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers import serialization


@serialization.register_class
class TimesTwo(layers.Layer):
    """A custom layer: 2 * x, with a config field."""

    class_name = "TimesTwoForTests"

    def __init__(self, factor: float = 2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs, **kwargs):
        return nf.mul(inputs, self.factor)

    def get_config(self):
        config = {"factor": self.factor}
        config.update(super().get_config())
        return config


def test_register_class_and_names():
    assert serialization.get_registered_class("TimesTwoForTests") is TimesTwo
    assert serialization.get_registered_name(TimesTwo) == "Custom>TimesTwoForTests"
    assert "Dense" in serialization.registered_class_names()
    layer = TimesTwo()
    assert layer.name == "times_two_for_tests_TimesTwoForTests1"
    with pytest.raises(ValueError, match="class_name"):
        serialization.register_class(type("NoName", (), {"class_name": ""}))


def test_custom_layer_round_trip_in_functional_model():
    x = layers.input(shape=[2], name="x")
    y = TimesTwo(factor=3.0, name="triple").apply(layers.dense(units=2, kernel_initializer="ones").apply(x))
    model = layers.model(inputs=x, outputs=y, name="custom")
    config = model.to_json(return_string=False)
    rebuilt = layers.deserialize_layer(json.loads(model.to_json()))
    value = nf.tensor([[1.0, 2.0]])
    try:
        assert config["config"]["layers"][2] == {
            "name": "triple",
            "class_name": "TimesTwoForTests",
            "config": {"factor": 3.0, "name": "triple", "trainable": True},
            "inbound_nodes": [[["dense_Dense1", 0, 0, {}]]],
        }
        assert rebuilt.to_json() == model.to_json()
        rebuilt.set_weights([np.ones((2, 2)), np.zeros(2)])
        a, b = model.predict(value), rebuilt.predict(value)
        np.testing.assert_allclose(a.numpy(), [[9.0, 9.0]])
        np.testing.assert_allclose(b.numpy(), a.numpy())
        nf.dispose([a, b])
    finally:
        value.dispose()
        model.dispose()
        rebuilt.dispose()


def test_unknown_class_error_names_it():
    with pytest.raises(ValueError, match=r"(?s)Unknown layer: NoSuchLayer\..*nf\.serialization\.register_class"):
        layers.deserialize_layer({"class_name": "NoSuchLayer", "config": {}})
    bad = {"class_name": "Sequential", "config": {"name": "s", "layers": [{"class_name": "Mystery", "config": {}}]}}
    with pytest.raises(ValueError, match="Unknown layer: Mystery"):
        layers.deserialize_layer(bad)
    with pytest.raises(ValueError, match="Unknown initializer: bogus"):
        layers.dense(units=1, kernel_initializer="bogus")
    with pytest.raises(ValueError, match="improper config format"):
        serialization.deserialize({"config": {}})
    with pytest.raises(ValueError, match="is not a layer class"):
        layers.deserialize_layer({"class_name": "Zeros", "config": {}})


def test_sequential_from_config_forms_and_unknown_keys(caplog):
    layer_configs = [{"class_name": "Dense", "config": {"units": 2, "batch_input_shape": [None, 3], "name": "d",
                                                 "dtype": "float32", "kernel_initializer": "ones",
                                                 "keras_only_option": 1}}]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        from_list = layers.Sequential.from_config(layer_configs)
    assert "keras_only_option" in caplog.text
    from_dict = layers.deserialize_layer(
        {"class_name": "Sequential", "config": {"name": "named", "layers": layer_configs}}
    )
    try:
        assert from_dict.name == "named"
        assert from_list.layers[0].name == "d"
        assert from_list.inputs[0].name == "d_input"
        assert from_list.to_json(return_string=False)["config"]["layers"][0]["config"]["kernel_initializer"] == {
            "class_name": "Ones", "config": {},
        }  # fmt: skip
        with pytest.raises(ValueError, match="Legacy serialization format"):
            layers.Sequential.from_config([{"class_name": "Merge", "config": {}}])
    finally:
        from_list.dispose()
        from_dict.dispose()


def test_corrupted_functional_config():
    x = layers.input(shape=[2], name="x")
    model = layers.model(inputs=x, outputs=layers.dense(units=1, name="d").apply(x))
    config = model.get_config()
    model.dispose()
    config["layers"][1]["inbound_nodes"] = [[["ghost", 0, 0, {}]]]
    with pytest.raises(ValueError, match=r"can never be computed \(unknown layer\(s\) \['ghost'\]\)"):
        layers.LayersModel.from_config(config)
    config["layers"][1]["inbound_nodes"] = ["not a list of lists"]
    with pytest.raises(ValueError, match="Corrupted configuration"):
        layers.LayersModel.from_config(config)


def test_functional_class_name_from_keras():
    x = layers.input(shape=[2], name="x")
    model = layers.model(inputs=x, outputs=layers.dense(units=1, name="d").apply(x))
    topology = model.to_json(return_string=False)
    model.dispose()
    topology["class_name"] = "Functional"
    rebuilt = layers.deserialize_layer(topology)
    try:
        assert isinstance(rebuilt, layers.Functional)
        assert rebuilt.get_class_name() == "Functional"
    finally:
        rebuilt.dispose()


def test_call_args_are_serialized():
    x = layers.input(shape=[2], name="x")
    y = layers.dropout(rate=0.5, name="drop").apply(x, {"training": True})
    model = layers.model(inputs=x, outputs=y)
    try:
        nodes = model.get_config()["layers"][1]["inbound_nodes"]
        assert nodes == [[["x", 0, 0, {"training": True}]]]
    finally:
        model.dispose()


@pytest.mark.parametrize(
    "value, text",
    [(1.0, "1"), (0.5, "0.5"), (1e-7, "1e-7"), (1e-6, "0.000001"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
     (-2.5e-5, "-0.000025"), (0.1 + 0.2, "0.30000000000000004"), (float("nan"), "null"), (True, "true"), (3, "3")],
)  # fmt: skip
def test_js_numbers(value, text):
    assert serialization.js_number(value) == text


def test_to_json_matches_json_stringify():
    assert (
        serialization.to_json({"a": [1.0, None, "é\n"], "b": {"c": False}}) == '{"a":[1,null,"é\\n"],"b":{"c":false}}'
    )
    with pytest.raises(TypeError, match="cannot serialize"):
        serialization.to_json({"a": object()})
