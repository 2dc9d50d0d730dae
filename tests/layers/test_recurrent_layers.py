"""SimpleRNN / GRU / LSTM (+ cells, StackedRNNCells, RNN), Bidirectional, TimeDistributed, ConvLSTM2D.

TF.js parity (``tests/fixtures/gen_layers_rnn.py``): default and weight names, ``to_json()`` byte for
byte, ``summary()``, ``predict`` with TF.js's weights, the gradients of a weighted sum of the outputs
with respect to every weight (back-propagation through time), the same after rebuilding each model
from TF.js's JSON; stateful runs, masked calls and dropout (with a deterministic dropout function).
Then shapes, configs, errors, training steps and memory.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers import constraints, regularizers

FIXTURE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "layers_rnn.json").read_text())
L = layers


# -- the models of gen_layers_rnn.js ----------------------------------------------------------------
def simple_rnn():
    return L.sequential(layers=[
        L.simple_rnn(units=4, input_shape=[5, 3], return_sequences=True),
        L.simple_rnn(units=3, go_backwards=True, activation="elu", use_bias=False), L.dense(units=2)])  # fmt: skip


def gru():
    return L.sequential(layers=[
        L.gru(units=4, input_shape=[5, 3], return_sequences=True, recurrent_activation="sigmoid"),
        L.gru(units=3, go_backwards=True, implementation=2)])  # fmt: skip


def lstm():
    return L.sequential(layers=[
        L.lstm(units=4, input_shape=[5, 3], return_sequences=True, unit_forget_bias=True,
               kernel_regularizer=regularizers.l2(l2=0.01), recurrent_constraint=constraints.max_norm(max_value=2),
               dropout=0.25, recurrent_dropout=0.5),
        L.lstm(units=2, go_backwards=True, activation="relu", recurrent_activation="sigmoid")])  # fmt: skip


def lstm_state():
    x = L.input(shape=[4, 3])
    seq, h, c = L.lstm(units=3, return_sequences=True, return_state=True).apply(x)
    out, hg = L.gru(units=2, return_state=True).apply(seq)
    d = L.dense(units=1).apply(h)
    return L.model(inputs=x, outputs=[seq, c, d, out, hg])


def initial_state():
    x, h0, c0 = L.input(shape=[4, 3]), L.input(shape=[3]), L.input(shape=[3])
    y = L.lstm(units=3, return_sequences=True).apply(x, {"initial_state": [h0, c0]})
    return L.model(inputs=[x, h0, c0], outputs=L.dense(units=2).apply(y))


def initial_state_gru():
    x, h0 = L.input(shape=[4, 3]), L.input(shape=[2])
    y = L.gru(units=2, go_backwards=True).apply(x, {"initial_state": h0})
    return L.model(inputs=[x, h0], outputs=y)


def rnn_cells():
    return L.sequential(layers=[
        L.rnn(cell=[L.simple_rnn_cell(units=3), L.lstm_cell(units=2), L.gru_cell(units=2)], return_sequences=True,
              input_shape=[4, 3]),
        L.rnn(cell=L.lstm_cell(units=3, recurrent_activation="tanh"), go_backwards=True, return_sequences=True),
        L.rnn(cell=L.stacked_rnn_cells(cells=[L.gru_cell(units=2)]))])  # fmt: skip


def bidirectional():
    return L.sequential(layers=[
        L.bidirectional(layer=L.lstm(units=3, return_sequences=True), input_shape=[4, 3]),
        L.bidirectional(layer=L.gru(units=2), merge_mode="sum")])  # fmt: skip


def bidirectional_modes():
    x = L.input(shape=[4, 3])
    a = L.bidirectional(layer=L.simple_rnn(units=2, return_sequences=True), merge_mode="mul").apply(x)
    b = L.bidirectional(layer=L.lstm(units=2), merge_mode="ave").apply(a)
    c1, c2 = L.bidirectional(layer=L.gru(units=2, return_sequences=True), merge_mode=None).apply(x)
    s = L.bidirectional(layer=L.lstm(units=2, return_state=True)).apply(x)
    return L.model(inputs=x, outputs=[b, c1, c2, *s])


def time_distributed():
    return L.sequential(layers=[
        L.time_distributed(layer=L.dense(units=3, activation="relu"), input_shape=[4, 5]),
        L.lstm(units=2, return_sequences=True),
        L.time_distributed(layer=L.dense(units=1, activation="sigmoid"))])  # fmt: skip


def conv_lstm2d():
    return L.sequential(layers=[
        L.conv_lstm2d(filters=2, kernel_size=3, padding="same", return_sequences=True, input_shape=[3, 5, 5, 2]),
        L.conv_lstm2d(filters=3, kernel_size=[2, 2], strides=2, unit_forget_bias=True, go_backwards=True),
        L.flatten(), L.dense(units=2)])  # fmt: skip


def conv_lstm2d_state():
    x = L.input(shape=[3, 2, 6, 5])
    outs = L.conv_lstm2d(
        filters=2, kernel_size=[3, 2], data_format="channelsFirst", dilation_rate=[1, 2], return_state=True,
        recurrent_activation="sigmoid",
    ).apply(x)  # fmt: skip
    return L.model(inputs=x, outputs=outs)


def stateful():
    return L.sequential(layers=[
        L.lstm(units=3, batch_input_shape=[2, 4, 3], stateful=True, return_sequences=True),
        L.gru(units=2, stateful=True), L.dense(units=1)])  # fmt: skip


def masked_model():
    x = L.input(shape=[5, 3])
    seq = L.lstm(units=3, return_sequences=True).apply(L.masking(mask_value=0).apply(x))
    y = L.bidirectional(layer=L.gru(units=2)).apply(seq)
    ids = L.input(shape=[4])
    z = L.simple_rnn(units=2, go_backwards=True).apply(
        L.embedding(input_dim=6, output_dim=3, mask_zero=True).apply(ids)
    )
    return L.model(inputs=[x, ids], outputs=[y, z])


MODELS = {
    f.__name__: f
    for f in (
        simple_rnn, gru, lstm, lstm_state, initial_state, initial_state_gru, rnn_cells, bidirectional,
        bidirectional_modes, time_distributed, conv_lstm2d, conv_lstm2d_state, stateful, masked_model,
    )
}  # fmt: skip


# -- helpers --------------------------------------------------------------------------------------
def as_tensor(record: dict) -> nf.Tensor:
    return nf.tensor(np.array(record["values"], dtype=np.float32).reshape(record["shape"]))


def assert_close(t: nf.Tensor, record: dict, atol: float = 1e-5) -> None:
    assert list(t.shape) == record["shape"]
    np.testing.assert_allclose(t.numpy().ravel(), np.array(record["values"], dtype=np.float32), rtol=1e-4, atol=atol)


def predict_list(model, xs):
    y = model.predict(xs if len(xs) > 1 else xs[0])
    return y if isinstance(y, list) else [y]


def pattern_dropout(x: nf.Tensor, rate: float) -> nf.Tensor:
    """gen_layers_rnn.js's deterministic dropout: zero every third element, scale the rest."""
    values = np.where(np.arange(x.size) % 3 == 1, 0.0, 1 / (1 - rate)).astype(np.float32).reshape(x.shape)
    return nf.mul(x, nf.tensor(values))


