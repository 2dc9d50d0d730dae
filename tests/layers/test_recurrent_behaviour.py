"""SimpleRNN / GRU / LSTM, cells, Bidirectional, TimeDistributed, ConvLSTM2D: shapes, configs, errors and
behaviour beyond the TF.js fixtures (initial and returned states, stateful runs, custom cells, masks...)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers

L = layers


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
