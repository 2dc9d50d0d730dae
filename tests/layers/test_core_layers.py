"""Dense, Activation, Flatten, Reshape, Dropout and the Layer base: eager and symbolic calls, shapes, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers


def test_dense_eager_builds_and_names_weights():
    layer = layers.dense(units=2, kernel_initializer="ones", bias_initializer="zeros")
    x = nf.tensor([[1.0, 2.0, 3.0]])
    y = layer.apply(x)
    try:
        assert layer.name == "dense_Dense1"
        assert [w.name for w in layer.weights] == ["dense_Dense1/kernel", "dense_Dense1/bias"]
        assert [w.shape for w in layer.weights] == [(3, 2), (2,)]
        np.testing.assert_allclose(y.numpy(), [[6.0, 6.0]])
        assert layer.count_params() == 8
        assert layer.built
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_call_operator_and_numpy_inputs():
    layer = layers.dense(units=1, kernel_initializer="ones", use_bias=False)
    before = nf.memory().num_tensors
    y = layer(np.array([[1.0, 2.0]], dtype=np.float32))
    try:
        assert nf.memory().num_tensors == before + 1 + 1  # the kernel and the output; the converted input is freed
        np.testing.assert_allclose(y.numpy(), [[3.0]])
    finally:
        y.dispose()
        layer.dispose()


def test_eager_apply_keeps_only_outputs():
    layer = layers.dense(units=3, activation="softmax")
    x = nf.ones([4, 5])
    layer.apply(x).dispose()  # build
    before = nf.memory().num_tensors
    y = layer.apply(x)
    try:
        assert nf.memory().num_tensors == before + 1
    finally:
        nf.dispose([x, y])
        layer.dispose()


def test_dense_on_rank3_input_and_symbolic_shape():
    x = layers.input(shape=[2, 3])
    layer = layers.dense(units=5, activation="sigmoid")
    y = layer.apply(x)
    assert isinstance(y, layers.SymbolicTensor)
    assert y.shape == (None, 2, 5)
    assert y.name == "dense_Dense1/dense_Dense1"
    assert layer.output_shape == (None, 2, 5)
    value = nf.ones([4, 2, 3])
    out = layer.apply(value)
    try:
        assert out.shape == (4, 2, 5)
    finally:
        nf.dispose([value, out])
        assert layer.dispose() == layers.DisposeResult(0, 2)  # the symbolic call took the only reference
    assert layer.is_disposed


def test_dense_input_dim_and_config():
    layer = layers.dense(units=2, input_dim=7)
    assert layer.batch_input_shape == (None, 7)
    config = layer.get_config()
    assert config["batch_input_shape"] == [None, 7]
    assert list(config)[:3] == ["units", "activation", "use_bias"]
    assert list(config)[-4:] == ["name", "trainable", "batch_input_shape", "dtype"]
    with pytest.raises(ValueError, match="positive integer"):
        layers.dense(units=0)
    with pytest.raises(TypeError, match="unexpected argument"):
        layers.dense(units=1, unit=2)
    with pytest.raises(TypeError, match="'inputShape' \\(use 'input_shape'\\)"):
        layers.dense(units=1, inputShape=[2])


def test_input_spec_errors():
    layer = layers.dense(units=2)
    x, wrong = nf.ones([2, 3]), nf.ones([2, 4])
    try:
        with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
            layer.apply(layers.input(batch_shape=[3]))
        layer.apply(x).dispose()
        with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3 but got shape"):
            layer.apply(wrong)
    finally:
        nf.dispose([x, wrong])
        layer.dispose()


def test_mixed_symbolic_and_tensor_inputs_raise():
    layer = layers.Layer()
    x = nf.ones([1])
    try:
        with pytest.raises(ValueError, match="all SymbolicTensors or all Tensors"):
            layer.apply([layers.input(shape=[1]), x])
    finally:
        x.dispose()


def test_activation_layer_copies_its_input_for_linear():
    layer = layers.activation(activation="linear")
    x = nf.tensor([1.0, -2.0])
    y = layer.apply(x)
    try:
        assert y is not x
        np.testing.assert_allclose(y.numpy(), [1.0, -2.0])
        assert layer.get_config() == {"activation": "linear", "name": "activation_Activation1", "trainable": True}
    finally:
        nf.dispose([x, y])


def test_activation_names_both_spellings():
    a = layers.activation(activation="hard_sigmoid")
    b = layers.activation(activation="hardSigmoid")
    assert a.get_config()["activation"] == b.get_config()["activation"] == "hard_sigmoid"
    with pytest.raises(ValueError, match="Unknown activation: nope"):
        layers.activation(activation="nope")


def test_flatten():
    layer = layers.flatten()
    x = nf.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    rank2 = nf.ones([2, 3])
    y = layer.apply(x)
    try:
        assert y.shape == (2, 12)
        np.testing.assert_allclose(y.numpy(), x.numpy().reshape(2, 12))
        assert layer.compute_output_shape((None, 3, 4)) == (None, 12)
        with pytest.raises(ValueError, match="not fully defined"):
            layer.compute_output_shape((None, None, 4))
        with pytest.raises(ValueError, match="min_ndim=3"):
            layer.apply(rank2)
    finally:
        nf.dispose([x, y, rank2])


def test_flatten_channels_first():
    layer = layers.flatten(data_format="channelsFirst")
    x = nf.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    y = layer.apply(x)
    try:
        np.testing.assert_allclose(y.numpy(), x.numpy().transpose(0, 2, 1).reshape(2, 12))
        assert layer.get_config()["data_format"] == "channels_first"
    finally:
        nf.dispose([x, y])
    with pytest.raises(ValueError, match="not a valid data_format"):
        layers.flatten(data_format="nchw")


def test_reshape():
    layer = layers.reshape(target_shape=[-1, 2])
    x = nf.ones([3, 4])
    y = layer.apply(x)
    try:
        assert y.shape == (3, 2, 2)
        assert layer.get_config()["target_shape"] == [None, 2]
        assert layer.compute_output_shape((5, 6)) == (5, 3, 2)
        assert layer.compute_output_shape((None, 6)) == (None, None, 2)  # TF.js: any unknown dim, incl. batch
        with pytest.raises(ValueError, match="total size of new array must be unchanged"):
            layers.reshape(target_shape=[5]).apply(x)
        with pytest.raises(ValueError, match="only specify one unknown dimension"):
            layers.reshape(target_shape=[-1, -1]).apply(x)
    finally:
        nf.dispose([x, y])


def test_dropout_inference_and_training():
    layer = layers.dropout(rate=0.5, seed=1)
    x = nf.ones([100, 10])
    y_infer = layer.apply(x)
    y_train = layer.apply(x, {"training": True})
    y_call = layer(x, training=True)
    try:
        np.testing.assert_allclose(y_infer.numpy(), 1.0)
        values = y_train.numpy()
        assert set(np.unique(values)) <= {0.0, 2.0}
        assert 0.3 < (values == 0).mean() < 0.7
        assert y_call.shape == (100, 10)
        assert layer.get_config() == {
            "rate": 0.5, "noise_shape": None, "seed": 1, "name": "dropout_Dropout1", "trainable": True,
        }  # fmt: skip
    finally:
        nf.dispose([x, y_infer, y_train, y_call])


def test_dropout_noise_shape():
    layer = layers.dropout(rate=0.5, noise_shape=[None, 1])
    x = nf.ones([50, 4])
    y = layer.apply(x, {"training": True})
    try:
        rows = y.numpy()
        assert all(len(set(row)) == 1 for row in rows)  # one draw per row
    finally:
        nf.dispose([x, y])


def test_get_set_weights():
    layer = layers.dense(units=2)
    x = nf.ones([1, 3])
    layer.apply(x).dispose()
    new = [nf.ones([3, 2]), nf.tensor([0.5, -0.5])]
    try:
        layer.set_weights(new)
        got = layer.get_weights()
        np.testing.assert_allclose(got[0].numpy(), 1.0)
        np.testing.assert_allclose(got[1].numpy(), [0.5, -0.5])
        assert got[0] is not layer.kernel.read()  # copies the caller owns
        nf.dispose(got)
        layer.set_weights([np.zeros((3, 2)), [1.0, 2.0]])  # numpy arrays and lists too
        np.testing.assert_allclose(layer.bias.read().numpy(), [1.0, 2.0])
        trainable = layer.get_weights(trainable_only=True)
        assert len(trainable) == 2
        nf.dispose(trainable)
        with pytest.raises(ValueError, match="expecting 2 weights"):
            layer.set_weights([new[0]])
        with pytest.raises(ValueError, match="not compatible with provided weight shape"):
            layer.set_weights([new[1], new[0]])
    finally:
        nf.dispose([x, new])
        layer.dispose()


def test_trainable_flag_moves_weights():
    layer = layers.dense(units=2, trainable=False)
    x = nf.ones([1, 3])
    layer.apply(x).dispose()
    try:
        assert layer.trainable_weights == []
        assert len(layer.non_trainable_weights) == 2
        layer.trainable = True
        assert len(layer.trainable_weights) == 2
        assert all(w.read().trainable for w in layer.weights)
    finally:
        x.dispose()
        layer.dispose()


def test_add_weight_duplicate_name_and_regularizer_loss():
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [1], initializer="ones", regularizer=layers.regularizers.l2(l2=0.5))
            with pytest.raises(ValueError, match="Duplicate weight name w"):
                self.add_weight("w", [1])
            self.built = True

        def call(self, inputs, **kwargs):
            return nf.mul(inputs, self.w.read())

    layer = Scale()
    x = nf.tensor([2.0])
    y = layer.apply(x)
    losses = layer.calculate_losses()
    try:
        assert layer.name == "scale_Scale1"
        assert layer.weights[0].name == "scale_Scale1/w"
        np.testing.assert_allclose(y.numpy(), [2.0])
        np.testing.assert_allclose(losses[0].numpy(), 0.5)
    finally:
        nf.dispose([x, y, losses])
        layer.dispose()


def test_dispose_errors_and_use_after_dispose():
    layer = layers.dense(units=1)
    with pytest.raises(RuntimeError, match="not been built"):
        layer.dispose()
    x = nf.ones([1, 2])
    layer.apply(x).dispose()
    result = layer.dispose()
    try:
        assert result == layers.DisposeResult(0, 2)
        with pytest.raises(RuntimeError, match="already disposed"):
            layer.apply(x)
        with pytest.raises(RuntimeError, match="already disposed"):
            layer.dispose()
    finally:
        x.dispose()


def test_weights_names_stay_unique_for_same_layer_names():
    a, b = layers.dense(units=1, name="same"), layers.dense(units=1, name="same")
    x = nf.ones([1, 2])
    a.apply(x).dispose()
    b.apply(x).dispose()
    try:
        assert [w.name for w in b.weights] == ["same/kernel_1", "same/bias_1"]
        assert [w.original_name for w in b.weights] == ["same/kernel", "same/bias"]
    finally:
        x.dispose()
        a.dispose()
        b.dispose()


def test_layer_output_attributes_and_nodes():
    x = layers.input(shape=[3], name="in")
    layer = layers.dense(units=2)
    y = layer.apply(x)
    assert layer.input is x
    assert layer.output is y
    assert layer.get_output_at(0) is y
    assert layer.inbound_nodes[0].inbound_layers[0].name == "in"
    y2 = layer.apply(layers.input(shape=[3]))
    assert y2.name == "dense_Dense1/dense_Dense1_1"
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        layer.output  # noqa: B018
    assert layer.output_shape == (None, 2)
    layer.dispose()
    layer.dispose()
