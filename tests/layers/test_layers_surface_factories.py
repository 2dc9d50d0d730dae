"""The layer factories as TF.js writes them and as Python shows them: a TF.js config dict as the only positional
argument (camelCase or snake_case keys), uniform hints for camelCase keywords, real signatures and docstrings;
Keras-only config keys (ReLU's ``negative_slope`` / ``threshold``, ``KERAS_NEUTRAL_KEYS``) computed or refused."""

from __future__ import annotations

import inspect
import logging
import typing

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers.aliases import ALIASES
from ndflow.layers.factory_docs import FACTORY_DOCS
from ndflow.layers.utils import accepted_kwargs

#: Public functions of nf.layers that are not layer factories.
NOT_FACTORIES = {
    "deserialize_layer", "early_stopping", "load_layers_model", "model", "sequential", "register_callback_constructor",
}  # fmt: skip
FACTORIES = sorted(
    n
    for n in layers.__all__
    if inspect.isfunction(getattr(layers, n))
    and n[0].islower()
    and n not in NOT_FACTORIES
    and not n.startswith("load_")
)


def test_the_factory_list_is_complete() -> None:
    assert set(FACTORIES) == set(FACTORY_DOCS) | set(ALIASES)


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_have_real_signatures_and_docstrings(name: str) -> None:
    factory = getattr(layers, name)
    params = list(inspect.signature(factory).parameters.values())
    assert params[0].name == "config" and params[0].kind is inspect.Parameter.POSITIONAL_ONLY
    keywords = [p for p in params[1:] if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keywords and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    assert all(p.annotation is not inspect.Parameter.empty for p in keywords)
    hints = typing.get_type_hints(factory)  # resolvable, for tools that evaluate annotations
    assert isinstance(hints["return"], type) or issubclass(typing.get_args(hints["return"])[0], layers.Layer)
    doc = factory.__doc__ or ""
    assert "Input shape:" in doc and "Output shape:" in doc and "Example::" in doc
    assert "TF.js: ``tf.layers." in doc or name == "random_height"
    lines = {line.split("``")[1]: line for line in doc.splitlines() if line.startswith("- ``")}
    for p in keywords:  # each argument listed, with what it means
        assert p.name in lines and "): " in lines[p.name], p.name


@pytest.mark.parametrize("name", sorted(FACTORY_DOCS))
def test_signatures_stay_in_sync_with_the_classes(name: str) -> None:
    factory = getattr(layers, name)
    returns = inspect.signature(factory).return_annotation
    cls = returns if isinstance(returns, type) else typing.get_args(returns)[0]
    accepted = accepted_kwargs(cls, layers.Layer)
    if accepted is not None and hasattr(cls, "_cell_params"):  # recurrent layers pass their cell's arguments on
        accepted |= cls._cell_params()
    keywords = set(list(inspect.signature(factory).parameters)[1:])
    if accepted is not None:  # every argument of the signature reaches the class
        assert keywords <= accepted | {"cell"}, keywords - accepted


# -- TF.js config dicts ----------------------------------------------------------------------------------------
def test_config_dict_keys_camel_or_snake() -> None:
    a = layers.dense({"units": 4, "inputShape": [3], "useBias": False, "name": "a"})
    b = layers.dense({"units": 4, "input_shape": [3], "use_bias": False, "name": "a"})
    c = layers.dense(units=4, input_shape=[3], use_bias=False, name="a")
    assert a.get_config() == b.get_config() == c.get_config()
    d = layers.dense({"units": 4}, activation="relu")  # keywords beside the dict
    assert d.units == 4 and d.get_config()["activation"] == "relu"
    assert layers.dense({"units": 2, "inputShape": [3], "inputDType": "int32"}).dtype == "int32"
    assert layers.input_layer({"inputShape": [3], "dtype": "int32"}).dtype == "int32"


def test_nf_input_takes_a_config_dict() -> None:
    x = nf.input({"shape": [3], "dtype": "int32", "name": "x"})
    assert (x.shape, x.dtype, x.name) == ((None, 3), "int32", "x")
    assert nf.input({"batchShape": [2, 3]}).shape == (2, 3)
    with pytest.raises(TypeError, match=r"input: unexpected config key\(s\) \['foo'\]"):
        nf.input({"shape": [3], "foo": 1})


def test_config_dict_errors_name_the_factory() -> None:
    with pytest.raises(TypeError, match=r"dense: 'units' is given both in the config dict and as a keyword"):
        layers.dense({"units": 4}, units=5)
    with pytest.raises(TypeError, match=r"dense: config gives 'input_shape' twice"):
        layers.dense({"units": 4, "inputShape": [3], "input_shape": [3]})
    with pytest.raises(TypeError, match=r"dense: the only positional argument is a TF.js config dict .* got int"):
        layers.dense(4)
    with pytest.raises(TypeError, match=r"Dense: unexpected argument\(s\) 'bogus'"):
        layers.dense({"units": 4, "bogus": 1})


CAMEL_CASES = [
    ("dense", {"units": 2, "inputShape": [3]}),
    ("conv2d", {"filters": 2, "kernelSize": 3}),
    ("lstm", {"units": 2, "returnSequences": True}),
    ("max_pool2d", {"poolSize": 2}),
]


@pytest.mark.parametrize("name, kwargs", CAMEL_CASES)
def test_camel_case_keywords_get_the_snake_case_hint(name: str, kwargs: dict) -> None:
    with pytest.raises(TypeError, match=r"unexpected argument\(s\) '\w+' \(use '\w+'\)"):
        getattr(layers, name)(**kwargs)


def test_merge_factories_take_a_list_or_a_config_dict() -> None:
    a, b = nf.tensor([[1.0, 2.0]]), nf.tensor([[3.0, 4.0]])
    total = layers.add([a, b])
    joined = layers.concatenate({"axis": -1}).apply([a, b])
    same = layers.add(inputs=[a, b])
    assert total.array_sync() == [[4.0, 6.0]] == same.array_sync() and joined.shape == (1, 4)
    assert layers.dot({"axes": 1, "normalize": True}).normalize
    nf.dispose([a, b, total, joined, same])


# -- Keras-only keys -------------------------------------------------------------------------------------------
def keras_relu(x: np.ndarray, max_value: float | None, slope: float, threshold: float) -> np.ndarray:
    """Keras's backend relu: ``x * (x > threshold)`` clipped to ``max_value``, minus ``slope * relu(threshold - x)``."""
    y = x * (x > threshold) if threshold else np.maximum(x, 0)
    if max_value is not None:
        y = np.clip(y, 0, max_value)
    return y - slope * np.maximum(threshold - x, 0)


@pytest.mark.parametrize("max_value, slope, threshold", [(None, 0.1, 0.0), (6.0, 0.0, 1.0), (2.0, 0.2, 0.5)])
def test_relu_computes_kerass_negative_slope_and_threshold(max_value, slope, threshold, caplog) -> None:
    config = {"max_value": max_value, "negative_slope": slope, "threshold": threshold, "name": "r"}
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        layer = layers.ReLU.from_config(config)
    assert not caplog.records
    values = np.array([-3.0, -0.5, 0.0, 0.5, 1.0, 1.5, 7.0], dtype="float32")
    x = nf.tensor(values)
    y = layer.apply(x)
    np.testing.assert_allclose(y.numpy(), keras_relu(values, max_value, slope, threshold), rtol=1e-6)
    assert layers.ReLU.from_config(layer.get_config()).get_config() == layer.get_config()
    nf.dispose([x, y])


def test_relu_config_is_tfjss_with_the_defaults_and_refuses_negative_values() -> None:
    assert layers.relu(max_value=6, name="r").get_config() == {"max_value": 6, "name": "r", "trainable": True}
    with pytest.raises(ValueError, match="ReLU: negative_slope must be >= 0"):
        layers.ReLU.from_config({"negative_slope": -1.0})


def test_leaky_relu_reads_keras_3s_negative_slope() -> None:
    assert layers.LeakyReLU.from_config({"negative_slope": 0.2}).alpha == 0.2
    with pytest.raises(ValueError, match="disagree"):
        layers.LeakyReLU.from_config({"negative_slope": 0.2, "alpha": 0.3})


@pytest.mark.parametrize(
    "cls, config, bad",
    [
        (layers.BatchNormalization, {}, {"synchronized": True}),
        (layers.LayerNormalization, {}, {"rms_scaling": True}),
        (layers.Dense, {"units": 2}, {"lora_rank": 4}),
        (layers.Conv2DTranspose, {"filters": 2, "kernel_size": 3}, {"output_padding": [1, 1]}),
        (layers.LSTM, {"units": 2}, {"time_major": True}),
        (layers.CategoryEncoding, {"num_tokens": 3}, {"sparse": True}),
    ],
)
def test_newer_keras_keys_load_at_their_default_and_are_refused_otherwise(cls, config, bad, caplog) -> None:
    key = next(iter(bad))
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        cls.from_config({**config, key: layers.engine.base.KERAS_NEUTRAL_KEYS[key]})
    assert not caplog.records
    with pytest.raises(NotImplementedError, match=f"{cls.__name__}.from_config: {key}="):
        cls.from_config({**config, **bad})