def check_model(model, record: dict) -> None:
    """Predict (and, when recorded, the stateful runs and the gradients) with TF.js's weights and inputs."""
    weights = [as_tensor(w) for w in record["weights"]]
    xs = [as_tensor(x) for x in record["inputs"]]
    feed = xs if len(xs) > 1 else xs[0]
    try:
        model.set_weights(weights)
        for run in record.get("stateful_runs", []):
            ys = predict_list(model, xs)
            for out, ref in zip(ys, run, strict=True):
                assert_close(out, ref)
            nf.dispose(ys)
            if run is record["stateful_runs"][1]:
                model.reset_states()
        if record.get("stateful_runs"):
            model.reset_states()
        ys = predict_list(model, xs)
        assert len(ys) == len(record["outputs"])
        for out, ref in zip(ys, record["outputs"], strict=True):
            assert_close(out, ref)
        nf.dispose(ys)
        if "grads" in record:
            coefficients = [as_tensor(c) for c in record["loss_coefficients"]]

            def loss():
                outs = model.apply(feed)
                outs = outs if isinstance(outs, list) else [outs]
                return nf.add_n([nf.sum(nf.mul(o, c)) for o, c in zip(outs, coefficients, strict=True)])

            variables = [w.read() for w in model.trainable_weights]
            value, grads = nf.variable_grads(loss, variables)
            try:
                np.testing.assert_allclose(value.numpy(), record["loss"], rtol=1e-4, atol=1e-4)
                assert len(record["grads"]) == len(variables)
                for v, ref in zip(variables, record["grads"], strict=True):
                    assert_close(grads[v.name], ref, atol=1e-4)
            finally:
                nf.dispose([value, list(grads.values()), coefficients])
    finally:
        nf.dispose([weights, xs])


