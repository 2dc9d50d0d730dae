"""LayersModel.predict through the graph-model optimizer and program: the same outputs as the eager path,
invalidation when the weights change, the eager path for layers the graph cannot hold, no leaks, the flag."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.layers.engine.compiled_inference import compile_refused, is_compiled

L = nf.layers


def _randomize(model: nf.LayersModel, seed: int = 0) -> None:
    """Weights with some spread (batch-norm statistics included), so a fold or fusion bug shows."""
    rng = np.random.RandomState(seed)
    values = []
    for w in model.weights:
        shape = tuple(w.shape)
        scale = 0.3 if len(shape) > 1 else 1.0
        values.append(nf.tensor(rng.uniform(0.5, 1.5, shape).astype("float32") * scale))
    model.set_weights(values)
    for t in values:
        t.dispose()


def _both(model: nf.LayersModel, x: np.ndarray | list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Outputs of the eager path and of the compiled path, as arrays."""
    xs = [nf.tensor(a) for a in (x if isinstance(x, list) else [x])]
    try:
        results = []
        for flag in (False, True):
            nf.env().set("LAYERS_COMPILE", flag)
            if flag:  # the first call with new weights runs eagerly; the second traces the graph
                nf.dispose(model.predict(xs if len(xs) > 1 else xs[0], batch_size=4))
            out = model.predict(xs if len(xs) > 1 else xs[0], batch_size=4)
            outs = out if isinstance(out, list) else [out]
            results.append([o.numpy() for o in outs])
            for o in outs:
                o.dispose()
        return results[0], results[1]
    finally:
        for t in xs:
            t.dispose()


def _close(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    for u, v in zip(a, b, strict=True):
        assert u.shape == v.shape
        np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(u).max())))


def _images(n: int = 3, h: int = 12, w: int = 12, c: int = 3, seed: int = 1) -> np.ndarray:
    return np.random.RandomState(seed).rand(n, h, w, c).astype("float32")


def _mobilenet_like(final: str = "softmax") -> nf.LayersModel:
    inp = nf.input(shape=[12, 12, 3])
    x = L.zero_padding2d(padding=1).apply(inp)
    x = L.conv2d(filters=8, kernel_size=3, strides=2, use_bias=False).apply(x)
    x = L.batch_normalization().apply(x)
    x = L.relu(max_value=6).apply(x)
    h = L.conv2d(filters=16, kernel_size=1, use_bias=False).apply(x)
    h = L.batch_normalization(epsilon=1e-3).apply(h)
    h = L.relu(max_value=6).apply(h)
    h = L.depthwise_conv2d(kernel_size=3, padding="same", use_bias=False).apply(h)
    h = L.batch_normalization().apply(h)
    h = L.relu(max_value=6).apply(h)
    h = L.conv2d(filters=8, kernel_size=1, use_bias=False).apply(h)
    h = L.batch_normalization(center=False, scale=False).apply(h)
    x = L.add().apply([x, h])
    x = L.separable_conv2d(filters=12, kernel_size=3, padding="same", activation="relu").apply(x)
    x = L.global_average_pooling2d().apply(x)
    x = L.dropout(rate=0.5).apply(x)
    out = L.dense(units=5, activation=final).apply(x)
    return nf.model(inputs=inp, outputs=out)


def test_mobilenet_like_matches_eager():
    model = _mobilenet_like()
    _randomize(model)
    eager, compiled = _both(model, _images(5))  # two batches of 4 and 1: one plan, two input shapes
    assert is_compiled(model) and compile_refused(model) is None
    _close(eager, compiled)
    model.dispose()


@pytest.mark.parametrize(
    "body",
    [
        lambda x: L.conv2d(filters=4, kernel_size=3, strides=2, padding="valid", activation="tanh").apply(x),
        lambda x: L.conv2d(filters=4, kernel_size=2, dilation_rate=2, padding="same", activation="elu").apply(x),
        lambda x: L.depthwise_conv2d(kernel_size=3, depth_multiplier=2, activation="sigmoid").apply(x),
        lambda x: L.max_pooling2d(pool_size=2, strides=2).apply(L.activation(activation="selu").apply(x)),
        lambda x: L.average_pooling2d(pool_size=3, strides=1, padding="same").apply(x),
        lambda x: L.global_max_pooling2d().apply(L.leaky_relu(alpha=0.3).apply(x)),
        lambda x: L.dense(units=3, activation="relu6").apply(L.flatten().apply(x)),
        lambda x: L.reshape(target_shape=[6, 72]).apply(L.activation(activation="softplus").apply(x)),
        lambda x: L.up_sampling2d(size=[2, 3]).apply(L.batch_normalization().apply(x)),
        lambda x: L.up_sampling2d(size=2, interpolation="bilinear").apply(x),
        lambda x: L.concatenate(axis=-1).apply([x, L.activation(activation="relu").apply(x)]),
        lambda x: L.multiply().apply([x, L.conv2d(filters=3, kernel_size=1).apply(x)]),
    ],
)
def test_layer_kinds_match_eager(body):
    inp = nf.input(shape=[12, 12, 3])
    model = nf.model(inputs=inp, outputs=body(inp))
    _randomize(model, seed=3)
    eager, compiled = _both(model, _images())
    assert is_compiled(model), compile_refused(model)
    _close(eager, compiled)
    model.dispose()


