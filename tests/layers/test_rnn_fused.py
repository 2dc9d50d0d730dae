"""The recurrent layers' fused inference loop (``layers/rnn_fused.py``, kernel ``_NdflowRNNSequence``): taken where
nothing needs the steps one by one, and then the step-by-step loop's results (float32-close: the products sum in
another order); the step-by-step loop everywhere else (gradients, masks, dropout, activations it lacks).

The TF.js fixtures of the recurrent layers (test_recurrent_layers.py) run through it too: their ``predict`` calls are
fused."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
import ndflow.layers.recurrent as recurrent
from ndflow import layers
from ndflow.backends.cpu.kernels import rnn_sequence as cpu_rnn

RNG = np.random.default_rng(3)
TOL = dict(rtol=2e-6, atol=2e-6)


@pytest.fixture
def fused_calls(monkeypatch):
    """How many layer calls took the fused kernel."""
    count = [0]
    real = recurrent.fused_run

    def spy(*args):
        got = real(*args)
        count[0] += got is not None
        return got

    monkeypatch.setattr(recurrent, "fused_run", spy)
    return count


def _step_path(monkeypatch, fn):
    """``fn()`` with the fused kernel off (the step-by-step loop)."""
    with monkeypatch.context() as m:
        m.setattr(recurrent, "fused_run", lambda *a: None)
        return fn()


def _model(kind: str, units: int = 6, steps: int = 5, features: int = 4, **kw) -> nf.LayersModel:
    factory = layers.lstm if kind == "lstm" else layers.gru
    model = nf.sequential()
    model.add(factory(units=units, input_shape=[steps, features], **kw))
    # weights with nonzero biases (the initializers' biases are zeros)
    values = [nf.tensor(RNG.standard_normal(w.shape).astype(np.float32) * 0.5) for w in model.weights]
    model.set_weights(values)
    nf.dispose(values)
    return model


def _values(t) -> list[np.ndarray]:
    ts = t if isinstance(t, list) else [t]
    out = [x.data_sync().reshape(x.shape).copy() for x in ts]
    nf.dispose(ts)
    return out


CASES = [
    ("lstm", {}),
    ("lstm", {"go_backwards": True, "return_sequences": True}),
    ("lstm", {"recurrent_activation": "sigmoid", "activation": "relu"}),
    ("lstm", {"activation": "linear", "use_bias": False}),
    ("gru", {}),
    ("gru", {"reset_after": True, "return_sequences": True}),
    ("gru", {"reset_after": True, "go_backwards": True, "recurrent_activation": "sigmoid"}),
    ("gru", {"reset_after": True, "use_bias": False}),
]


@pytest.mark.parametrize(("kind", "kw"), CASES)
@pytest.mark.parametrize("batch", [1, 3, 17])
def test_fused_equals_the_step_loop(monkeypatch, fused_calls, kind, kw, batch):
    model = _model(kind, **kw)
    x = nf.tensor(RNG.standard_normal((batch, 5, 4)).astype(np.float32))
    try:
        got = _values(model.predict(x))
        assert fused_calls[0] == 1
        want = _values(_step_path(monkeypatch, lambda: model.predict(x)))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, **TOL)
    finally:
        x.dispose()
        model.dispose()


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_returned_states_initial_states_and_stateful_runs(monkeypatch, fused_calls, kind):
    layer = (layers.lstm if kind == "lstm" else layers.gru)(units=3, return_state=True, return_sequences=True)
    x = nf.tensor(RNG.standard_normal((2, 4, 5)).astype(np.float32))
    n_states = 2 if kind == "lstm" else 1
    init = [nf.tensor(RNG.standard_normal((2, 3)).astype(np.float32)) for _ in range(n_states)]
    try:
        got = _values(layer.apply(x, {"initial_state": init}))
        assert fused_calls[0] == 1 and len(got) == 1 + n_states
        want = _values(_step_path(monkeypatch, lambda: layer.apply(x, {"initial_state": init})))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, **TOL)
    finally:
        nf.dispose([x, *init])
        layer.dispose()

    stateful = (layers.lstm if kind == "lstm" else layers.gru)(units=3, stateful=True, batch_input_shape=[2, 4, 5])
    model = nf.sequential()
    model.add(stateful)
    x = nf.tensor(RNG.standard_normal((2, 4, 5)).astype(np.float32))
    try:
        first, second = _values(model.predict(x)), _values(model.predict(x))  # the states carried between calls
        model.reset_states()

        def steps():
            return [_values(model.predict(x)), _values(model.predict(x))]

        want_first, want_second = _step_path(monkeypatch, steps)
        np.testing.assert_allclose(first[0], want_first[0], **TOL)
        np.testing.assert_allclose(second[0], want_second[0], **TOL)
        assert not np.allclose(first[0], second[0])
    finally:
        x.dispose()
        model.dispose()


def test_gradients_run_the_lstm_training_loop_and_masks_dropout_and_other_activations_the_step_loop(fused_calls):
    model = _model("lstm", return_sequences=False)
    x = nf.tensor(RNG.standard_normal((2, 5, 4)).astype(np.float32))
    try:
        grads = nf.grads(lambda t: nf.sum(model.apply(t)))([x])  # a gradient: the LSTM's training loop
        nf.dispose(grads)
        assert fused_calls[0] == 1
        gru = _model("gru")
        nf.dispose(nf.grads(lambda t: nf.sum(gru.apply(t)))([x]))
        assert fused_calls[0] == 1  # a GRU under a gradient: the step loop
        gru.dispose()
        masked = nf.sequential()
        masked.add(layers.masking(mask_value=0.0, input_shape=[5, 4]))
        masked.add(layers.gru(units=3))
        _values(masked.predict(x))
        assert fused_calls[0] == 1  # a mask
        masked.dispose()
        elu = _model("lstm", activation="elu")
        _values(elu.predict(x))
        assert fused_calls[0] == 1  # an activation the kernel does not have
        elu.dispose()
        dropping = _model("gru", dropout=0.5)
        _values(dropping.apply(x, {"training": True}))
        assert fused_calls[0] == 1  # dropout at work
        _values(dropping.predict(x))
        assert fused_calls[0] == 2  # no dropout at inference
        dropping.dispose()
    finally:
        x.dispose()
        model.dispose()


@pytest.mark.parametrize("compiled", [False, True])
def test_training_learns_through_the_fused_lstm_loop(fused_calls, compiled):
    nf.env().set("TRAIN_COMPILE", compiled)
    model = _model("lstm", units=4)
    model.compile(optimizer="adam", loss="meanSquaredError")
    x = nf.tensor(RNG.standard_normal((8, 5, 4)).astype(np.float32))
    y = nf.tensor(RNG.standard_normal((8, 4)).astype(np.float32))
    try:
        history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
        losses = history.history["loss"]
        assert losses[-1] < losses[0]
        # A compiled training step goes through the layer once (the recorded step), then replays its kernels.
        assert fused_calls[0] == (1 if compiled else 5)
    finally:
        nf.dispose([x, y])
        model.dispose()


@pytest.mark.parametrize(("kind", "kw"), CASES)
def test_the_numpy_loop_equals_the_c_loop(monkeypatch, kind, kw):
    """Where the C module is not built (or is off) the kernel runs the same loop in numpy."""
    model = _model(kind, **kw)
    x = nf.tensor(RNG.standard_normal((3, 5, 4)).astype(np.float32))
    try:
        got = _values(model.predict(x))
        with monkeypatch.context() as m:
            m.setattr(cpu_rnn.native_split, "available", lambda: False)
            want = _values(model.predict(x))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, **TOL)
    finally:
        x.dispose()
        model.dispose()


def test_the_c_loop_refuses_bad_arguments():
    from ndflow.backends.cpu.native import native_split

    if not native_split.available():
        pytest.skip(f"native module unavailable: {native_split.status()}")
    module = native_split.module()
    p, rk, h = np.zeros((1, 2, 8), np.float32), np.zeros((2, 8), np.float32), np.zeros((1, 2), np.float32)
    c = np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match="rnn_sequence"):
        module.rnn_sequence(0, 1, 2, 2, p, rk, None, h, None, None, 1, 3, False, False, 1)  # LSTM without c
    with pytest.raises(ValueError, match="rnn_sequence: p"):
        module.rnn_sequence(0, 1, 3, 2, p, rk, None, h, c, None, 1, 3, False, False, 1)  # p too small
    with pytest.raises(ValueError, match="rnn_sequence"):
        module.rnn_sequence(0, 1, 2, 2, p, rk, None, h, c, None, 9, 3, False, False, 1)  # unknown activation


@pytest.mark.parametrize(("code", "reference"), [(1, np.tanh), (2, lambda v: 1 / (1 + np.exp(-v)))])
def test_the_c_loops_tanh_and_sigmoid_are_within_a_few_ulp(code, reference):
    """The C loop's own float32 tanh and sigmoid (vectorized polynomials, not libm per value) against float64:
    a GRU step whose update gate is 0 and recurrent kernel zero outputs act(x) for each of its units."""
    from ndflow.backends.cpu.native import native_split

    if not native_split.available():
        pytest.skip(f"native module unavailable: {native_split.status()}")
    x = np.concatenate([
        np.linspace(-30, 30, 20001), np.linspace(-1, 1, 20001), np.geomspace(1e-30, 1e-2, 200),
        -np.geomspace(1e-30, 1e-2, 200), [0.0, -0.0, 88.0, -88.0, 200.0, -200.0, 0.625, -0.625],
    ]).astype(np.float32)  # fmt: skip
    units = x.size
    p = np.zeros((1, 1, 3 * units), np.float32)
    p[0, 0, :units] = -200.0  # the update gate: sigmoid(-200) == 0 (kind 2's ract = sigmoid)
    p[0, 0, 2 * units :] = x
    h = np.zeros((1, units), np.float32)
    rk, rb = np.zeros((units, 3 * units), np.float32), np.zeros(3 * units, np.float32)
    native_split.module().rnn_sequence(2, 1, 1, units, p, rk, rb, h, None, None, code, 2, False, False, 1)
    want = reference(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(h[0].astype(np.float64) - want)
    flushed = err <= 1.2e-38  # a denormal result flushed to 0
    assert np.all((err <= 4 * ulp) | flushed), (x[np.argmax(err / ulp)], float(np.max(err / ulp)))
    nan = np.full((1, 1, 3), np.nan, np.float32)
    nan[0, 0, 0] = -200.0
    hn = np.zeros((1, 1), np.float32)
    native_split.module().rnn_sequence(2, 1, 1, 1, nan, np.zeros((1, 3), np.float32), np.zeros(3, np.float32), hn,
                                       None, None, code, 2, False, False, 1)  # fmt: skip
    assert np.isnan(hn[0, 0])


@pytest.mark.parametrize(("kind", "kw"), [CASES[1], CASES[5]])
def test_the_torch_backend_runs_the_shared_loop(monkeypatch, fused_calls, kind, kw):
    pytest.importorskip("torch", reason="the torch backend needs the torch extra")
    previous = nf.get_backend()
    nf.set_backend("torch")
    try:
        model = _model(kind, **kw)
        x = nf.tensor(RNG.standard_normal((3, 5, 4)).astype(np.float32))
        got = _values(model.predict(x))
        assert fused_calls[0] == 1
        want = _values(_step_path(monkeypatch, lambda: model.predict(x)))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, **TOL)
        x.dispose()
        model.dispose()
    finally:
        nf.set_backend(previous)


@pytest.mark.parametrize(
    "kw", [{}, {"return_sequences": True, "go_backwards": True, "recurrent_activation": "sigmoid"}]
)
def test_lstm_training_through_the_fused_loop_gives_the_step_loops_weights(monkeypatch, fused_calls, kw):
    """While a gradient is recorded an LSTM runs ``_NdflowLSTMTrain`` and one backward kernel through time: after
    five Adam steps the weights are the step-by-step loop's within float32 rounding (relative 1e-5)."""

    def train(fused: bool) -> list[np.ndarray]:
        global RNG
        RNG = np.random.default_rng(5)  # the same initial weights for both runs
        model = nf.sequential()
        model.add(layers.lstm(units=8, input_shape=[6, 3], **kw))
        if kw.get("return_sequences"):
            model.add(layers.flatten())
        model.add(layers.dense(units=2))
        values = [nf.tensor(RNG.standard_normal(w.shape).astype(np.float32) * 0.5) for w in model.weights]
        model.set_weights(values)
        nf.dispose(values)
        optimizer = nf.train.adam(0.01)
        model.compile(optimizer=optimizer, loss="meanSquaredError")
        x = nf.tensor(RNG.standard_normal((4, 6, 3)).astype(np.float32))
        y = nf.tensor(RNG.standard_normal((4, 2)).astype(np.float32))
        try:
            with monkeypatch.context() as m:
                if not fused:
                    m.setattr(recurrent, "fused_run", lambda *a: None)
                for _ in range(5):
                    model.train_on_batch(x, y)
            return [w.read().data_sync().copy() for w in model.weights]
        finally:
            nf.dispose([x, y])
            model.dispose()
            optimizer.dispose()

    got = train(True)
    assert fused_calls[0] >= 1  # the recorded step; the compiled training step replays its kernels after it
    want = train(False)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["lstm", "gru"])