# -- TF.js parity ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(MODELS))
def test_names_json_summary(case):
    record = FIXTURE[case]
    model = MODELS[case]()
    try:
        assert model.name == record["model_name"]
        assert [layer.name for layer in model.layers] == record["layer_names"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        assert model.to_json(return_string=False) == json.loads(record["json_string"])
        assert model.to_json() == record["json_string"]
        lines: list[str] = []
        model.summary(print_fn=lines.append)
        assert lines == record["summary"]
    finally:
        model.dispose()


@pytest.mark.parametrize("case", list(MODELS))
def test_predict_and_gradients_match_tfjs(case):
    model = MODELS[case]()
    try:
        check_model(model, FIXTURE[case])
    finally:
        model.dispose()


@pytest.mark.parametrize("case", list(MODELS))
def test_model_from_tfjs_json(case):
    """TF.js's toJSON() rebuilds an ndflow model that serializes back as TF.js's would and computes the same."""
    record = FIXTURE[case]
    model = layers.deserialize_layer(json.loads(record["json_string"]))
    try:
        # TF.js's reload adds an Embedding's dtype (so does ndflow's) and renames a StackedRNNCells (ndflow keeps it).
        expected = record["json_string"] if case == "rnn_cells" else record.get("json_roundtrip", record["json_string"])
        assert model.to_json() == expected
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        check_model(model, record)
    finally:
        model.dispose()


@pytest.mark.parametrize("case", ["bidirectional_modes", "time_distributed", "rnn_cells", "conv_lstm2d"])
def test_load_weights_by_tfjs_names(case):
    """Weights keyed by the names TF.js saves them under (``weightsManifest``) land in the right variables."""
    record = FIXTURE[case]
    model = MODELS[case]()
    named = {original: as_tensor(w) for (_, original), w in zip(record["weight_names"], record["weights"], strict=True)}
    xs = [as_tensor(x) for x in record["inputs"]]
    try:
        model.load_weights(dict(reversed(named.items())))
        ys = predict_list(model, xs)
        for out, ref in zip(ys, record["outputs"], strict=True):
            assert_close(out, ref)
        nf.dispose(ys)
    finally:
        nf.dispose([list(named.values()), xs])
        model.dispose()


MASKED = {
    "simple_rnn": lambda: L.simple_rnn(units=3, return_sequences=True),
    "gru": lambda: L.gru(units=3, go_backwards=True, return_sequences=True),
    "lstm": lambda: L.lstm(units=3, return_state=True),
    "bidirectional": lambda: L.bidirectional(layer=L.lstm(units=2, return_sequences=True)),
}


@pytest.mark.parametrize("key", list(MASKED))
def test_masked_calls_match_tfjs(key):
    record = FIXTURE["masking"]
    ref = record["layers"][key]
    x, mask_values = as_tensor(record["input"]), as_tensor(record["mask"])
    mask = nf.cast(mask_values, "bool")
    layer = MASKED[key]()
    nf.dispose(layer.apply(x))
    weights = [as_tensor(w) for w in ref["weights"]]
    try:
        layer.set_weights(weights)
        y = layer.apply(x, {"mask": mask})
        ys = y if isinstance(y, list) else [y]
        for out, r in zip(ys, ref["outputs"], strict=True):
            assert_close(out, r)
        if key == "lstm":  # the mask also works given as [batch, time, 1]
            mask3 = nf.expand_dims(mask, -1)
            y3 = layer.apply(x, {"mask": mask3})
            np.testing.assert_allclose(y3[0].numpy(), ys[0].numpy())
            nf.dispose([y3, mask3])
        nf.dispose(ys)
    finally:
        nf.dispose([x, mask, mask_values, weights])
        layer.dispose()


DROPPED = {
    "simple_rnn": lambda: L.simple_rnn(
        units=3, dropout=0.5, recurrent_dropout=0.25, dropout_func=pattern_dropout, return_sequences=True
    ),
    "gru": lambda: L.gru(
        units=3, dropout=0.5, recurrent_dropout=0.25, dropout_func=pattern_dropout, return_sequences=True
    ),
    "lstm": lambda: L.lstm(
        units=3, dropout=0.5, recurrent_dropout=0.25, dropout_func=pattern_dropout, return_sequences=True
    ),
    "conv_lstm2d": lambda: L.conv_lstm2d(
        filters=2, kernel_size=3, padding="same", dropout=0.5, recurrent_dropout=0.25, dropout_func=pattern_dropout
    ),
}


@pytest.mark.parametrize("key", list(DROPPED))
def test_dropout_masks_match_tfjs(key):
    """Input and recurrent dropout masks: drawn once per call, applied at every step, only when training."""
    record = FIXTURE["dropout"]
    ref = record["layers"][key]
    x = as_tensor(ref.get("input", record["input"]))
    layer = DROPPED[key]()
    nf.dispose(layer.apply(x))
    weights = [as_tensor(w) for w in ref["weights"]]
    try:
        layer.set_weights(weights)
        train, infer = layer.apply(x, {"training": True}), layer.apply(x, {"training": False})
        assert_close(train, ref["training"])
        assert_close(infer, ref["inference"])
        nf.dispose([train, infer])
    finally:
        nf.dispose([x, weights])
        layer.dispose()


# -- shapes, configs, errors ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "input_shape", "expected"),
    [
        (lambda: L.simple_rnn(units=4), (None, 7, 3), (None, 4)),
        (lambda: L.gru(units=4, return_sequences=True), (2, 7, 3), (2, 7, 4)),
        (lambda: L.lstm(units=4, return_state=True), (None, 7, 3), [(None, 4), (None, 4), (None, 4)]),
        (lambda: L.rnn(cell=[L.lstm_cell(units=2), L.gru_cell(units=5)], return_state=True), (None, 3, 2),
         [(None, 5), (None, 5), (None, 2), (None, 2)]),
        (lambda: L.bidirectional(layer=L.lstm(units=3, return_sequences=True)), (None, 6, 2), (None, 6, 6)),
        (lambda: L.bidirectional(layer=L.gru(units=3), merge_mode=None), (None, 6, 2), [(None, 3), (None, 3)]),
        (lambda: L.bidirectional(layer=L.lstm(units=3, return_state=True), merge_mode="sum"), (None, 6, 2),
         [(None, 3)] + [(None, 3)] * 4),
        (lambda: L.time_distributed(layer=L.dense(units=5)), (None, 6, 2), (None, 6, 5)),
        (lambda: L.conv_lstm2d(filters=4, kernel_size=3), (None, 2, 9, 8, 3), (None, 7, 6, 4)),
        (lambda: L.conv_lstm2d(filters=4, kernel_size=3, strides=2, padding="same", return_sequences=True,
                               return_state=True), (None, 2, 9, 8, 3),
         [(None, 2, 5, 4, 4), (None, 5, 4, 4), (None, 5, 4, 4)]),
    ],
)  # fmt: skip
def test_compute_output_shape_and_symbolic_shapes(make, input_shape, expected):
    layer = make()
    assert layer.compute_output_shape(input_shape) == expected
    out = layer.apply(L.input(batch_shape=list(input_shape)))
    shapes = [o.shape for o in out] if isinstance(out, list) else out.shape
    assert shapes == expected
    layer.dispose()


