"""Callbacks: hooks and logs, CustomCallback, EarlyStopping (restore_best_weights too), stop_training, progress."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow.layers import callbacks as cb
from ndflow.layers.engine.progress import ProgbarLogger, format_duration, format_value

X = np.linspace(-1, 1, 36, dtype=np.float32).reshape(12, 3)
Y = (X @ np.array([[0.5], [-1.0], [0.25]], np.float32)).astype(np.float32)


def model(optimizer: Any = "sgd", metrics: Any = ("mae",)) -> nf.LayersModel:
    """A compiled two-layer regression model."""
    m = nf.sequential(layers=[nf.layers.dense(units=4, activation="tanh", input_shape=[3]), nf.layers.dense(units=1)])
    m.compile(optimizer=optimizer, loss="meanSquaredError", metrics=list(metrics))
    return m


class Recorder(nf.layers.Callback):
    """Records every hook with a copy of its logs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any, dict]] = []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", None, dict(logs)))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch, dict(logs)))

    def on_batch_begin(self, batch, logs=None):
        self.calls.append(("batch_begin", batch, dict(logs)))

    def on_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch, dict(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch, dict(logs)))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", None, dict(logs)))


def test_callback_subclass_sees_floats_params_and_the_model() -> None:
    """A Callback gets float logs, fit's params, and the model fit was called on (the Sequential)."""
    m = model()
    rec = Recorder()
    history = m.fit(X, Y, batch_size=5, epochs=2, verbose=0, callbacks=rec, validation_split=0.25)
    assert rec.model is m and m.history is history
    assert rec.params["samples"] == 9 and rec.params["batch_size"] == 5 and rec.params["epochs"] == 2
    assert rec.params["metrics"] == ["loss", "mae", "val_loss", "val_mae"]
    names = [c[0] for c in rec.calls]
    assert names == ["train_begin"] + ["epoch_begin", "batch_begin", "batch_end", "batch_begin", "batch_end",
                                       "epoch_end"] * 2 + ["train_end"]  # fmt: skip
    batch_end = rec.calls[3][2]
    assert set(batch_end) == {"batch", "size", "loss", "mae"} and all(
        isinstance(v, int | float) for v in batch_end.values()
    )
    epoch_end = rec.calls[6][2]
    assert list(epoch_end) == ["val_loss", "val_mae", "loss", "mae"]
    assert epoch_end["loss"] == pytest.approx(history.history["loss"][0])
    m.dispose()


def test_stop_training_from_a_batch_callback() -> None:
    """Setting model.stop_training in on_batch_end stops after that batch (no validation for that epoch)."""
    m = model()

    class Stopper(nf.layers.Callback):
        def on_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    rec = Recorder()
    history = m.fit(X, Y, batch_size=3, epochs=5, verbose=0, callbacks=[Stopper(), rec], validation_split=0.25)
    assert history.epoch == [0] and "val_loss" not in history.history
    assert [c[1] for c in rec.calls if c[0] == "batch_end"] == [0, 1]
    assert m.stop_training is True
    m.dispose()


def test_custom_callback_keys_yield_and_errors() -> None:
    """Dicts of functions (snake_case or TF.js camelCase keys); on_yield is throttled by a clock."""
    m = model()
    seen: list[Any] = []
    clock = iter(range(0, 10_000, 100))
    callbacks = [
        {"onEpochEnd": lambda epoch, logs: seen.append(("epoch", epoch, round(logs["loss"], 6)))},
        cb.CustomCallback(
            {
                "on_yield": lambda epoch, batch, logs: seen.append(("yield", epoch, batch)),
                "now_func": lambda: next(clock),
            },
            yield_every=150,
        ),
    ]
    m.fit(X, Y, batch_size=4, epochs=2, verbose=0, callbacks=callbacks)
    assert [s[0] for s in seen].count("epoch") == 2
    assert [s for s in seen if s[0] == "yield"] == [("yield", 0, 1), ("yield", 1, 0), ("yield", 1, 2)]
    with pytest.raises(TypeError, match="unknown key"):
        cb.CustomCallback({"on_epoch_done": print})
    with pytest.raises(ValueError, match="yield_every is 'never'"):
        cb.CustomCallback({"on_yield": print}, yield_every="never")
    with pytest.raises(TypeError, match=r"callbacks\[0\] must be a Callback or a dict"):
        m.fit(X, Y, verbose=0, callbacks=[print])
    m.dispose()


def test_async_callback_methods_are_awaited() -> None:
    """``async def`` hooks run to completion (fit is synchronous)."""
    m = model()
    done: list[int] = []

    async def on_epoch_end(epoch: int, logs: dict) -> None:
        done.append(epoch)

    m.fit(X, Y, epochs=3, verbose=0, callbacks={"on_epoch_end": on_epoch_end})
    assert done == [0, 1, 2]
    m.dispose()


def test_nested_fit_is_refused() -> None:
    """fit from inside a callback of fit raises."""
    m = model()
    inner = m.model

    def again(epoch: int, logs: dict) -> None:
        inner.fit(X, Y, verbose=0)

    with pytest.raises(RuntimeError, match="another fit"):
        m.fit(X, Y, verbose=0, callbacks={"on_epoch_end": again})
    m.dispose()