def test_several_inputs_and_outputs_and_sequential():
    a, b = nf.input(shape=[4]), nf.input(shape=[4])
    s = L.add().apply([a, b])
    y1 = L.dense(units=3, activation="tanh").apply(s)
    y2 = L.batch_normalization().apply(L.dense(units=2).apply(L.concatenate().apply([a, y1])))
    model = nf.model(inputs=[a, b], outputs=[y1, y2, s])
    _randomize(model)
    rng = np.random.RandomState(2)
    eager, compiled = _both(model, [rng.rand(6, 4).astype("float32"), rng.rand(6, 4).astype("float32")])
    assert is_compiled(model)
    _close(eager, compiled)
    model.dispose()
    seq = nf.sequential(layers=[L.dense(units=4, input_shape=[3], activation="relu"), L.dense(units=2)])
    eager, compiled = _both(seq, rng.rand(5, 3).astype("float32"))
    _close(eager, compiled)
    seq.add(L.dense(units=1))  # a new layer: the old internal model's graph is freed
    eager, compiled = _both(seq, rng.rand(5, 3).astype("float32"))
    assert compiled[0].shape == (5, 1)
    _close(eager, compiled)
    seq.dispose()


def test_set_weights_and_fit_invalidate():
    model = _mobilenet_like("linear")  # logits: a stale folded weight would show, softmax could hide it
    x = nf.tensor(_images(4))
    nf.dispose(model.predict(x))
    first = model.predict(x)
    assert is_compiled(model)
    _randomize(model, seed=7)
    eager, compiled = _both(model, _images(4))
    _close(eager, compiled)
    assert not np.allclose(first.numpy(), compiled[0])
    y = nf.tensor(np.eye(5, dtype="float32")[[0, 1, 2, 3]])
    model.compile(optimizer="sgd", loss="meanSquaredError")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0)  # batch norm's moving statistics move too
    eager, compiled = _both(model, _images(4))
    _close(eager, compiled)
    for t in (first, x, y):
        t.dispose()
    model.dispose()


def test_evaluate_uses_the_same_outputs():
    model = nf.sequential(layers=[L.dense(units=3, input_shape=[4], activation="sigmoid")])
    model.compile(optimizer="sgd", loss="meanSquaredError")
    x, y = nf.tensor(np.random.RandomState(0).rand(8, 4).astype("float32")), nf.zeros([8, 3])
    values = []
    for flag in (False, True):
        nf.env().set("LAYERS_COMPILE", flag)
        loss = model.evaluate(x, y, batch_size=4)
        values.append(loss.numpy())
        loss.dispose()
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)
    for t in (x, y):
        t.dispose()
    model.dispose()


def test_untraceable_layers_run_eagerly():
    inp = nf.input(shape=[5], dtype="int32")
    x = L.embedding(input_dim=10, output_dim=3, mask_zero=True).apply(inp)
    out = L.lstm(units=2).apply(x)
    model = nf.model(inputs=inp, outputs=out)
    xs = nf.tensor(np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]], dtype="int32"))
    for _ in range(2):
        y = model.predict(xs)
        y.dispose()
    assert not is_compiled(model)
    assert "Embedding" in (compile_refused(model) or "")
    xs.dispose()
    model.dispose()
    inp = nf.input(shape=[3, 4, 2])
    model = nf.model(inputs=inp, outputs=L.conv2d(filters=2, kernel_size=1, data_format="channelsFirst").apply(inp))
    eager, compiled = _both(model, np.random.RandomState(0).rand(2, 3, 4, 2).astype("float32"))
    assert "data_format" in (compile_refused(model) or "")
    _close(eager, compiled)
    model.dispose()


def test_flag_off_never_compiles_and_dispose_frees_everything():
    before = nf.memory().num_tensors
    model = _mobilenet_like()
    weights = nf.memory().num_tensors
    x = nf.tensor(_images(2))
    nf.env().set("LAYERS_COMPILE", False)
    model.predict(x).dispose()
    assert not is_compiled(model)
    nf.env().set("LAYERS_COMPILE", True)
    for _ in range(3):
        model.predict(x).dispose()
    assert is_compiled(model)
    assert nf.memory().num_tensors > weights + 1  # the folded weights and constants of the graph
    x.dispose()
    model.dispose()
    assert nf.memory().num_tensors == before


def test_nested_models_are_written_in_place():
    inp = nf.input(shape=[8, 8, 3])
    x = L.batch_normalization().apply(L.conv2d(filters=4, kernel_size=3, padding="same").apply(inp))
    base = nf.model(inputs=inp, outputs=L.global_average_pooling2d().apply(x))
    head = nf.sequential(layers=[L.dense(units=3, input_shape=[4], activation="relu"), L.dense(units=2)])
    outer_in = nf.input(shape=[8, 8, 3])
    model = nf.model(inputs=outer_in, outputs=head.apply(base.apply(outer_in)))
    _randomize(model)
    eager, compiled = _both(model, _images(3, 8, 8))
    assert is_compiled(model), compile_refused(model)
    _close(eager, compiled)
    _randomize(base, seed=5)  # the inner model's weights change: the outer graph is traced again
    eager, compiled = _both(model, _images(3, 8, 8))
    _close(eager, compiled)
    model.dispose()


def test_first_call_with_new_weights_runs_eagerly():
    model = nf.sequential(layers=[L.dense(units=2, input_shape=[3], activation="relu")])
    x = nf.ones([1, 3])
    model.predict(x).dispose()
    assert not is_compiled(model._ensure_model())  # one call: no trace
    model.predict(x).dispose()
    assert is_compiled(model._ensure_model())
    _randomize(model)
    model.predict(x).dispose()
    assert not is_compiled(model._ensure_model())  # the stale graph is freed, this call ran eagerly
    model.predict(x).dispose()
    assert is_compiled(model._ensure_model())
    x.dispose()
    model.dispose()
