"""``fit_dataset`` / ``evaluate_dataset`` on ``nf.data`` datasets and async sources (TF.js's ``fitDataset``)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow.data import Dataset, IteratorResult, LazyIterator

DATA_X = np.linspace(-1, 1, 30, dtype=np.float32).reshape(10, 3)
DATA_Y = DATA_X.sum(1, keepdims=True) * 0.5
BATCHES = [(DATA_X[s : s + 4], DATA_Y[s : s + 4]) for s in range(0, 10, 4)]


def mlp() -> nf.LayersModel:
    nf.layers.naming.reset_uids()
    model = nf.sequential(
        layers=[nf.layers.dense(units=4, activation="relu", input_shape=[3]), nf.layers.dense(units=1)]
    )
    model.compile(optimizer="sgd", loss="meanSquaredError")
    model.set_weights([np.full(w.shape, 0.1, np.float32) for w in model.weights])
    return model


def expected_losses(epochs: int = 2) -> list[float]:
    model = mlp()
    losses = model.fit(DATA_X, DATA_Y, batch_size=4, epochs=epochs, shuffle=False, verbose=0).history["loss"]
    model.dispose()
    return losses


class _Batches(LazyIterator):
    """Fresh tensors per batch, as an nf.data pipeline makes them; counts close() calls."""

    def __init__(self, owner: TensorBatches) -> None:
        self.owner, self.index = owner, 0

    def next(self) -> IteratorResult:
        if self._closed or self.index >= len(BATCHES):
            return IteratorResult(None, True)
        x, y = BATCHES[self.index]
        self.index += 1
        return IteratorResult({"xs": nf.tensor(x), "ys": nf.tensor(y)}, False)

    def close(self) -> None:
        self.owner.closed += 1
        super().close()


class TensorBatches(Dataset):
    size = len(BATCHES)

    def __init__(self) -> None:
        self.closed = 0
        self.iterators = 0

    def iterator(self) -> LazyIterator:
        self.iterators += 1
        return _Batches(self)


def test_a_dataset_gives_a_fresh_iterator_per_epoch_and_its_batches_are_freed() -> None:
    expected = expected_losses()
    model = mlp()
    dataset = TensorBatches()
    start = nf.memory().num_tensors
    steps: list[Any] = []
    callbacks = {"on_train_begin": lambda logs: steps.append(model.history.params["steps"])}
    history = model.fit_dataset(dataset, epochs=2, verbose=0, callbacks=callbacks)
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-5)
    assert steps == [3]  # the dataset's size
    assert dataset.iterators == 2 and dataset.closed == 2
    assert nf.memory().num_tensors == start  # sgd keeps no slots; every batch was freed
    out = model.evaluate_dataset(TensorBatches())
    ref = model.evaluate(DATA_X, DATA_Y)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5)
    nf.dispose([out, ref])
    model.dispose()


def test_a_dataset_as_validation_data() -> None:
    model = mlp()
    history = model.fit_dataset(TensorBatches(), epochs=1, verbose=0, validation_data=TensorBatches())
    assert "val_loss" in history.history and np.isfinite(history.history["val_loss"][0])
    model.dispose()


def test_batches_per_epoch_keeps_one_iterator_and_closes_it_at_the_end() -> None:
    model = mlp()
    dataset = TensorBatches()
    model.fit_dataset(dataset, epochs=1, batches_per_epoch=2, verbose=0)
    assert dataset.iterators == 1 and dataset.closed == 1
    model.dispose()


def test_an_error_in_a_step_closes_the_iterator() -> None:
    model = mlp()
    dataset = TensorBatches()

    def fail(batch: int, logs: Any) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        model.fit_dataset(dataset, epochs=1, verbose=0, callbacks={"on_batch_end": fail})
    assert dataset.closed == 1
    model.dispose()


def test_async_generators_train_as_sync_ones() -> None:
    expected = expected_losses()

    async def batches():
        for x, y in BATCHES:
            await asyncio.sleep(0)
            yield nf.tensor(x), nf.tensor(y)

    model = mlp()
    start = nf.memory().num_tensors
    history = model.fit_dataset(batches, epochs=2, verbose=0)  # a callable: a fresh async generator per epoch
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-5)
    assert nf.memory().num_tensors == start
    one_shot = model.fit_dataset(batches(), epochs=1, verbose=0)
    assert len(one_shot.history["loss"]) == 1
    assert nf.memory().num_tensors == start
    model.dispose()


def test_an_async_source_inside_a_running_loop_is_refused_clearly() -> None:
    model = mlp()

    async def batches():
        yield DATA_X, DATA_Y

    async def main() -> None:
        with pytest.raises(RuntimeError, match="fit_dataset: the dataset is asynchronous and an event loop"):
            model.fit_dataset(batches(), epochs=1, verbose=0)

    asyncio.run(main())
    model.dispose()


def test_something_that_is_not_a_dataset_names_what_is_accepted() -> None:
    model = mlp()
    with pytest.raises(TypeError, match="fit_dataset: dataset must be an nf.data.Dataset"):
        model.fit_dataset(42, epochs=1, verbose=0)
    model.dispose()


def test_a_callback_that_raises_leaves_no_running_totals_behind() -> None:
    """fit as fit_dataset: the epoch's running totals are freed when a callback interrupts the epoch."""
    model = mlp()

    def fail(batch: int, logs: Any) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        model.fit(DATA_X, DATA_Y, batch_size=4, epochs=1, verbose=0, callbacks={"on_batch_end": fail})
    model.dispose()


def test_a_ten_thousand_element_pipeline_leaves_memory_flat() -> None:
    """TF.js's program: array -> map (tensors) -> shuffle -> batch -> fitDataset; only what the model holds stays."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10_000, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True) * 0.5
    model = mlp()
    start = nf.memory().num_tensors
    seen: list[int] = []
    rows = nf.data.array([{"x": list(map(float, a)), "y": [float(b[0])]} for a, b in zip(x, y, strict=True)])
    ds = rows.map(lambda e: {"xs": nf.tensor(e["x"]), "ys": nf.tensor(e["y"])}).shuffle(500, seed=3).batch(100)
    history = model.fit_dataset(
        ds, epochs=2, verbose=0, callbacks={"on_batch_end": lambda b, logs: seen.append(nf.memory().num_tensors)}
    )
    assert len(seen) == 200 and seen[:100] == seen[100:]  # each epoch holds the same tensors at the same step
    assert max(seen) <= start + 2 * 500 + 2  # at most the shuffle buffer's elements and the epoch's totals
    assert seen[-1] <= start + 2  # the buffer drained
    assert nf.memory().num_tensors == start
    assert history.history["loss"][1] < history.history["loss"][0]
    model.dispose()


def test_fit_dataset_streams_a_csv(tmp_path) -> None:
    path = tmp_path / "data.csv"
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 3)).astype(np.float32)
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        for row in x:
            f.write(",".join(f"{v:.6f}" for v in row) + f",{row.sum() * 0.5:.6f}\n")
    ds = nf.data.csv(str(path), column_configs={"y": {"is_label": True}})
    ds = ds.map(lambda e: {"xs": list(e["xs"].values()), "ys": list(e["ys"].values())}).batch(50)
    model = mlp()
    start = nf.memory().num_tensors
    history = model.fit_dataset(ds, epochs=3, verbose=0, validation_data=ds.take(2))
    assert len(history.history["loss"]) == 3 and history.history["loss"][-1] < history.history["loss"][0]
    assert "val_loss" in history.history
    assert nf.memory().num_tensors == start
    model.dispose()
