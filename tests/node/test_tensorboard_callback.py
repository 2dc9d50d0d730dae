"""``nf.node.tensor_board``: tfjs-node's callback, read back with TensorBoard's event accumulator. Train values go
to ``train/``, ``val_*`` ones to ``val/`` without the prefix; ``epoch_<name>`` at step epoch + 1, ``batch_<name>`` at
the count of batches seen."""

from __future__ import annotations

import asyncio
import logging

import pytest
from tensorboard_helpers import X, Y, close_writers, dense_model, read_run, scalars

import ndflow as nf
from ndflow.node import summary_writer


@pytest.fixture(autouse=True)
def _close_writers():
    yield
    close_writers()


def values(points: list[tuple[int, float]]) -> list[float]:
    return [v for _, v in points]


def test_epoch_mode_writes_train_and_val_runs(tmp_path):
    model = dense_model(["mae"])
    history = model.fit(
        X, Y, batch_size=4, epochs=3, verbose=0, validation_data=(X[:4], Y[:4]),
        callbacks=nf.node.tensor_board(tmp_path),
    )  # fmt: skip
    train, val = tmp_path / "train", tmp_path / "val"
    assert sorted(read_run(train).Tags()["scalars"]) == ["epoch_loss", "epoch_mae"]
    assert sorted(read_run(val).Tags()["scalars"]) == ["epoch_loss", "epoch_mae"]
    for run, prefix in ((train, ""), (val, "val_")):
        for name in ("loss", "mae"):
            points = scalars(run, f"epoch_{name}")
            assert [s for s, _ in points] == [1, 2, 3]
            assert values(points) == pytest.approx(history.history[prefix + name], rel=1e-6)
    event_files = list(train.glob("events.out.tfevents.*"))
    assert len(event_files) == 1 and event_files[0].name.endswith(".v2")
    model.dispose()


def test_batch_mode_writes_every_batch_at_the_count_of_batches_seen(tmp_path):
    model = dense_model()
    seen: list[float] = []
    record = {"on_batch_end": lambda b, logs: seen.append(logs["loss"])}
    model.fit(X, Y, batch_size=4, epochs=2, verbose=0, callbacks=[nf.node.tensor_board(str(tmp_path), "batch"), record])
    points = scalars(tmp_path / "train", "batch_loss")
    assert [s for s, _ in points] == [1, 2, 3, 4, 5, 6]  # 3 batches per epoch, counted across epochs
    assert values(points) == pytest.approx(seen, rel=1e-6)
    assert [s for s, _ in scalars(tmp_path / "train", "epoch_loss")] == [1, 2]
    assert not (tmp_path / "val").exists()  # no validation: no val run
    model.dispose()


def test_tfjs_config_object_and_keyword_hint(tmp_path):
    callback = nf.node.tensor_board(str(tmp_path), {"updateFreq": "batch"})
    assert callback.update_freq == "batch" and callback.logdir == str(tmp_path)
    assert nf.node.tensor_board(str(tmp_path), {}).update_freq == "epoch"
    with pytest.raises(TypeError, match=r"tensor_board: unexpected argument\(s\) 'updateFreq' \(use 'update_freq'\)"):
        nf.node.tensor_board(str(tmp_path), updateFreq="batch")
    with pytest.raises(ValueError, match="tensor_board: unknown config key 'freq'"):
        nf.node.tensor_board(str(tmp_path), {"freq": "batch"})


def test_batch_count_goes_on_across_fits_and_initial_epoch_sets_the_step(tmp_path):
    model = dense_model()
    callback = nf.node.tensor_board(tmp_path, update_freq="batch")
    model.fit(X, Y, batch_size=6, epochs=1, verbose=0, callbacks=callback)
    model.fit(X, Y, batch_size=6, epochs=3, initial_epoch=2, verbose=0, callbacks=callback)
    assert [s for s, _ in scalars(tmp_path / "train", "batch_loss")] == [1, 2, 3, 4]
    assert [s for s, _ in scalars(tmp_path / "train", "epoch_loss")] == [1, 3]
    model.dispose()