@pytest.mark.parametrize(
    "make",
    [
        lambda: L.simple_rnn(units=2, activation="relu", dropout=0.1, name="r", input_shape=[3, 2]),
        lambda: L.gru(units=2, reset_after=True, kernel_initializer="ones", recurrent_dropout=0.3),
        lambda: L.lstm(units=2, unit_forget_bias=True, return_state=True, stateful=False, go_backwards=True),
        lambda: L.rnn(cell=[L.lstm_cell(units=2), L.simple_rnn_cell(units=3)], unroll=True),
        lambda: L.rnn(cell=L.gru_cell(units=2, recurrent_activation="sigmoid")),
        lambda: L.lstm_cell(units=3, recurrent_constraint="nonNeg"),
        lambda: L.stacked_rnn_cells(cells=[L.gru_cell(units=2), L.lstm_cell(units=1)]),
        lambda: L.conv_lstm2d(filters=2, kernel_size=[1, 3], data_format="channels_first", strides=[1, 2]),
        lambda: L.conv_lstm2d_cell(filters=2, kernel_size=3),
        lambda: L.bidirectional(layer=L.lstm(units=2), merge_mode="mul"),
        lambda: L.time_distributed(layer=L.dense(units=2, activation="tanh")),
    ],
)
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    clone = type(layer).from_config(json.loads(json.dumps(config)))
    assert clone.get_config() == config
    assert clone.get_class_name() == layer.get_class_name()


