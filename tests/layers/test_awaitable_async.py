"""The ``*_async`` coroutines give the event loop a turn between batches (TF.js's ``yieldEvery``) and read
asynchronous datasets with ``await``; the plain calls never suspend. No timing: a concurrent task counts turns."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import ndflow as nf
from ndflow.layers.engine.pacing import SYNC, Pace, check_yield_every

X = np.arange(24, dtype=np.float32).reshape(12, 2) / 24
Y = X.sum(axis=1, keepdims=True)


def dense_model() -> nf.Sequential:
    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[2], kernel_initializer="ones")])
    model.compile(optimizer="sgd", loss="meanSquaredError")
    return model


async def with_ticker(work) -> tuple[object, list[int]]:
    """Run ``work`` while a task counts how often it ran; ``marks`` holds the count seen at each batch end."""
    ticks = [0]
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            ticks[0] += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await work(ticks)
    finally:
        stop.set()
        await task
    return result, ticks


def test_fit_async_yields_between_batches():
    model = dense_model()
    marks: list[int] = []

    async def work(ticks: list[int]):
        return await model.fit_async(
            X, Y, batch_size=4, epochs=2, verbose=0, yield_every="batch",
            callbacks={"on_batch_end": lambda b, logs: marks.append(ticks[0])},
        )  # fmt: skip

    history, _ = asyncio.run(with_ticker(work))
    assert len(history.history["loss"]) == 2
    assert len(marks) == 6
    assert all(b > a for a, b in zip(marks, marks[1:], strict=False))  # the ticker ran between every two batches
    model.dispose()


def test_plain_fit_does_not_yield_inside_a_loop():
    model = dense_model()
    marks: list[int] = []

    async def work(ticks: list[int]):
        return model.fit(
            X, Y, batch_size=4, epochs=2, verbose=0, yield_every="batch",
            callbacks={"on_batch_end": lambda b, logs: marks.append(ticks[0])},
        )  # fmt: skip

    asyncio.run(with_ticker(work))
    assert len(set(marks)) == 1  # the plain call ran to its end without giving the loop a turn
    model.dispose()


@pytest.mark.parametrize(("yield_every", "turns"), [("epoch", 2), ("never", 0), ("batch", 6), (0, 6)])
def test_yield_every_modes(yield_every, turns):
    model = dense_model()
    paces: list[Pace] = []
    original = Pace.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        paces.append(self)

    Pace.__init__ = spy  # type: ignore[method-assign]
    try:
        asyncio.run(model.fit_async(X, Y, batch_size=4, epochs=2, verbose=0, yield_every=yield_every))
    finally:
        Pace.__init__ = original  # type: ignore[method-assign]
    assert paces[-1].yields == turns
    model.dispose()


def test_auto_yields_once_125_ms_have_passed():
    clock = [0.0]
    pace = Pace("auto", now=lambda: clock[0])

    async def main() -> list[int]:
        seen = []
        for step in (50.0, 100.0, 130.0, 200.0, 300.0):
            clock[0] = step
            await pace.batch_end()
            seen.append(pace.yields)
        return seen

    assert asyncio.run(main()) == [0, 0, 1, 1, 2]  # debounced as TF.js: 125 ms since the last turn


def test_yield_every_checked():
    assert check_yield_every(None, "fit") == "auto"
    assert check_yield_every(10, "fit") == 10.0
    with pytest.raises(ValueError, match="fit: yield_every must be"):
        check_yield_every("sometimes", "fit")
    model = dense_model()
    with pytest.raises(ValueError, match="yield_every"):
        model.fit(X, Y, epochs=1, verbose=0, yield_every=-1)
    model.dispose()
    assert SYNC.mode == "never"


def test_evaluate_async_yields_and_matches_evaluate():
    model = dense_model()
    plain = model.evaluate(X, Y, batch_size=4)

    async def work(ticks: list[int]):
        return await model.evaluate_async(X, Y, batch_size=4, yield_every="batch")

    value, ticks = asyncio.run(with_ticker(work))
    assert ticks[0] >= 3
    np.testing.assert_allclose(value.numpy(), plain.numpy(), rtol=1e-6)
    nf.dispose([plain, value])
    model.dispose()


def async_batches(n: int):
    async def gen():
        for i in range(n):
            await asyncio.sleep(0)  # a real asynchronous source
            yield nf.tensor(X[i * 4 : (i + 1) * 4]), nf.tensor(Y[i * 4 : (i + 1) * 4])

    return gen


def test_fit_dataset_async_awaits_an_async_source_inside_a_loop():
    model = dense_model()

    async def main() -> None:
        history = await model.fit_dataset_async(async_batches(3), epochs=2, verbose=0)
        assert len(history.history["loss"]) == 2
        value = await model.evaluate_dataset_async(async_batches(3)())
        assert value.shape == ()
        value.dispose()
        with pytest.raises(RuntimeError, match="fit_dataset_async"):  # the plain call cannot block the loop
            model.fit_dataset(async_batches(3), epochs=1, verbose=0)

    asyncio.run(main())
    history = model.fit_dataset(async_batches(3), epochs=1, verbose=0)  # no loop: a private one
    assert len(history.history["loss"]) == 1
    model.dispose()


def test_fit_dataset_async_with_nf_data_async_stage_and_yields():
    model = dense_model()

    async def double(e):
        await asyncio.sleep(0)
        return {"xs": e["xs"], "ys": nf.mul(e["ys"], 1)}

    ds = nf.data.zip({"xs": nf.data.array(X.tolist()), "ys": nf.data.array(Y.tolist())}).batch(4).map_async(double)
    marks: list[int] = []

    async def work(ticks: list[int]):
        return await model.fit_dataset_async(
            ds,
            epochs=2,
            verbose=0,
            yield_every="batch",
            callbacks={"on_batch_end": lambda b, l: marks.append(ticks[0])},
        )

    history, _ = asyncio.run(with_ticker(work))
    assert len(history.history["loss"]) == 2 and len(marks) == 6
    assert all(b > a for a, b in zip(marks, marks[1:], strict=False))

    async def evaluate() -> None:
        value = await model.evaluate_dataset_async(ds, {"batches": 2})
        value.dispose()

    asyncio.run(evaluate())
    model.dispose()


def test_fit_async_matches_fit():
    a, b = dense_model(), dense_model()
    ha = a.fit(X, Y, batch_size=4, epochs=3, verbose=0, shuffle=False)
    hb = asyncio.run(b.fit_async(X, Y, batch_size=4, epochs=3, verbose=0, shuffle=False, yield_every="batch"))
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-6)
    a.dispose()
    b.dispose()


def test_fit_async_errors_and_cleanup():
    model = dense_model()

    async def bad(batch: int, logs: dict) -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        asyncio.run(model.fit_async(X, Y, epochs=1, verbose=0, callbacks={"on_batch_end": bad}))
    assert not model.model.is_training
    history = asyncio.run(model.fit_async(X, Y, epochs=1, verbose=0))  # usable again
    assert len(history.history["loss"]) == 1
    model.dispose()