def test_fit_async_fit_dataset_and_fit_dataset_async(tmp_path):
    model = dense_model(["mse"])

    def dataset():
        return nf.data.zip({"xs": nf.data.array(X), "ys": nf.data.array(Y)}).batch(4)

    async def train_async():
        h1 = await model.fit_async(
            X, Y, batch_size=4, epochs=2, verbose=0, validation_split=0.25,
            callbacks=nf.node.tensor_board(tmp_path / "fit_async", "batch"),
        )  # fmt: skip
        h2 = await model.fit_dataset_async(
            dataset(), epochs=2, verbose=0, callbacks=nf.node.tensor_board(tmp_path / "fit_dataset_async")
        )
        return h1, h2

    h1, h2 = asyncio.run(train_async())
    h3 = model.fit_dataset(dataset(), epochs=2, verbose=0, callbacks=nf.node.tensor_board(tmp_path / "fit_dataset"))
    assert values(scalars(tmp_path / "fit_async" / "train", "epoch_loss")) == pytest.approx(h1.history["loss"])
    assert values(scalars(tmp_path / "fit_async" / "val", "epoch_mse")) == pytest.approx(h1.history["val_mse"])
    assert [s for s, _ in scalars(tmp_path / "fit_async" / "train", "batch_loss")] == [1, 2, 3, 4, 5, 6]
    for run, history in (("fit_dataset_async", h2), ("fit_dataset", h3)):
        points = scalars(tmp_path / run / "train", "epoch_loss")
        assert [s for s, _ in points] == [1, 2]
        assert values(points) == pytest.approx(history.history["loss"], rel=1e-6)
    model.dispose()


def test_a_log_dir_that_cannot_be_written_is_refused_at_creation(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match=r"tensor_board: cannot write to the log directory '.*a_file/logs'"):
        nf.node.tensor_board(blocker / "logs")
    with pytest.raises(ValueError, match="tensor_board: update_freq must be 'batch' or 'epoch', got 'step'"):
        nf.node.tensor_board(tmp_path, "step")
    with pytest.raises(ValueError, match="tensor_board: invalid logdir ''"):
        nf.node.tensor_board("")


def test_a_failing_write_warns_once_and_training_goes_on(tmp_path, caplog):
    callback = nf.node.tensor_board(tmp_path, update_freq="batch")
    (tmp_path / "train").write_text("the run directory is taken by a file")  # every train write now fails
    (tmp_path / "val").write_text("and so is the val one")
    model = dense_model()
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        history = model.fit(X, Y, batch_size=4, epochs=2, verbose=0, validation_split=0.25, callbacks=callback)
    assert len(history.history["loss"]) == 2 and len(history.history["val_loss"]) == 2
    warnings = [r for r in caplog.records if r.name == "ndflow" and "tensor_board" in r.getMessage()]
    assert len(warnings) == 1
    assert str(tmp_path) in warnings[0].getMessage() and "training goes on" in warnings[0].getMessage()
    model.dispose()


def test_a_write_failing_inside_the_writer_does_not_stop_training(tmp_path, caplog, monkeypatch):
    def disk_full(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(summary_writer.SummaryFileWriter, "_write_queue", disk_full)
    model = dense_model()
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        history = model.fit(X, Y, batch_size=2, epochs=2, verbose=0, callbacks=nf.node.tensor_board(tmp_path))
    assert len(history.history["loss"]) == 2
    messages = [r.getMessage() for r in caplog.records if "tensor_board" in r.getMessage()]
    assert len(messages) == 1 and "No space left on device" in messages[0]
    monkeypatch.undo()
    model.dispose()


def test_missing_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "tensorboardX", None)
    with pytest.raises(
        ImportError, match=r"nf.node.tensor_board needs tensorboardX .*pip install 'ndflow\[tensorboard"
    ):
        nf.node.tensor_board(tmp_path)
    with pytest.raises(ImportError, match=r"summary_file_writer needs tensorboardX .*ndflow\[tensorboard\]"):
        nf.node.summary_file_writer(tmp_path / "w")