def test_tfjs_config_orders_and_values():
    layer = L.lstm(units=2, input_shape=[3, 4])
    config = layer.get_config()
    keys = list(config)
    assert keys[:4] == ["name", "trainable", "batch_input_shape", "dtype"]
    assert keys[-5:] == ["return_sequences", "return_state", "go_backwards", "stateful", "unroll"]
    assert config["unit_forget_bias"] is None and config["implementation"] is None
    assert layer.units == 2 and layer.cell.units == 2
    gru_config = L.gru(units=1).get_config()
    assert gru_config["reset_after"] is False and list(gru_config)[-6] == "reset_after"
    bi = L.bidirectional(layer=L.gru(units=1)).get_config()
    assert list(bi)[:4] == ["merge_mode", "layer", "name", "trainable"]


def test_errors_name_the_layer_and_argument():
    with pytest.raises(ValueError, match="LSTMCell: expected units to be a positive integer"):
        L.lstm(units=0)
    with pytest.raises(ValueError, match="ConvLSTM2DCell: expected filters to be a positive integer"):
        L.conv_lstm2d(filters=-1, kernel_size=3)
    with pytest.raises(ValueError, match="kernel_size must be an integer or a list of 2"):
        L.conv_lstm2d(filters=1, kernel_size=[1, 2, 3])
    with pytest.raises(ValueError, match="'diagonal' is not a valid padding"):
        L.conv_lstm2d(filters=1, kernel_size=3, padding="diagonal")
    with pytest.raises(NotImplementedError, match="Unrolling is not possible"):
        L.conv_lstm2d(filters=1, kernel_size=3, unroll=True)
    with pytest.raises(ValueError, match="'max' is not a valid merge_mode"):
        L.bidirectional(layer=L.lstm(units=1), merge_mode="max")
    with pytest.raises(TypeError, match="Bidirectional wraps an RNN layer, got Dense"):
        L.bidirectional(layer=L.dense(units=1))
    with pytest.raises(TypeError, match="unexpected argument"):
        L.lstm(units=1, unitz=2)
    with pytest.raises(ValueError, match="cell property is missing"):
        L.rnn(cell=None)
    layer = L.lstm(units=2)
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        layer.apply(L.input(shape=[3]))
    with pytest.raises(RuntimeError, match="not stateful"):
        layer.reset_states()
    with pytest.raises(ValueError, match="needs to know its batch size"):
        L.lstm(units=2, stateful=True).apply(L.input(shape=[3, 2]))
    with pytest.raises(ValueError, match="TimeDistributed layer expects an input shape >= 3D"):
        L.time_distributed(layer=L.dense(units=1)).apply(L.input(shape=[3]))
    x, h = nf.ones([2, 3, 2]), nf.ones([2, 2])
    try:
        with pytest.raises(ValueError, match="has 2 state\\(s\\) but was passed 1 initial state"):
            layer.apply(x, {"initial_state": [h]})
    finally:
        nf.dispose([x, h])
        layer.dispose()


