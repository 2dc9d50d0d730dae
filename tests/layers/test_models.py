"""Sequential and functional models: building, running, weights, nesting, sharing, errors and memory."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers


def ones_model() -> layers.Sequential:
    """x -> relu(x @ 1 + 0) -> sum over units (kernels of ones, biases of zeros)."""
    return layers.sequential(
        layers=[
            layers.dense(units=3, input_shape=[2], kernel_initializer="ones", activation="relu"),
            layers.dense(units=1, kernel_initializer="ones"),
        ]
    )


def test_sequential_basics():
    model = ones_model()
    x = nf.tensor([[1.0, 2.0], [-1.0, -2.0]])
    y = model.predict(x)
    try:
        np.testing.assert_allclose(y.numpy(), [[9.0], [0.0]])
        assert model.name == "sequential_1"
        assert [layer.name for layer in model.layers] == ["dense_Dense1", "dense_Dense2"]
        assert model.inputs[0].name == "dense_Dense1_input"
        assert model.outputs[0].shape == (None, 1)
        assert model.count_params() == 13
        assert model.get_layer("dense_Dense2") is model.layers[1]
        assert model.get_layer(0) is model.layers[0]
        assert model.get_layer(index=1) is model.layers[1]
        with pytest.raises(ValueError, match="No such layer: nope"):
            model.get_layer("nope")
        with pytest.raises(ValueError, match="only has 2 layer"):
            model.get_layer(5)
    finally:
        nf.dispose([x, y])
        model.dispose()


def test_sequential_add_pop_and_call():
    model = layers.sequential()
    with pytest.raises(ValueError, match="must get an input_shape or batch_input_shape"):
        model.add(layers.dense(units=2))
    model.add(layers.dense(units=2, input_shape=[3], kernel_initializer="ones"))
    model.add(layers.dense(units=4))
    assert model.outputs[0].shape == (None, 4)
    extra = model.layers[-1]
    model.pop()
    assert model.outputs[0].shape == (None, 2)
    x = nf.ones([2, 3])
    y = model.apply(x)  # a model is a layer
    try:
        np.testing.assert_allclose(y.numpy(), 3.0)
    finally:
        nf.dispose([x, y])
        model.dispose()
        extra.dispose()


def test_predict_leaves_only_outputs_and_batches():
    model = ones_model()
    x = nf.tensor(np.arange(10, dtype=np.float32).reshape(5, 2))
    model.predict(x).dispose()  # warm
    before = nf.memory().num_tensors
    y_all = model.predict(x)
    assert nf.memory().num_tensors == before + 1
    y_small = model.predict(x, batch_size=2)
    y_batch = model.predict_on_batch(x)
    try:
        np.testing.assert_allclose(y_small.numpy(), y_all.numpy())
        np.testing.assert_allclose(y_batch.numpy(), y_all.numpy())
        with pytest.raises(ValueError, match="positive integer"):
            model.predict(x, batch_size=0)
    finally:
        nf.dispose([x, y_all, y_small, y_batch])
        model.dispose()
    assert nf.memory().num_tensors == before - 5  # x and the 4 weights


def test_predict_input_checks_and_numpy():
    model = ones_model()
    bad, vector = nf.ones([2, 3]), nf.tensor([1.0, 2.0])
    try:
        with pytest.raises(ValueError, match=r"expected dense_Dense1_input to have shape \[null,2\]"):
            model.predict(bad)
        with pytest.raises(ValueError, match=r"but got array with shape \[2, 1\]"):
            model.predict(vector)  # rank 1 becomes a column, as in TF.js
        y = model.predict(np.ones((4, 2)))
        assert y.shape == (4, 1)
        y.dispose()
    finally:
        nf.dispose([bad, vector])
        model.dispose()


def test_functional_multi_io_shared_layer_and_dispose():
    a, b = layers.input(shape=[2], name="a"), layers.input(shape=[2], name="b")
    shared = layers.dense(units=2, kernel_initializer="ones", name="shared")
    ya, yb = shared.apply(a), shared.apply(b)
    out = layers.dense(units=1, kernel_initializer="ones").apply(ya)
    model = layers.model(inputs=[a, b], outputs=[out, yb])
    xa, xb = nf.tensor([[1.0, 2.0]]), nf.tensor([[3.0, 4.0]])
    try:
        assert [layer.name for layer in model.layers] == ["a", "shared", "b", "dense_Dense1"]
        assert model.name == "model1"
        assert len(model.weights) == 4
        ys = model.predict([xa, xb])
        np.testing.assert_allclose(ys[0].numpy(), [[6.0]])
        np.testing.assert_allclose(ys[1].numpy(), [[7.0, 7.0]])
        by_name = model.predict({"a": xa, "b": xb})
        np.testing.assert_allclose(by_name[1].numpy(), [[7.0, 7.0]])
        nf.dispose([ys, by_name])
        with pytest.raises(ValueError, match="expects 2 input tensors"):
            model.predict(xa)
        assert model.compute_output_shape([(None, 2), (None, 2)]) == [(None, 1), (None, 2)]
    finally:
        nf.dispose([xa, xb])
    before = nf.memory().num_tensors
    result = model.dispose()
    assert result.num_disposed_variables == 4
    assert nf.memory().num_tensors == before - 4  # the shared layer is freed too (TF.js would keep it)
    assert shared.is_disposed


def test_execute_intermediate_outputs():
    x = layers.input(shape=[2], name="x")
    h = layers.dense(units=3, kernel_initializer="ones", name="h").apply(x)
    y = layers.dense(units=1, kernel_initializer="ones", name="y").apply(h)
    model = layers.model(inputs=x, outputs=y)
    value = nf.tensor([[1.0, 1.0]])
    try:
        hidden, out = model.execute(value, [h.name, y.name])
        np.testing.assert_allclose(hidden.numpy(), [[2.0, 2.0, 2.0]])
        np.testing.assert_allclose(out.numpy(), [[6.0]])
        nf.dispose([hidden, out])
        with pytest.raises(ValueError, match="Cannot find SymbolicTensors"):
            model.execute(value, "nope")
    finally:
        value.dispose()
        model.dispose()


def test_nested_models_and_dispose():
    inner = layers.sequential(layers=[layers.dense(units=3, input_shape=[2], kernel_initializer="ones")], name="inner")
    x = layers.input(shape=[2])
    y = inner.apply(x)
    assert y.shape == (None, 3)
    out = layers.dense(units=1, kernel_initializer="ones").apply(y)
    outer = layers.model(inputs=x, outputs=out)
    seq = layers.sequential(layers=[outer, layers.activation(activation="relu")])
    value = nf.tensor([[1.0, -2.0]])
    try:
        assert [layer.name for layer in outer.layers] == ["input1", "inner", "dense_Dense2"]
        assert len(seq.weights) == 4
        results = [seq.predict(value), outer.predict(value)]
        np.testing.assert_allclose(results[0].numpy(), [[0.0]])  # relu(3 * (1 - 2))
        np.testing.assert_allclose(results[1].numpy(), [[-3.0]])
        nf.dispose(results)
    finally:
        value.dispose()
    before = nf.memory().num_tensors
    assert seq.dispose().num_disposed_variables == 4
    assert outer.is_disposed and inner.is_disposed  # nested models are released with their owner, as in TF.js
    assert nf.memory().num_tensors == before - 4


def test_model_trainable_and_weights():
    model = ones_model()
    try:
        assert len(model.trainable_weights) == 4
        model.trainable = False
        assert model.trainable_weights == []
        assert len(model.non_trainable_weights) == 4
        lines: list[str] = []
        model.summary(print_fn=lines.append)
        assert lines[-3:-1] == ["Trainable params: 0", "Non-trainable params: 13"]
        model.trainable = True
        model.layers[0].trainable = False
        assert [w.name for w in model.trainable_weights] == ["dense_Dense2/kernel", "dense_Dense2/bias"]
        weights = model.get_weights()
        assert [tuple(w.shape) for w in weights] == [(3, 1), (1,), (2, 3), (3,)]  # trainable first
        nf.dispose(weights)
    finally:
        model.dispose()


def test_load_weights_by_original_name():
    model = ones_model()
    values = {"dense_Dense1/kernel": nf.zeros([2, 3]), "dense_Dense1/bias": nf.ones([3]),
              "dense_Dense2/kernel": nf.ones([3, 1]), "dense_Dense2/bias": nf.zeros([1])}  # fmt: skip
    x = nf.ones([1, 2])
    try:
        model.load_weights(values)
        y = model.predict(x)
        np.testing.assert_allclose(y.numpy(), [[3.0]])
        y.dispose()
        with pytest.raises(ValueError, match="no target variable: extra"):
            model.load_weights({**values, "extra": values["dense_Dense1/bias"]})
        with pytest.raises(ValueError, match="1 of 4 weights are not set"):
            model.load_weights({k: v for k, v in values.items() if k != "dense_Dense2/bias"})
        assert [w["name"] for w in model.get_named_weights()] == list(values)
    finally:
        nf.dispose([x, values])
        model.dispose()


def test_training_flag_reaches_dropout_and_gradients_flow():
    model = layers.sequential(
        layers=[layers.dense(units=4, input_shape=[3]), layers.dropout(rate=0.5, seed=3), layers.dense(units=1)]
    )
    x = nf.ones([8, 3])
    try:
        infer_a, infer_b = model.apply(x), model.apply(x)
        np.testing.assert_allclose(infer_a.numpy(), infer_b.numpy())
        nf.dispose([infer_a, infer_b])

        def loss() -> nf.Tensor:
            return nf.mean(nf.square(model.apply(x, {"training": True})))

        value, grads = nf.variable_grads(loss, [w.read() for w in model.trainable_weights])
        assert set(grads) == {w.name for w in model.trainable_weights}
        assert all(g.shape == w.shape for g, w in zip(grads.values(), model.trainable_weights, strict=True))
        nf.dispose([value, list(grads.values())])
    finally:
        x.dispose()
        model.dispose()


def test_graph_errors():
    a, b = layers.input(shape=[2]), layers.input(shape=[2])
    dense = layers.dense(units=1)
    h = dense.apply(b)
    with pytest.raises(RuntimeError, match="Graph disconnected"):
        layers.model(inputs=a, outputs=h)
    with pytest.raises(ValueError, match="redundant"):
        layers.model(inputs=[b, b], outputs=h)
    with pytest.raises(TypeError, match="Input layers to a LayersModel must be InputLayer objects"):
        layers.model(inputs=h, outputs=h)
    x = layers.input(shape=[2])
    twins = [layers.dense(units=2, name="twin"), layers.dense(units=2, name="twin")]
    y = twins[1].apply(twins[0].apply(x))
    with pytest.raises(RuntimeError, match='The name "twin" is used 2 times in the model'):
        layers.model(inputs=x, outputs=y)
    for layer in [dense, *twins]:
        layer.dispose()
    with pytest.raises(ValueError, match="Cannot pass any input to an InputLayer"):
        a.source_layer.apply(a)
    with pytest.raises(ValueError, match="either a shape or a batch_shape"):
        layers.input()


def test_sequential_rejects_multi_io_models_and_connected_layers():
    a, b = layers.input(shape=[2]), layers.input(shape=[2])
    two_in = layers.model(inputs=[a, b], outputs=a)
    with pytest.raises(ValueError, match="single input tensor"):
        layers.sequential(layers=[two_in])
    used = layers.dense(units=1)
    used.apply(layers.input(shape=[2]))
    used.apply(layers.input(shape=[2]))
    with pytest.raises(ValueError, match="must not already be connected"):
        layers.sequential(layers=[used])
    empty = layers.sequential()
    with pytest.raises(TypeError, match="model is empty"):
        empty.build()
    with pytest.raises(TypeError, match="no layers"):
        empty.pop()
    used.dispose()
    used.dispose()


def test_masks_travel_through_the_graph():
    seen = []

    class MakeMask(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def compute_mask(self, inputs, mask=None):
            return nf.not_equal(inputs, 0)

        def call(self, inputs, **kwargs):
            return nf.mul(inputs, 2)

    class ReadMask(layers.Layer):
        def call(self, inputs, mask=None, **kwargs):
            seen.append(None if mask is None else mask.numpy())
            return inputs

    x = layers.input(shape=[3])
    model = layers.model(inputs=x, outputs=ReadMask().apply(MakeMask().apply(x)))
    value = nf.tensor([[0.0, 1.0, 2.0]])
    try:
        y = model.predict(value)
        np.testing.assert_allclose(y.numpy(), [[0.0, 2.0, 4.0]])
        np.testing.assert_array_equal(seen[0], [[False, True, True]])
        y.dispose()
    finally:
        value.dispose()
        model.dispose()


def test_feeds_are_cast_to_the_input_dtype_without_leaks():
    model = ones_model()
    x = nf.tensor([[1, 2]], dtype="int32")
    try:
        before = nf.memory().num_tensors
        y = model.predict(x)
        hidden = model.execute({"dense_Dense1_input": x}, "dense_Dense1/dense_Dense1")
        assert nf.memory().num_tensors == before + 2
        assert y.dtype == "float32"
        np.testing.assert_allclose(y.numpy(), [[9.0]])
        np.testing.assert_allclose(hidden.numpy(), [[3.0, 3.0, 3.0]])
        nf.dispose([y, hidden])
    finally:
        x.dispose()
        model.dispose()


def test_intermediates_are_freed_during_execution():
    model = layers.sequential(
        layers=[layers.dense(units=64, input_shape=[64])] + [layers.dense(units=64) for _ in range(9)]
    )
    x = nf.ones([256, 64])
    one = 256 * 64 * 4  # bytes of one activation
    try:
        start = nf.memory().num_bytes
        info = nf.profile(lambda: model.predict(x))
        assert info.peak_bytes - start < 4 * one  # 10 layers, never more than a few activations alive
        info.result.dispose()
    finally:
        x.dispose()
        model.dispose()
