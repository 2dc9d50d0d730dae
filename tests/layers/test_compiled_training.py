"""The compiled training step (layers/engine/compiled_training.py): a recorded step replayed gives the eager tape's
weights, and everything that changes what a step does makes it record again (or stay eager).

Tolerance: the replay makes the same kernel calls with the same attributes in the same order as the eager step, so
the weights are compared with ``rtol=1e-6, atol=1e-7`` (they are equal on every machine measured: the tolerance
only leaves room for a backend whose kernels are not deterministic run to run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow.layers.engine.compiled_training import NotReplayableError, build_plan, train_compile_refused, train_plans

layers = nf.layers
TOL = {"rtol": 1e-6, "atol": 1e-7}


def _inner(model: nf.LayersModel) -> Any:
    return getattr(model, "model", model)  # a Sequential trains through its inner model


def _seeded(model: nf.LayersModel, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    values = [nf.tensor((rng.standard_normal(w.shape) * 0.3).astype(np.float32)) for w in model.weights]
    model.set_weights(values)
    nf.dispose(values)


def _mlp() -> nf.LayersModel:
    model = nf.sequential()
    model.add(layers.dense(units=16, activation="relu", input_shape=[12]))
    model.add(layers.dense(units=3, activation="softmax"))
    return model


def _cnn() -> nf.LayersModel:
    model = nf.sequential()
    model.add(layers.conv2d(filters=4, kernel_size=3, activation="relu", input_shape=[8, 8, 2]))
    model.add(layers.max_pooling2d(pool_size=2))
    model.add(layers.flatten())
    model.add(layers.dense(units=3, activation="softmax"))
    return model


def _lstm() -> nf.LayersModel:
    model = nf.sequential()
    model.add(layers.embedding(input_dim=20, output_dim=6, input_length=7))
    model.add(layers.lstm(units=5))
    model.add(layers.dense(units=3, activation="softmax"))
    return model


def _bn_regularized() -> nf.LayersModel:
    model = nf.sequential()
    model.add(layers.dense(units=10, input_shape=[12], kernel_regularizer=nf.regularizers.l2(l2=0.01)))
    model.add(layers.batch_normalization())
    model.add(layers.activation(activation="relu"))
    model.add(layers.dense(units=3, activation="softmax", bias_regularizer="l1l2"))
    return model


def _data(kind: str, n: int = 6, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "cnn":
        x = rng.standard_normal((n, 8, 8, 2)).astype(np.float32)
    elif kind == "lstm":
        x = rng.integers(0, 20, (n, 7)).astype(np.float32)
    else:
        x = rng.standard_normal((n, 12)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]
    return x, y


MODELS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm, "bn_regularized": _bn_regularized}


def _run(
    make: Callable[[], nf.LayersModel],
    kind: str,
    compiled: bool,
    steps: Callable[[nf.LayersModel, nf.Tensor, nf.Tensor], None],
    optimizer: str = "adam",
) -> tuple[list[np.ndarray], Any]:
    """The model's weights (and its inner model's compiled state) after ``steps``, compiled or eager."""
    nf.env().set("TRAIN_COMPILE", compiled)
    model = make()
    _seeded(model)
    model.compile(optimizer=optimizer, loss="categoricalCrossentropy", metrics=["accuracy"])
    x_np, y_np = _data(kind)
    x, y = nf.tensor(x_np), nf.tensor(y_np)
    try:
        steps(model, x, y)
        weights = [w.read().data_sync().copy() for w in model.weights]
        return weights, (train_plans(_inner(model)), train_compile_refused(_inner(model)))
    finally:
        nf.dispose([x, y])
        model.dispose()


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u, v, **TOL)


def _five_steps(model: nf.LayersModel, x: nf.Tensor, y: nf.Tensor) -> None:
    for _ in range(5):
        nf.dispose(model.train_on_batch(x, y))


@pytest.mark.parametrize("kind", list(MODELS))
def test_compiled_step_gives_the_eager_tapes_weights_after_five_steps(kind):
    eager, (plans, _) = _run(MODELS[kind], kind, False, _five_steps)
    assert plans == 0
    got, (plans, refused) = _run(MODELS[kind], kind, True, _five_steps)
    assert refused is None
    assert plans == 1
    _same(got, eager)


def test_batch_norm_moving_statistics_are_assigned_by_the_replay():
    eager, _ = _run(_bn_regularized, "mlp", False, _five_steps)
    got, (plans, _) = _run(_bn_regularized, "mlp", True, _five_steps)
    assert plans == 1
    _same(got, eager)  # model.weights holds the moving mean and variance
    assert not np.allclose(got[4], 0.0)  # the moving mean moved


def test_histories_and_memory_are_the_eager_ones_in_fit():
    def fit(model, x, y):
        model.fit(x, y, epochs=1, batch_size=4, verbose=0, shuffle=False)  # batches of 4 and 2: two signatures
        before = nf.memory()["num_tensors"]  # with the optimizer's slots made by the first step
        history = model.fit(x, y, epochs=4, batch_size=4, verbose=0, shuffle=False)
        fit.history = history.history
        assert nf.memory()["num_tensors"] == before  # flat over epochs

    eager, _ = _run(_mlp, "mlp", False, fit)
    eager_history = fit.history
    got, (plans, _) = _run(_mlp, "mlp", True, fit)
    assert plans == 2
    _same(got, eager)
    for key, values in eager_history.items():
        np.testing.assert_allclose(fit.history[key], values, **TOL)


def _toggle(model, x, y):
    for i in range(6):
        if i == 2:
            model.layers[0].trainable = False
        if i == 4:
            model.layers[0].trainable = True
        nf.dispose(model.train_on_batch(x, y))


def test_a_layers_trainable_toggled_between_steps():
    eager, _ = _run(_mlp, "mlp", False, _toggle)
    got, (plans, _) = _run(_mlp, "mlp", True, _toggle)
    assert plans == 1
    _same(got, eager)


class _LearningRate(nf.layers.Callback):
    def on_batch_end(self, batch, logs=None):
        self.model.optimizer.learning_rate *= 0.5


def test_a_callback_changing_the_learning_rate():
    def fit(model, x, y):
        model.fit(x, y, epochs=3, batch_size=6, verbose=0, shuffle=False, callbacks=[_LearningRate()])

    eager, _ = _run(_mlp, "mlp", False, fit)
    got, _ = _run(_mlp, "mlp", True, fit)
    _same(got, eager)
    unchanged, _ = _run(_mlp, "mlp", True, lambda m, x, y: m.fit(x, y, epochs=3, batch_size=6, verbose=0))
    assert any(not np.allclose(a, b) for a, b in zip(got, unchanged, strict=True))  # the rate did change


def test_a_new_optimizer_and_new_input_shapes():
    def steps(model, x, y):
        _five_steps(model, x, y)
        model.compile(optimizer=nf.train.sgd(0.1), loss="meanSquaredError")  # new optimizer, loss
        for n in (6, 3, 6, 3):
            xs, ys = nf.slice(x, 0, n), nf.slice(y, 0, n)
            nf.dispose([model.train_on_batch(xs, ys), xs, ys])
        model.optimizer.dispose()

    eager, _ = _run(_mlp, "mlp", False, steps)
    got, (plans, _) = _run(_mlp, "mlp", True, steps)
    assert plans == 2  # the batches of 6 and of 3 after the new compile
    _same(got, eager)


def test_regularizer_settings_and_added_losses():
    def steps(model, x, y):
        nf.dispose(model.train_on_batch(x, y))
        nf.dispose(model.train_on_batch(x, y))
        model.layers[0].kernel_regularizer.l2 = 0.5  # read when the penalty is computed
        nf.dispose(model.train_on_batch(x, y))
        dense = model.layers[3]
        dense.add_loss(lambda: nf.mul(nf.sum(nf.square(dense.kernel.read())), 0.25))
        nf.dispose(model.train_on_batch(x, y))
        nf.dispose(model.train_on_batch(x, y))

    eager, _ = _run(_bn_regularized, "mlp", False, steps)
    got, _ = _run(_bn_regularized, "mlp", True, steps)
    _same(got, eager)


def test_weights_set_between_steps_are_read_by_the_replay():
    def steps(model, x, y):
        _five_steps(model, x, y)
        _seeded(model, seed=7)
        _five_steps(model, x, y)

    eager, _ = _run(_cnn, "cnn", False, steps)
    got, (plans, _) = _run(_cnn, "cnn", True, steps)
    assert plans == 1
    _same(got, eager)


def _with_dropout() -> nf.LayersModel:
    model = nf.sequential()
    model.add(layers.dense(units=16, activation="relu", input_shape=[12]))
    model.add(layers.dropout(rate=0.5, seed=3))
    model.add(layers.dense(units=3, activation="softmax"))
    return model


def test_dropout_draws_new_masks_every_step_so_the_step_stays_eager():
    losses: dict[bool, list[float]] = {}

    def steps(model, x, y):
        losses[nf.env().get_bool("TRAIN_COMPILE")] = [float(model.train_on_batch(x, y)[0]) for _ in range(4)]

    eager, _ = _run(_with_dropout, "mlp", False, steps)
    got, (plans, refused) = _run(_with_dropout, "mlp", True, steps)
    assert plans == 0
    assert "random" in refused
    _same(got, eager)  # the seeded masks of TF.js, a new one each step
    assert losses[True] == losses[False]


def test_a_model_mutated_between_steps():
    def steps(model, x, y):
        _five_steps(model, x, y)
        popped = model.layers[-1]
        model.pop()
        popped.dispose()
        model.add(layers.dense(units=3, activation="sigmoid"))
        _seeded(model, seed=9)
        model.compile(optimizer="adam", loss="meanSquaredError")
        _five_steps(model, x, y)
        model.optimizer.dispose()

    eager, _ = _run(_mlp, "mlp", False, steps)
    got, (plans, _) = _run(_mlp, "mlp", True, steps)
    assert plans == 1
    _same(got, eager)


def test_a_loss_that_reads_values_stays_eager():
    def reading_loss(y_true, y_pred):
        scale = float(nf.max(y_true).data_sync()[0])  # a decision made from data
        return nf.mul(nf.losses.mean_squared_error(y_true, y_pred), scale)

    def steps(model, x, y):
        model.compile(optimizer="sgd", loss=reading_loss)
        _five_steps(model, x, y)
        model.optimizer.dispose()

    eager, _ = _run(_mlp, "mlp", False, steps)
    got, (plans, refused) = _run(_mlp, "mlp", True, steps)
    assert plans == 0 and "reads a tensor's values" in refused
    _same(got, eager)


def test_plan_refuses_tensors_made_before_the_step():
    outside = nf.tensor([1.0, 2.0])
    try:
        from ndflow.core.engine import ENGINE

        calls = ENGINE.record_calls()
        try:
            out = nf.add(outside, outside)
        finally:
            ENGINE.stop_recording()
        with pytest.raises(NotReplayableError, match="made before the step"):
            build_plan(calls, [], [out])
        plan = build_plan(calls, [outside], [out])  # as an input of the step it is fine
        again = plan.run([outside])
        np.testing.assert_array_equal(again[0].data_sync(), [2.0, 4.0])
        nf.dispose([out, *again])
    finally:
        outside.dispose()


def test_torch_backend_replays_too():
    pytest.importorskip("torch")
    nf.set_backend("torch")
    try:
        eager, _ = _run(_cnn, "cnn", False, _five_steps)
        got, (plans, _) = _run(_cnn, "cnn", True, _five_steps)
    finally:
        nf.set_backend("cpu")
    assert plans == 1
    _same(got, eager)


def test_a_weight_given_a_new_variable_records_again():
    """A weight whose variable is replaced (not given new values): the plan, which holds the old variable, is
    dropped. Here BatchNorm's moving mean gets a new variable holding the same values, and both runs keep equal."""

    def steps(model, x, y):
        _five_steps(model, x, y)
        weight = model.layers[1].weights[2]  # moving mean
        old = weight.val
        weight.val = nf.variable(old, False, f"{old.name}_new")
        old.dispose()
        _five_steps(model, x, y)

    eager, _ = _run(_bn_regularized, "mlp", False, steps)
    got, (plans, _) = _run(_bn_regularized, "mlp", True, steps)
    assert plans == 1
    _same(got, eager)