# -- behaviour ------------------------------------------------------------------------------------
def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_gru_reset_after_matches_keras_formula():
    """Beyond TF.js: ``reset_after=True`` (Keras's default), bias ``[2, 3 * units]``."""
    rng = np.random.default_rng(0)
    layer = L.gru(units=3, reset_after=True, recurrent_activation="sigmoid", return_sequences=True)
    x = rng.uniform(-1, 1, (2, 4, 2)).astype(np.float32)
    xt = nf.tensor(x)
    nf.dispose(layer.apply(xt))
    kernel, rk, bias = (rng.uniform(-1, 1, s).astype(np.float32) for s in [(2, 9), (3, 9), (2, 9)])
    layer.set_weights([kernel, rk, bias])
    y = layer.apply(xt)
    try:
        h = np.zeros((2, 3), np.float32)
        expected = []
        for t in range(4):
            mx, mi = x[:, t] @ kernel + bias[0], h @ rk + bias[1]
            z, r = np_sigmoid(mx[:, :3] + mi[:, :3]), np_sigmoid(mx[:, 3:6] + mi[:, 3:6])
            hh = np.tanh(mx[:, 6:] + r * mi[:, 6:])
            h = z * h + (1 - z) * hh
            expected.append(h)
        np.testing.assert_allclose(y.numpy(), np.stack(expected, 1), rtol=1e-5, atol=1e-5)
        assert [w.shape for w in layer.weights] == [(2, 9), (3, 9), (2, 9)]
    finally:
        nf.dispose([xt, y])
        layer.dispose()


@pytest.mark.parametrize("case", ["simple_rnn", "gru", "lstm", "rnn_cells", "bidirectional_modes", "conv_lstm2d",
                                  "time_distributed", "conv_lstm2d_state"])  # fmt: skip
def test_training_step_changes_every_weight(case):
    """One SGD step (with ``training=True``) moves every trainable weight: gradients reach all of them."""
    model = MODELS[case]()
    record = FIXTURE[case]
    weights = [as_tensor(w) for w in record["weights"]]
    xs = [as_tensor(x) for x in record["inputs"]]
    feed = xs if len(xs) > 1 else xs[0]
    optimizer = nf.train.sgd(0.1)

    def loss():
        outs = model.apply(feed, {"training": True})
        return nf.add_n([nf.sum(nf.square(o)) for o in (outs if isinstance(outs, list) else [outs])])

    try:
        model.set_weights(weights)
        before = [w.read().numpy().copy() for w in model.trainable_weights]
        nf.dispose(optimizer.minimize(loss, return_cost=True, var_list=[w.read() for w in model.trainable_weights]))
        for w, old in zip(model.trainable_weights, before, strict=True):
            assert not np.array_equal(w.read().numpy(), old), f"{w.name} did not change"
    finally:
        optimizer.dispose()
        nf.dispose([xs, weights])
        model.dispose()


def test_initial_state_eager_and_return_state():
    layer = L.lstm(units=2, return_state=True, kernel_initializer="ones", recurrent_initializer="ones")
    x, h0, c0 = nf.ones([1, 3, 2]), nf.ones([1, 2]), nf.zeros([1, 2])
    out, h, c = layer.apply(x, {"initial_state": [h0, c0]})
    again = layer.apply([x, h0, c0])
    zero = layer.apply(x)
    try:
        np.testing.assert_allclose(out.numpy(), h.numpy())
        np.testing.assert_allclose(again[0].numpy(), out.numpy())
        assert not np.allclose(zero[0].numpy(), out.numpy())
    finally:
        nf.dispose([x, h0, c0, out, h, c, again, zero])
        layer.dispose()


def test_stateful_states_carry_over_and_reset():
    layer = L.simple_rnn(units=2, batch_input_shape=[1, 2, 1], stateful=True, kernel_initializer="ones",
                         recurrent_initializer="identity", activation="linear")  # fmt: skip
    x = nf.ones([1, 2, 1])
    try:
        first = layer.apply(x)
        second = layer.apply(x)
        np.testing.assert_allclose(first.numpy(), [[2, 2]])
        np.testing.assert_allclose(second.numpy(), [[4, 4]])
        np.testing.assert_allclose(layer.states[0].numpy(), [[4, 4]])
        layer.reset_states()
        np.testing.assert_allclose(layer.states[0].numpy(), [[0, 0]])
        value = nf.tensor([[1.0, -1.0]])
        layer.reset_states([value])
        value.dispose()
        np.testing.assert_allclose(layer.states[0].numpy(), [[1, -1]])
        wrong = nf.zeros([2, 2])
        with pytest.raises(ValueError, match="expected shape=\\[1, 2\\]"):
            layer.reset_states([wrong])
        wrong.dispose()
        nf.dispose([first, second])
    finally:
        x.dispose()
        layer.dispose()  # frees the states too