def test_early_stopping_patience_and_restore_best_weights() -> None:
    """A learning rate that diverges: stop after `patience` bad epochs and restore the best epoch's weights."""
    m = model(optimizer=nf.train.sgd(2.5), metrics=())
    es = nf.layers.early_stopping(monitor="loss", patience=2, restore_best_weights=True)
    snapshots: list[list[np.ndarray]] = []

    def snapshot(epoch: int, logs: dict) -> None:
        snapshots.append([w.read().numpy() for w in m.weights])

    try:
        history = m.fit(X, Y, batch_size=12, epochs=30, verbose=0, callbacks=[{"on_epoch_end": snapshot}, es])
        losses = history.history["loss"]
        best = int(np.argmin(losses))
        assert es.best_epoch == best and es.stopped_epoch == len(losses) - 1 == best + 2
        # the restored weights are those at the end of the best epoch, not of the last one
        restored = [w.read().numpy() for w in m.weights]
        for got, want in zip(restored, snapshots[best], strict=True):
            np.testing.assert_array_equal(got, want)
        assert any(not np.array_equal(a, b) for a, b in zip(restored, snapshots[-1], strict=True))
    finally:
        optimizer = m.optimizer
        m.dispose()
        optimizer.dispose()


def test_early_stopping_modes_and_missing_metric(caplog: pytest.LogCaptureFixture) -> None:
    """mode 'auto' watches accuracies upwards; an invalid mode falls back; a missing metric warns."""
    assert cb.EarlyStopping(monitor="val_acc").monitor_func is cb._greater
    assert cb.EarlyStopping(monitor="val_loss").min_delta == 0
    assert cb.EarlyStopping(min_delta=0.1).min_delta == -0.1
    fallback = cb.EarlyStopping(mode="sideways")
    assert fallback.mode == "auto" and "invalid" in caplog.text
    m = model()
    es = cb.EarlyStopping(monitor="val_loss")
    history = m.fit(X, Y, epochs=2, verbose=0, callbacks=es)
    assert len(history.epoch) == 2 and "Metric for EarlyStopping val_loss is not available" in caplog.text
    m.dispose()


def test_progress_bar_terminal_and_plain(capsys: pytest.CaptureFixture) -> None:
    """verbose=1: a redrawn bar with ETA on a terminal, one line per epoch otherwise (and for verbose=2)."""
    m = model()
    stream = io.StringIO()
    bar = ProgbarLogger(stream=stream, is_tty=True, use_tqdm=False)
    m.fit(X, Y, batch_size=4, epochs=2, verbose=0, callbacks=bar, validation_split=0.25)
    text = stream.getvalue()
    assert text.startswith("Epoch 1/2\n") and "Epoch 2/2\n" in text
    assert "\r1/3 [" in text and "ETA:" in text and "3/3 - " in text and "val_loss: " in text
    assert text.count("\n") == 4  # a title and a final line per epoch
    m.fit(X, Y, batch_size=4, epochs=2, verbose=1)  # stdout is captured: not a terminal
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Epoch 1/2 - 3/3 - ") and "loss: " in lines[0]
    m.fit_dataset([(X[:6], Y[:6]), (X[6:], Y[6:])], epochs=1, verbose=2)
    assert capsys.readouterr().out.startswith("Epoch 1/1 - 2/2 - ")
    m.dispose()


def test_progress_formatting() -> None:
    """Numbers and durations as Keras prints them."""
    assert format_value(0.123456) == "0.1235" and format_value(1.5e-5) == "1.5000e-05" and format_value(0) == "0.0000"
    assert format_duration(5.2) == "5s" and format_duration(125) == "2:05" and format_duration(3725) == "1:02:05"


def test_registry_adds_callbacks_by_verbosity() -> None:
    """register_callback_constructor: fit(verbose >= level) gets a new instance."""
    made: list[cb.BaseCallback] = []

    class Counter(cb.BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    saved = {k: list(v) for k, v in cb.CallbackConstructorRegistry.constructors.items()}
    try:
        cb.CallbackConstructorRegistry.clear()
        nf.layers.register_callback_constructor(3, Counter)
        with pytest.raises(ValueError, match="Duplicate"):
            nf.layers.register_callback_constructor(4, Counter)
        m = model()
        m.fit(X, Y, verbose=2)
        m.fit(X, Y, verbose=3)
        assert len(made) == 1
        m.dispose()
    finally:
        cb.CallbackConstructorRegistry.constructors = saved


def test_callback_requires_a_layers_model() -> None:
    """Callback.set_model refuses anything but a LayersModel."""
    with pytest.raises(TypeError, match="LayersModel"):
        nf.layers.Callback().set_model(object())


def test_logs_helpers_free_tensors() -> None:
    """resolve_scalars_in_logs reads and frees; dispose_tensors_in_logs frees."""
    logs = {"a": nf.scalar(1.5), "b": 2, "c": nf.scalar(3.0)}
    cb.resolve_scalars_in_logs(logs)
    assert logs == {"a": 1.5, "b": 2, "c": 3.0}
    logs = {"a": nf.scalar(1.0)}
    cb.dispose_tensors_in_logs(logs)
    assert logs["a"].is_disposed