def test_the_fused_loops_reproduce_tfjs(fused_calls, case):
    """Real TF.js 4.22's outputs and gradients (tests/fixtures/layers_rnn.json, gen_layers_rnn.js) through the fused
    kernels: predict runs ``_NdflowRNNSequence``, the LSTM's gradients ``_NdflowLSTMTrain`` and ``_NdflowLSTMGrad``."""
    import test_recurrent_layers as rnn_cases

    model = rnn_cases.MODELS[case]()
    try:
        rnn_cases.check_model(model, rnn_cases.FIXTURE[case])
    finally:
        model.dispose()
    # two recurrent layers: both fused at predict; under the gradient the LSTMs too (a GRU then steps)
    assert fused_calls[0] >= (4 if case == "lstm" else 2)


@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("sequences", [False, True])
def test_the_torch_backends_fused_lstm_steps_equal_the_shared_loop(backwards, sequences):
    """The torch backend's LSTM training loop with fused steps (torch's sigmoid, addmm, addcmul) against the shared
    loop on torch tensors: forward values and every gradient within 2e-6 (torch's sigmoid rounds differently)."""
    torch = pytest.importorskip("torch")
    from ndflow.backends.shared import rnn_train
    from ndflow.backends.torch.kernels import lstm_loops
    from ndflow.backends.torch.kernels.rnn_sequence import _TORCH

    gen = np.random.default_rng(3)
    batch, steps, units = 3, 6, 5

    def t(*shape: int, scale: float = 1.0) -> object:
        return torch.from_numpy((gen.standard_normal(shape) * scale).astype(np.float32))

    p, rk, h0, c0 = t(batch, steps, 4 * units), t(units, 4 * units, scale=0.4), t(batch, units), t(batch, units)
    attrs = {"activation": 1, "recurrent_activation": 2, "go_backwards": backwards, "return_sequences": sequences}
    with torch.no_grad():
        want = rnn_train.lstm_train(p, rk, h0, c0, attrs, lambda s: torch.empty(s), _TORCH)
        h, c, zs, cs, hs = lstm_loops.train_loop(p, rk, h0, c0, backwards)
        for got, ref in zip([h, c, zs, cs, hs], want[1:], strict=True):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-6, atol=2e-6)
        d_out = t(batch, steps, units) if sequences else t(batch, units)
        dh, dc = t(batch, units), t(batch, units)
        want_grads = rnn_train.lstm_grad(
            d_out, dh.clone(), dc.clone(), rk, h0, c0, zs, cs, hs, attrs, lambda s: torch.zeros(s), _TORCH
        )
        got_grads = lstm_loops.grad_loop(d_out, dh.clone(), dc.clone(), rk, h0, c0, zs, cs, hs, backwards, sequences)
        for got, ref in zip(got_grads, want_grads, strict=True):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-6, atol=2e-6)