def test_apply_keeps_only_outputs_and_go_backwards_reverses():
    layer = L.simple_rnn(units=2, return_sequences=True, kernel_initializer="ones", recurrent_initializer="zeros",
                         activation="linear")  # fmt: skip
    back = L.simple_rnn(units=2, return_sequences=True, go_backwards=True, kernel_initializer="ones",
                        recurrent_initializer="zeros", activation="linear")  # fmt: skip
    x = nf.tensor(np.arange(6, dtype=np.float32).reshape(1, 3, 2))
    y = layer.apply(x)
    try:
        before = nf.memory().num_tensors
        y2 = layer.apply(x)
        assert nf.memory().num_tensors == before + 1
        yb = back.apply(x)
        np.testing.assert_allclose(yb.numpy()[0, :, 0], y.numpy()[0, ::-1, 0])
        nf.dispose([y2, yb])
    finally:
        nf.dispose([x, y])
        layer.dispose()
        back.dispose()


def test_custom_cell_and_cell_call():
    class MinimalCell(L.RNNCell):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", [input_shape[-1], self.units], initializer="ones")
            self.built = True

        def call(self, inputs, training=None, **kwargs):
            x, h = inputs
            out = nf.add(nf.mat_mul(x, self.kernel.read()), h)
            return [out, out]

    layer = L.rnn(cell=MinimalCell(2), return_sequences=True)
    x = nf.ones([1, 3, 1])
    y = layer.apply(x)
    cell = L.lstm_cell(units=2)
    cell.build((1, 3))
    xc, h, c = nf.ones([1, 3]), nf.zeros([1, 2]), nf.zeros([1, 2])
    step = cell.call([xc, h, c])
    try:
        np.testing.assert_allclose(y.numpy()[0, :, 0], [1, 2, 3])
        assert layer.weights[0].name == "rnn_RNN1/kernel"
        assert [s.shape for s in step] == [(1, 2)] * 3
        with pytest.raises(ValueError, match="LSTMCell expects 3 input Tensors, got 2"):
            cell.call([xc, h])
    finally:
        nf.dispose([x, y, xc, h, c, step])
        layer.dispose()
        cell.dispose_weights()


def test_time_distributed_per_step_path_matches_folded_path():
    inner = L.dense(units=3, kernel_initializer="glorotUniform")
    layer = L.time_distributed(layer=inner)
    x = nf.tensor(np.random.default_rng(1).normal(size=(2, 4, 5)).astype(np.float32))
    folded = layer.apply(x)
    layer._per_step = lambda training: True  # force TF.js's one call per step
    per_step = layer.apply(x)
    try:
        np.testing.assert_allclose(per_step.numpy(), folded.numpy(), rtol=1e-6, atol=1e-6)
        assert [w.name for w in layer.weights] == ["time_distributed_TimeDistributed1/kernel",
                                                   "time_distributed_TimeDistributed1/bias"]  # fmt: skip
    finally:
        nf.dispose([x, folded, per_step])
        layer.dispose()


def test_trainable_propagates_to_cells_and_copies():
    layer = L.lstm(units=2)
    bi = L.bidirectional(layer=L.gru(units=1))
    x = nf.ones([1, 2, 2])
    nf.dispose([layer.apply(x), bi.apply(x), x])
    try:
        layer.trainable = False
        assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 3
        layer.trainable = True
        assert len(layer.trainable_weights) == 3
        bi.trainable = False
        assert bi.trainable_weights == [] and len(bi.weights) == 6
        assert bi.get_config()["trainable"] is False
    finally:
        layer.dispose()
        bi.dispose()


def test_bidirectional_regularization_losses_and_weights_order():
    bi = L.bidirectional(layer=L.lstm(units=2, kernel_regularizer="l1l2"))
    x = nf.ones([1, 3, 2])
    y = bi.apply(x)
    try:
        assert len(bi.losses) == 2  # beyond TF.js: the copies' penalties are reported
        names = [w.name for w in bi.weights]
        assert names[0] == "bidirectional_Bidirectional1/forward_lstm_LSTM1/kernel"
        assert names[3] == "bidirectional_Bidirectional1/backward_lstm_LSTM1/kernel"
        got = bi.get_weights()
        assert [tuple(w.shape) for w in got] == [(2, 8), (2, 8), (8,)] * 2
        nf.dispose(got)
    finally:
        nf.dispose([x, y])
        bi.dispose()
