"""The layers surface of issue 26 against TF.js 4.22 (``tests/fixtures/gen_layers_surface.py``): every TF.js layer
factory and registered layer class exists, ``CategoryEncoding`` and ``RandomWidth`` compute what TF.js computes,
the alias factories are the same layers, TF.js config objects build the same models, ``model_from_json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers.model_json import model_from_json
from ndflow.layers.naming import to_snake_case

FIXTURE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "layers_surface.json").read_text())

#: TF.js names whose snake_case ndflow spells as Python users expect (TF.js's toSnakeCase splits ``reLU``).
SPELLED = {"reLU": "relu", "leakyReLU": "leaky_relu", "thresholdedReLU": "thresholded_relu", "cropping2D": "cropping2d"}


def as_tensor(record: dict, dtype: str | None = None) -> nf.Tensor:
    dtype = dtype or record.get("dtype", "float32")
    return nf.tensor(np.array(record["values"], dtype=dtype).reshape(record["shape"]), dtype=dtype)


def assert_record(t: nf.Tensor, record: dict, atol: float = 1e-5) -> None:
    assert list(t.shape) == record["shape"] and t.dtype == record["dtype"]
    np.testing.assert_allclose(t.numpy().ravel(), np.array(record["values"], dtype="float64"), rtol=1e-5, atol=atol)


def camel_config(config: dict) -> dict:
    return {to_snake_case(k): v for k, v in config.items()}


# -- every TF.js layer ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tfjs_name", FIXTURE["registry"]["factories"])
def test_every_tfjs_layer_factory_exists(tfjs_name: str) -> None:
    name = tfjs_name if tfjs_name[0].isupper() else SPELLED.get(tfjs_name, to_snake_case(tfjs_name))
    assert callable(getattr(layers, name)), f"nf.layers.{name} (TF.js tf.layers.{tfjs_name})"


@pytest.mark.parametrize("class_name", FIXTURE["registry"]["layerClasses"])
def test_every_tfjs_layer_class_is_registered(class_name: str) -> None:
    cls = nf.serialization.get_registered_class(class_name)
    assert cls is not None and issubclass(cls, layers.Layer)


def test_tf_models_namespace_has_model_from_json_only() -> None:
    assert FIXTURE["registry"]["models"] == ["modelFromJSON"]


# -- CategoryEncoding ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("run", FIXTURE["category_encoding"]["runs"], ids=lambda r: f"{r.get('outputMode')}")
def test_category_encoding_matches_tfjs(run: dict) -> None:
    layer = layers.category_encoding({"numTokens": run["numTokens"], "outputMode": run.get("outputMode")})
    x = as_tensor(run["x"], run["x"].get("dtype", "int32"))
    kwargs = {"countWeights": as_tensor(run["w"])} if "w" in run else {}
    assert {**camel_config(run["config"]), "name": layer.name} == layer.get_config()
    if "error" in run["result"]:
        with pytest.raises(ValueError, match="input values must be in|output rank is at most 2"):
            layer.apply(x, kwargs)
    else:
        y = layer.apply(x, kwargs)
        record = run["result"]["ok"]
        if run["x"]["shape"] == [3] and run.get("outputMode") == "multiHot":
            # TF.js's denseBincount op ignores binary_output for a rank-1 x (it counts); ndflow's op marks presence
            record = {**record, "values": [min(v, 1) for v in record["values"]]}
        assert_record(y, record)
        y.dispose()
    nf.dispose([x, *kwargs.values()])


def test_category_encoding_output_shapes_match_tfjs() -> None:
    for shape, expected in zip(
        [[None, 1], [None, 3], [None], [2, 5, 1]], FIXTURE["category_encoding"]["shapes"], strict=True
    ):
        for mode, want in zip(["oneHot", "multiHot", "count", "int"], expected, strict=True):
            got = layers.category_encoding(num_tokens=7, output_mode=mode).compute_output_shape(tuple(shape))
            if mode == "int":  # TF.js writes num_tokens over the last axis even in 'int' mode, which returns x
                want = shape
            assert list(got) == want, (shape, mode)


def test_category_encoding_in_a_model_matches_tfjs() -> None:
    case = FIXTURE["category_model"]
    model = layers.sequential(
        layers=[
            layers.reshape({"targetShape": [4], "inputShape": [4]}),
            layers.category_encoding(num_tokens=6, output_mode="count"),
        ]
    )
    assert json.loads(model.to_json()) == case["json"]
    x = nf.tensor([[0, 1, 1, 5], [2, 2, 2, 2]], dtype="int32")
    y = model.predict(x)
    assert_record(y, case["predict"])
    nf.dispose([x, y])
    model.dispose()


def test_category_encoding_keras_modes_and_refusals() -> None:
    assert (
        layers.CategoryEncoding.from_config({"num_tokens": 3, "output_mode": "one_hot", "sparse": False}).output_mode
        == "oneHot"
    )
    with pytest.raises(NotImplementedError, match="sparse=True"):
        layers.CategoryEncoding.from_config({"num_tokens": 3, "sparse": True})
    with pytest.raises(ValueError, match="invalid output_mode 'binary'"):
        layers.category_encoding(num_tokens=3, output_mode="binary")
    with pytest.raises(ValueError, match="positive integer"):
        layers.category_encoding(num_tokens=0)
    x = nf.tensor([[0, 1]], dtype="int32")
    with pytest.raises(ValueError, match="'tfIdf' needs idf weights"):
        layers.category_encoding(num_tokens=3, output_mode="tfIdf").apply(x)
    with pytest.raises(ValueError, match="count_weights is only used with output_mode 'count'"):
        layers.category_encoding(num_tokens=3).apply(x, {"count_weights": x})
    x.dispose()


# -- RandomWidth / RandomHeight --------------------------------------------------------------------------------
@pytest.mark.parametrize("run", FIXTURE["random_resize"]["runs"], ids=lambda r: json.dumps(r["args"]))
def test_random_width_matches_tfjs(run: dict) -> None:
    layer = layers.random_width(run["args"])
    assert layer.get_config() == {**camel_config(run["before"]), "name": layer.name}
    lower, upper = (run["args"]["factor"], run["args"]["factor"])
    lower = lower[0] if isinstance(lower, list) else -lower
    upper = upper[1] if isinstance(upper, list) else upper
    for k, draw in enumerate(run["draws"]):  # the seeded stream is TF.js's
        d = nf.random_uniform([1], 1 + lower, 1 + upper, "float32", run["args"]["seed"] + k)
        np.testing.assert_allclose(d.data_sync()[0], draw, rtol=1e-6)
        d.dispose()
    x = as_tensor(FIXTURE["random_resize"]["image"])
    for record in run["outputs"]:
        y = layer.apply(x)
        assert_record(y, record, atol=1e-4)
        y.dispose()
    assert layer.get_config() == {**camel_config(run["after"]), "name": layer.name}
    same = layer.apply(x, {"training": False})  # beyond TF.js: inference leaves the images alone, as Keras does
    np.testing.assert_array_equal(same.numpy(), x.numpy())
    nf.dispose([x, same])


@pytest.mark.parametrize("args", [{"factor": 0}, {"factor": -0.5}, {"factor": [0.5, 0.1]}, {"factor": [-2, 0.5]},
                                  {"factor": 0.2, "interpolation": "bicubic"}])  # fmt: skip
def test_random_width_refuses_what_tfjs_refuses(args: dict) -> None:
    assert all("error" in e for e in FIXTURE["random_resize"]["errors"])
    with pytest.raises(ValueError, match="RandomWidth: "):
        layers.random_width(args)


def test_random_height_is_random_width_on_the_other_axis() -> None:
    image = as_tensor(FIXTURE["random_resize"]["image"])
    for interpolation in ("bilinear", "nearest"):
        w = layers.random_width(factor=[-0.3, 0.8], seed=11, interpolation=interpolation)
        h = layers.random_height(factor=[-0.3, 0.8], seed=11, interpolation=interpolation)
        transposed = nf.transpose(image, [0, 2, 1, 3])
        yw, yh = w.apply(image), h.apply(transposed)
        np.testing.assert_allclose(np.transpose(yh.numpy(), [0, 2, 1, 3]), yw.numpy(), atol=1e-5)
        nf.dispose([transposed, yw, yh])
    image.dispose()


def test_random_resize_shapes_configs_and_serialization() -> None:
    model = layers.sequential(layers=[layers.random_width(factor=0.25, seed=1, input_shape=[4, 6, 2])])
    assert model.outputs[0].shape == (None, 4, None, 2)
    rebuilt = model_from_json(model.to_json())
    assert rebuilt.layers[0].get_config() == model.layers[0].get_config()
    assert isinstance(rebuilt.layers[0], layers.RandomWidth)
    assert layers.random_height(factor=0.1).compute_output_shape((3, 5, 1)) == (None, 5, 1)
    with pytest.raises(ValueError, match="expected an image"):
        layers.random_width(factor=0.1).compute_output_shape((None, 5))
    unseeded = layers.random_width(factor=0.1)
    assert "seed" not in unseeded.get_config()
    model.dispose()
    rebuilt.dispose()


# -- alias factories -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", FIXTURE["aliases"], ids=lambda c: c["alias"])
def test_alias_factories_are_the_same_layers(case: dict) -> None:
    assert case["className"] == case["mainClassName"] and case["config"] == case["mainConfig"]
    alias, main = getattr(layers, to_snake_case(case["alias"])), getattr(layers, to_snake_case(case["main"]))
    args = {**case["config"], "name": "x"}
    args = {k: v for k, v in args.items() if k in ("poolSize", "name")}
    a, m = alias(args), main(args)
    assert type(a) is type(m) and type(a).__name__ == case["className"]
    assert a.get_config() == m.get_config()
    assert a.__class__.__name__ in alias.__doc__ and "Input shape" in alias.__doc__


# -- TF.js config objects --------------------------------------------------------------------------------------
def test_config_objects_build_the_models_tfjs_builds() -> None:
    model = layers.sequential(
        layers=[
            layers.conv2d({"filters": 2, "kernelSize": 3, "strides": 2, "padding": "same", "inputShape": [8, 8, 1],
                           "useBias": False, "kernelInitializer": "ones", "dilationRate": 1}),
            layers.max_pool2d({"poolSize": 2, "dataFormat": "channelsLast"}),
            layers.reshape({"targetShape": [2, 4]}),
            layers.lstm({"units": 3, "returnSequences": True, "recurrentActivation": "sigmoid",
                         "kernelInitializer": "ones", "recurrentInitializer": "zeros"}),
            layers.global_max_pool1d({}),
            layers.dense({"units": 2, "activation": "relu", "kernelInitializer": "ones", "biasInitializer": "zeros"}),
            layers.relu({"maxValue": 6}),
            layers.leaky_relu({"alpha": 0.2}),
        ]
    )  # fmt: skip
    assert json.loads(model.to_json()) == FIXTURE["config_objects"]["json"]
    model.dispose()


# -- model_from_json -------------------------------------------------------------------------------------------
def test_model_from_json_reads_every_layout_as_tfjs() -> None:
    case = FIXTURE["model_from_json"]
    topology = case["topology"]
    old_layout = {"keras_version": "x", "backend": "y", "model_config": topology}
    layouts = [topology, {"modelTopology": topology}, {"modelTopology": old_layout}, json.dumps(topology)]
    x = as_tensor(case["inputs"])
    for layout, loaded in zip(layouts, [*case["loaded"], case["loaded"][0]], strict=True):
        model = model_from_json(layout)
        assert json.loads(model.to_json()) == loaded["json"] and type(model).__name__ == loaded["className"]
        y = model.predict(x)
        assert_record(y, case["predict"])
        y.dispose()
        model.dispose()
    x.dispose()


def test_model_from_json_loads_weights_from_a_manifest(tmp_path: Path) -> None:
    model = layers.sequential(layers=[layers.dense(units=2, input_shape=[3], name="d")])
    model.save(f"file://{tmp_path}")
    saved = json.loads((tmp_path / "model.json").read_text())
    loaded = model_from_json({**saved, "pathPrefix": str(tmp_path)})
    mine, theirs = model.get_weights(), loaded.get_weights()
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    nf.dispose([*mine, *theirs])
    model.dispose()
    loaded.dispose()


@pytest.mark.parametrize(
    "value, error, match",
    [
        ("{not json", ValueError, "model_from_json: the string is not valid JSON"),
        (3, TypeError, "expected a model JSON string or dict, got int"),
        ({"modelTopology": {"foo": 1}}, ValueError, "expected a Keras model config"),
        ({"class_name": "Dense", "config": {"units": 2}}, ValueError, "describes a 'Dense' layer, not a model"),
    ],
)
def test_model_from_json_errors(value, error, match) -> None:
    with pytest.raises(error, match=match):
        model_from_json(value)
