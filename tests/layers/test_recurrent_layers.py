"""SimpleRNN / GRU / LSTM (+ cells, StackedRNNCells, RNN), Bidirectional, TimeDistributed, ConvLSTM2D.

TF.js parity (``tests/fixtures/gen_layers_rnn.py``): default and weight names, ``to_json()`` byte for
byte, ``summary()``, ``predict`` with TF.js's weights, the gradients of a weighted sum of the outputs
with respect to every weight (back-propagation through time), the same after rebuilding each model
from TF.js's JSON; stateful runs, masked calls and dropout (with a deterministic dropout function).
A training step reaches every weight. Shapes, configs, errors and behaviour: test_recurrent_behaviour.py.
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


# -- training ------------------------------------------------------------------------------------
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
