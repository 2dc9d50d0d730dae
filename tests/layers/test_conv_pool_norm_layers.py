"""Convolution, pooling and normalization layers against real TF.js (``tests/fixtures/layers_cnn.json``).

Every case (``gen_layers_cnn.py``): default names, weight names, ``to_json()`` byte for byte,
``compute_output_shape``, ``predict`` with TF.js's weights, the training-mode output and moving
statistics, gradients of every trainable weight and of the input (TF.js's where it has them, a
finite-difference check where TF.js fails), the model rebuilt from TF.js's JSON; for the model
cases ``summary()`` and one SGD step. Then the places where ndflow deliberately differs from TF.js.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers import constraints, initializers, regularizers
from ndflow.layers.naming import to_snake_case

FIXTURE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "layers_cnn.json").read_text())
LAYER_CASES = [k for k, r in FIXTURE.items() if "layers" not in r["spec"]]
MODEL_CASES = [k for k, r in FIXTURE.items() if "layers" in r["spec"]]
ALL_CASES = LAYER_CASES + MODEL_CASES
NAMESPACES = {"regularizers": regularizers, "constraints": constraints, "initializers": initializers}


# -- helpers -----------------------------------------------------------------------------------------
def convert(value: Any) -> Any:
    """Case arguments as ndflow takes them (``{"$": "regularizers.l1l2", "args": {...}}`` -> an object)."""
    if isinstance(value, list):
        return [convert(v) for v in value]
    if isinstance(value, dict):
        if "$" in value:
            namespace, name = value["$"].split(".")
            return getattr(NAMESPACES[namespace], to_snake_case(name))(**convert(value.get("args", {})))
        return {k: convert(v) for k, v in value.items()}
    return value


def build(spec: dict) -> layers.Sequential:
    """The case's sequential model, built as ``gen_layers_cnn.js`` builds it in TF.js."""
    specs = spec.get("layers") or [{"py": spec["py"], "args": spec["args"]}]
    built = []
    for i, s in enumerate(specs):
        kwargs = convert(s["args"])
        if i == 0:
            kwargs["input_shape"] = spec["input_shape"][1:]
        built.append(getattr(layers, s["py"])(**kwargs))
    return layers.sequential(layers=built)


def as_tensor(record: dict) -> nf.Tensor:
    return nf.tensor(np.array(record["values"], dtype=np.float32).reshape(record["shape"]))


def assert_close(t: nf.Tensor, record: dict, atol: float = 1e-4) -> None:
    assert list(t.shape) == record["shape"]
    np.testing.assert_allclose(t.numpy().ravel(), np.array(record["values"], dtype=np.float32), rtol=1e-4, atol=atol)


def json_shape(shape: Any) -> Any:
    return [json_shape(s) for s in shape] if isinstance(shape, list | tuple) else shape


class Loaded:
    """A case's model with TF.js's weights set, and its input / dy tensors (disposed on exit)."""

    def __init__(self, case: str, from_json: bool = False) -> None:
        self.record = FIXTURE[case]
        spec = self.record["spec"]
        self.model = layers.deserialize_layer(self.record["json"]) if from_json else build(spec)
        self.training = bool(spec.get("training"))
        self.x = as_tensor(self.record["input"])
        self.dy = as_tensor(self.record["dy"]) if "dy" in self.record else None
        weights = [as_tensor(w) for w in self.record["weights"]]
        self.model.set_weights(weights)
        nf.dispose(weights)

    def __enter__(self) -> Loaded:
        return self

    def __exit__(self, *exc: object) -> None:
        nf.dispose([self.x, self.dy])
        self.model.dispose()

    def objective(self, x: nf.Tensor | None = None) -> nf.Tensor:
        """``sum(model(x) * dy)``, in the case's training mode."""
        return nf.sum(nf.mul(self.model.apply(self.x if x is None else x, {"training": self.training}), self.dy))


# -- TF.js parity, every case ------------------------------------------------------------------------
@pytest.mark.parametrize("case", ALL_CASES)
def test_names_json_and_shapes(case):
    record = FIXTURE[case]
    model = build(record["spec"])
    try:
        assert model.name == record["model_name"]
        assert [layer.name for layer in model.layers] == record["layer_names"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        assert [w.name for w in model.trainable_weights] == record["trainable_names"]
        if not record["spec"].get("json_deviation"):
            assert model.to_json(return_string=False) == record["json"]
            assert model.to_json() == record["json_string"]
        assert json_shape(model.outputs[0].shape) == record["output_shape"]
        first = model.layers[0]
        for probe, expected in zip(record["shape_probes"], record["computed_shapes"], strict=True):
            assert json_shape(first.compute_output_shape(tuple(probe))) == expected
        if "summary" in record:
            lines: list[str] = []
            model.summary(print_fn=lines.append)
            assert lines == record["summary"]
    finally:
        model.dispose()


@pytest.mark.parametrize("case", ALL_CASES)
def test_forward_matches_tfjs(case):
    with Loaded(case) as m:
        losses = m.model.calculate_losses()
        assert len(losses) == len(m.record["losses"])
        for loss, ref in zip(losses, m.record["losses"], strict=True):
            assert_close(loss, ref)
        nf.dispose(losses)
        y = m.model.predict(m.x)
        assert_close(y, m.record["output"])
        y.dispose()
        if m.training:
            y = m.model.apply(m.x, {"training": True})
            assert_close(y, m.record["train_output"])
            after = m.model.get_weights()
            for w, ref in zip(after, m.record["weights_after_train"], strict=True):
                assert_close(w, ref)
            nf.dispose([y, after])


def assign(variable: nf.Variable, value: np.ndarray) -> None:
    t = nf.tensor(value.astype(np.float32))
    variable.assign(t)
    t.dispose()


def objective_value(m: Loaded, x: np.ndarray | None = None) -> float:
    """The objective as a float (for finite differences), at the input ``x`` if given."""
    t = None if x is None else nf.tensor(x.astype(np.float32))
    value = nf.tidy(lambda: m.objective(t))
    result = float(value.numpy())
    nf.dispose([t, value])
    return result


def finite_difference_check(m: Loaded, variables: list[nf.Variable], grads: list[nf.Tensor], x_grad: nf.Tensor) -> None:
    """``<grad, v>`` against a central difference of the objective along random directions ``v``.

    Every weight is restored afterwards (a training-mode call moves BatchNormalization's statistics)."""
    saved = m.model.get_weights()
    rng = np.random.default_rng(0)
    eps = 1e-2
    originals = [v.numpy().astype(np.float64) for v in variables]
    directions = [rng.standard_normal(o.shape) for o in originals]
    values = []
    for sign in (1, -1):
        for v, o, d in zip(variables, originals, directions, strict=True):
            assign(v, o + sign * eps * d)
        values.append(objective_value(m))
    for v, o in zip(variables, originals, strict=True):
        assign(v, o)
    expected = sum(float(np.sum(g.numpy() * d)) for g, d in zip(grads, directions, strict=True))
    assert (values[0] - values[1]) / (2 * eps) == pytest.approx(expected, rel=2e-2, abs=2e-2)
    x = m.x.numpy().astype(np.float64)
    d = rng.standard_normal(x.shape)
    numeric = (objective_value(m, x + eps * d) - objective_value(m, x - eps * d)) / (2 * eps)
    m.model.set_weights(saved)
    nf.dispose(saved)
    assert numeric == pytest.approx(float(np.sum(x_grad.numpy() * d)), rel=2e-2, abs=2e-2)


@pytest.mark.parametrize("case", [c for c in ALL_CASES if "dy" in FIXTURE[c]])
def test_gradients_match_tfjs_and_reach_every_weight(case):
    with Loaded(case) as m:
        if m.training:  # reach TF.js's state: predict, then one training call, then the gradients
            nf.dispose(m.model.apply(m.x, {"training": True}))
        trainable = [w.read() for w in m.model.trainable_weights]
        _, grads = nf.variable_grads(m.objective, trainable) if trainable else (None, {})
        x_grad = nf.grad(m.objective)(m.x)
        try:
            weight_grads = [grads[v.name] for v in trainable]
            for g in weight_grads:
                assert np.isfinite(g.numpy()).all() and np.abs(g.numpy()).sum() > 0
            bug = m.record["spec"].get("tfjs_grad_bug")
            if "weight_grads" in m.record and bug != "weights":
                for g, ref in zip(weight_grads, m.record["weight_grads"], strict=True):
                    assert_close(g, ref, atol=1e-3)
            if "input_grad" in m.record and not bug:
                assert_close(x_grad, m.record["input_grad"], atol=1e-3)
            else:  # TF.js has no (right) gradient here: check ours numerically
                finite_difference_check(m, trainable, weight_grads, x_grad)
        finally:
            nf.dispose([list(grads.values()), x_grad, _])


@pytest.mark.parametrize("case", ALL_CASES)
def test_model_from_tfjs_json(case):
    """TF.js's toJSON() rebuilds a model that serializes back identically and predicts the same."""
    record = FIXTURE[case]
    if record["spec"].get("json_deviation") == "depth_multiplier":
        pytest.skip("TF.js drops depth_multiplier from its JSON: neither TF.js nor ndflow can reload it")
    with Loaded(case, from_json=True) as m:
        if not record["spec"].get("json_deviation"):
            assert m.model.to_json() == record["json_string"]
        assert [[w.name, w.original_name] for w in m.model.weights] == record["weight_names"]
        y = m.model.predict(m.x)
        assert_close(y, record["output"])
        y.dispose()


@pytest.mark.parametrize("case", MODEL_CASES)
def test_sgd_step_matches_tfjs(case):
    record = FIXTURE[case]
    with Loaded(case) as m:
        target = as_tensor(record["sgd_target"])
        before = [w.numpy() for w in m.model.trainable_weights for w in [w.read()]]
        optimizer = nf.train.sgd(record["spec"]["sgd_step"])

        def loss() -> nf.Tensor:
            return nf.mean(nf.square(nf.sub(m.model.apply(m.x, {"training": True}), target)))

        cost = optimizer.minimize(loss, True, [w.read() for w in m.model.trainable_weights])
        assert_close(cost, record["sgd_cost"])
        after = m.model.get_weights()
        for w, ref in zip(after, record["weights_after_sgd"], strict=True):
            assert_close(w, ref)
        for b, w in zip(before, m.model.trainable_weights, strict=True):
            assert not np.allclose(b, w.read().numpy()), f"{w.name} did not change"
        y = m.model.predict(m.x)
        assert_close(y, record["output_after_sgd"])
        nf.dispose([target, cost, after, y])
        optimizer.dispose()


# -- where ndflow differs from TF.js on purpose ------------------------------------------------------
def test_depthwise_constraint_is_written_correctly_and_tfjs_bug_json_loads(caplog):
    record = FIXTURE["depthwise_conv2d_regularizer_json"]
    tfjs_config = record["json"]["config"]["layers"][0]["config"]
    assert tfjs_config["depthwise_constraint"]["class_name"] == "L1L2"  # TF.js writes the regularizer there
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        model = layers.deserialize_layer(record["json"])
    try:
        assert "depthwise_constraint" in caplog.text
        config = json.loads(model.to_json())["config"]["layers"][0]["config"]
        assert config["depthwise_constraint"] is None
        assert config["depthwise_regularizer"] == tfjs_config["depthwise_regularizer"]
        expected = dict(tfjs_config, depthwise_constraint=None)
        assert config == expected
    finally:
        model.dispose()
    built = build(record["spec"])
    try:
        assert json.loads(built.to_json())["config"]["layers"][0]["config"] == expected
    finally:
        built.dispose()


def conv_reference(x: np.ndarray, kernel: np.ndarray, dilation: int = 1) -> np.ndarray:
    """Valid N-D convolution (NHWC-like, channels last) in float64, by explicit window sums."""
    k = kernel.shape[:-2]
    out_space = [x.shape[1 + i] - dilation * (k[i] - 1) for i in range(len(k))]
    y = np.zeros((x.shape[0], *out_space, kernel.shape[-1]))
    for idx in np.ndindex(*k):
        window = tuple(slice(dilation * i, dilation * i + n) for i, n in zip(idx, out_space, strict=True))
        y += np.tensordot(x[(slice(None), *window)], kernel[idx], axes=([-1], [0]))
    return y


def test_conv1d_causal_padding():
    layer = layers.conv1d(filters=2, kernel_size=3, dilation_rate=2, padding="causal")
    x_np = np.random.default_rng(1).standard_normal((2, 6, 3)).astype(np.float32)
    x = nf.tensor(x_np)
    y = layer.apply(x)
    try:
        kernel, bias = (w.read().numpy() for w in layer.weights)
        padded = np.pad(x_np, [[0, 0], [4, 0], [0, 0]]).astype(np.float64)
        np.testing.assert_allclose(y.numpy(), conv_reference(padded, kernel, 2) + bias, atol=1e-5)
        assert layer.compute_output_shape((None, 6, 3)) == (None, 6, 2)
        assert layer.get_config()["padding"] == "causal"
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_conv1d_channels_first_is_transposed_back_and_serialized():
    layer = layers.conv1d(filters=2, kernel_size=2, data_format="channelsFirst")
    x_np = np.random.default_rng(2).standard_normal((2, 3, 5)).astype(np.float32)
    x = nf.tensor(x_np)
    y = layer.apply(x)
    try:
        kernel, bias = (w.read().numpy() for w in layer.weights)
        expected = conv_reference(x_np.transpose(0, 2, 1).astype(np.float64), kernel) + bias
        np.testing.assert_allclose(y.numpy(), expected.transpose(0, 2, 1), atol=1e-5)
        assert y.shape == layer.compute_output_shape((2, 3, 5)) == (2, 2, 4)
        assert layer.get_config()["data_format"] == "channels_first"
        assert "data_format" not in layers.conv1d(filters=1, kernel_size=1).get_config()
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_depthwise_conv2d_honours_dilation():
    layer = layers.depthwise_conv2d(kernel_size=2, dilation_rate=2, depth_multiplier=2, use_bias=False)
    x_np = np.random.default_rng(3).standard_normal((1, 5, 5, 2)).astype(np.float32)
    x = nf.tensor(x_np)
    y = layer.apply(x)
    try:
        kernel = layer.weights[0].read().numpy()  # [2, 2, in=2, dm=2]
        expected = np.concatenate(
            [conv_reference(x_np[..., c : c + 1].astype(np.float64), kernel[:, :, c : c + 1, :], 2) for c in range(2)],
            axis=-1,
        )
        np.testing.assert_allclose(y.numpy(), expected, atol=1e-5)
        assert y.shape == layer.compute_output_shape((1, 5, 5, 2)) == (1, 3, 3, 4)
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_separable_conv2d_channels_first_bias_and_pointwise_initializer():
    cf = layers.separable_conv2d(
        filters=3, kernel_size=2, data_format="channelsFirst", bias_initializer="ones", pointwise_initializer="zeros"
    )
    cl = layers.separable_conv2d(filters=3, kernel_size=2, bias_initializer="ones")
    x_np = np.random.default_rng(4).standard_normal((1, 2, 4, 5)).astype(np.float32)
    x_cf, x_cl = nf.tensor(x_np), nf.tensor(x_np.transpose(0, 2, 3, 1))
    y_cf = cf.apply(x_cf)
    try:
        assert np.all(cf.weights[1].read().numpy() == 0)  # TF.js would use the depthwise initializer
        nf.dispose(cl.apply(x_cl))
        cl.set_weights([w.read() for w in cf.weights])
        y_cl = cl.apply(x_cl)
        np.testing.assert_allclose(y_cf.numpy(), y_cl.numpy().transpose(0, 3, 1, 2), atol=1e-5)
        assert np.allclose(y_cf.numpy(), 1.0)
        y_cl.dispose()
    finally:
        nf.dispose([x_cf, x_cl, y_cf])
        cf.dispose()
        cl.dispose()


def test_separable_conv2d_depth_multiplier_round_trips():
    record = FIXTURE["separable_conv2d_dm2_same_stride_relu"]
    model = build(record["spec"])
    try:
        config = json.loads(model.to_json())["config"]["layers"][0]["config"]
        assert config == dict(record["json"]["config"]["layers"][0]["config"], depth_multiplier=2)
        clone = layers.SeparableConv2D.from_config(config)
        assert clone.depth_multiplier == 2
    finally:
        model.dispose()
    assert "depth_multiplier" not in layers.separable_conv2d(filters=2, kernel_size=1).get_config()


def test_batch_norm_training_without_center_or_scale_and_rank5():
    layer = layers.batch_normalization(center=False, scale=False, momentum=0.5, axis=1)
    x_np = np.random.default_rng(5).standard_normal((3, 2, 2, 2, 2)).astype(np.float32) * 3 + 1
    x = nf.tensor(x_np)
    y = layer(x, training=True)
    try:
        mean = x_np.mean(axis=(0, 2, 3, 4), dtype=np.float64)
        var = x_np.var(axis=(0, 2, 3, 4), dtype=np.float64)
        shape = (1, 2, 1, 1, 1)
        expected = (x_np - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
        np.testing.assert_allclose(y.numpy(), expected, atol=1e-4)
        moving_mean, moving_var = (w.read().numpy() for w in layer.weights)
        np.testing.assert_allclose(moving_mean, 0.5 * mean, atol=1e-5)
        np.testing.assert_allclose(moving_var, 0.5 + 0.5 * var, atol=1e-4)
        assert layer.trainable_weights == []
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_batch_norm_moving_statistics_converge_over_steps():
    layer = layers.batch_normalization(momentum=0.9)
    x = nf.tensor(np.random.default_rng(6).standard_normal((64, 3)).astype(np.float32) * 2 + 5)
    try:
        for _ in range(60):
            nf.dispose(layer(x, training=True))
        moving_mean = layer.weights[2].read().numpy()
        np.testing.assert_allclose(moving_mean, x.numpy().mean(axis=0), rtol=0.01)
        y = layer.apply(x)  # inference now uses the moving statistics: about unit variance
        assert np.allclose(y.numpy().std(axis=0), 1, atol=0.05)
        y.dispose()
    finally:
        x.dispose()
        layer.dispose()


def test_global_pooling_keepdims():
    layer = layers.global_average_pooling2d(keepdims=True)
    x = nf.ones([2, 3, 4, 5])
    y = layer.apply(x)
    try:
        assert y.shape == layer.compute_output_shape((2, 3, 4, 5)) == (2, 1, 1, 5)
        assert layer.get_config()["keepdims"] is True
        assert "keepdims" not in layers.global_average_pooling2d().get_config()
    finally:
        nf.dispose([x, y])


def test_batch_norm_accepts_keras_single_axis_list():
    layer = layers.BatchNormalization.from_config({"axis": [3], "name": "bn"})
    x = nf.ones([2, 2, 2, 3])
    y = layer.apply(x)
    try:
        assert [w.shape for w in layer.weights] == [(3,)] * 4
        assert layer.get_config()["axis"] == [3]
    finally:
        nf.dispose([x, y])
        layer.dispose()


@pytest.mark.parametrize(
    ("factory", "kwargs", "message"),
    [
        ("conv2d", {"kernel_size": 3}, "Conv2D: expected filters to be a positive integer, got None"),
        ("conv2d", {"filters": 0, "kernel_size": 3}, "Conv2D: expected filters"),
        ("conv2d", {"filters": 2}, "Conv2D: the kernel_size argument is required"),
        ("conv2d", {"filters": 2, "kernel_size": [3, 3, 3]}, "Conv2D: the kernel_size argument must be"),
        ("conv3d", {"filters": 2, "kernel_size": 2, "strides": [1, 0, 1]}, "Conv3D: the strides argument"),
        ("conv2d", {"filters": 2, "kernel_size": 2, "padding": "causal"}, "Conv2D: 'causal' is not a valid padding"),
        ("conv2d", {"filters": 2, "kernel_size": 2, "data_format": "NHWC"}, "Conv2D: 'NHWC' is not a valid data_form"),
        ("conv2d_transpose", {"filters": 2, "kernel_size": 2, "dilation_rate": 2}, "Conv2DTranspose: dilation_rate"),
        ("separable_conv2d", {"filters": 2, "kernel_size": 2, "kernel_initializer": "ones"}, "SeparableConv2D: k"),
        ("depthwise_conv2d", {"kernel_size": 2, "depth_multiplier": 0}, "DepthwiseConv2D: expected depth_multiplier"),
        ("max_pooling2d", {"pool_size": [2, 2, 2]}, "MaxPooling2D: the pool_size argument"),
        ("average_pooling1d", {"padding": "full"}, "AveragePooling1D: 'full' is not a valid padding"),
        ("up_sampling2d", {"interpolation": "cubic"}, "UpSampling2D: 'cubic' is not a valid interpolation"),
        ("cropping2d", {"cropping": [1, 2, 3]}, "Cropping2D: cropping must be"),
        ("zero_padding2d", {"padding": [[1], [2]]}, "ZeroPadding2D: padding must be"),
        ("batch_normalization", {"axis": [1, 2]}, "BatchNormalization: expected axis to be an integer"),
        ("batch_normalization", {"momentum": "fast"}, "BatchNormalization: expected momentum to be a number"),
        ("layer_normalization", {"axis": 1.5}, "LayerNormalization: expected axis"),
        ("conv2d", {"filters": 2, "kernel_size": 2, "kernelSize": 2}, "unexpected argument"),
    ],
)
def test_argument_errors_name_layer_and_argument(factory, kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(")):
        getattr(layers, factory)(**kwargs)


def test_input_errors_name_the_layer():
    conv = layers.conv2d(filters=1, kernel_size=2)
    x3 = nf.ones([2, 3, 3])
    try:
        with pytest.raises(ValueError, match="conv2d_Conv2D1: inputs to Conv2D should have rank 4"):
            conv.apply(x3)
        bn = layers.batch_normalization(axis=3)
        with pytest.raises(ValueError, match="batch_normalization_BatchNormalization1: axis 3 is out of range"):
            bn.apply(x3)
        crop = layers.cropping2d(cropping=2)
        x4 = nf.ones([1, 3, 3, 1])
        with pytest.raises(ValueError, match="cropping2d_Cropping2D1: cropping"):
            crop.apply(x4)
        x4.dispose()
    finally:
        x3.dispose()
