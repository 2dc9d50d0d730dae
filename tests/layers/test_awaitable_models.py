"""``await`` on the model APIs (ndflow/core/awaitable.py): a plain call runs to completion and its result awaits
to itself, under ``asyncio.run`` and inside a running loop (plain calls there too)."""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.awaitable import Resolved, ResolvedDict, ResolvedList, finish, is_pending, resolved
from ndflow.layers.engine.callbacks import History
from ndflow.layers.engine.saving import load_layers_model_async

X = np.arange(24, dtype=np.float32).reshape(12, 2) / 24
Y = X.sum(axis=1, keepdims=True)


def dense_model(metrics: list[str] | None = None) -> nf.Sequential:
    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[2], kernel_initializer="ones")])
    model.compile(optimizer="sgd", loss="meanSquaredError", metrics=metrics)
    return model


def two_output_model() -> nf.LayersModel:
    x = nf.input(shape=[2])
    a = nf.layers.dense(units=1, kernel_initializer="ones").apply(x)
    b = nf.layers.dense(units=2, kernel_initializer="ones").apply(x)
    return nf.model(inputs=x, outputs=[a, b])


def test_resolved_values_await_to_themselves_without_a_loop():
    t = nf.tensor([1.0, 2.0])
    try:
        for value in (t, ResolvedList([t]), ResolvedDict({"a": t}), History()):
            assert not is_pending(value)
            gen = value.__await__()
            with pytest.raises(StopIteration) as stop:  # finishes on its first step: no loop needed
                next(gen)
            assert stop.value.value is value
        assert resolved([1]) == [1] and isinstance(resolved([1]), ResolvedList)
        assert isinstance(resolved({"a": 1}), ResolvedDict)
        assert resolved(t) is t and resolved(3) == 3
        assert finish(5, "x") == 5
    finally:
        t.dispose()


def test_finish_runs_a_pending_handler_result():
    async def later() -> int:
        await asyncio.sleep(0)
        return 7

    assert is_pending(later.__call__) is False
    coro = later()
    assert is_pending(coro)
    assert finish(coro, "save") == 7  # no loop running: a fresh one

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="save waits on asynchronous work"):
            finish(later(), "save")

    asyncio.run(inside())


def test_tidy_and_data_map_accept_tensors_now_awaitable():
    t = nf.tensor([1.0, 2.0])
    out = nf.tidy(lambda: t * 2)
    assert out.numpy().tolist() == [2.0, 4.0]
    ds = nf.data.array([1.0, 2.0]).map(lambda v: nf.mul(v, 2))
    values = ds.to_array()
    assert [float(v) for v in values] == [2.0, 4.0]
    nf.dispose([t, out, *values])


def test_plain_calls_unchanged():
    model = dense_model(["mae"])
    history = model.fit(X, Y, batch_size=4, epochs=2, verbose=0)
    assert isinstance(history, History) and isinstance(history, Resolved)
    assert len(history.history["loss"]) == 2
    values = model.evaluate(X, Y, batch_size=4)
    assert isinstance(values, list) and isinstance(values, ResolvedList) and len(values) == 2
    pred = model.predict(X)
    assert pred.shape == (12, 1)
    nf.dispose([*values, pred])
    model.dispose()


def _run_all_awaited(model: nf.Sequential, tmp: str, plain_inside: bool) -> None:
    async def main() -> None:
        history = await model.fit(X, Y, batch_size=4, epochs=2, verbose=0)
        assert isinstance(history, History) and history.epoch == [0, 1]
        loss, mae = await model.evaluate(X, Y, batch_size=4)
        pred = await model.predict(X, batch_size=5)
        assert pred.shape == (12, 1)
        ds = nf.data.zip({"xs": nf.data.array(X.tolist()), "ys": nf.data.array(Y.tolist())}).batch(4)
        h2 = await model.fit_dataset(ds, epochs=1, verbose=0)
        assert len(h2.history["loss"]) == 1
        loss2, mae2 = await model.evaluate_dataset(ds)
        result = await model.save(f"file://{tmp}")
        assert result.model_artifacts_info.weight_data_bytes == 12
        loaded = await nf.load_layers_model(f"file://{tmp}/model.json")
        assert isinstance(loaded, nf.Sequential)
        again = await loaded  # the model awaits to itself
        assert again is loaded
        other = await load_layers_model_async(f"file://{tmp}/model.json")
        again_pred = other.predict(X)
        np.testing.assert_allclose(again_pred.numpy(), pred.numpy(), rtol=1e-6)
        again_pred.dispose()
        if plain_inside:  # plain calls inside a running loop: run to completion, no await needed
            h3 = model.fit(X, Y, epochs=1, verbose=0)
            assert len(h3.history["loss"]) == 1
            nf.dispose(model.evaluate(X, Y))
        nf.dispose([loss, mae, pred, loss2, mae2])
        loaded.dispose()
        other.dispose()

    asyncio.run(main())


def test_every_api_awaited_under_asyncio_run(tmp_path):
    model = dense_model(["mae"])
    _run_all_awaited(model, str(tmp_path), plain_inside=False)
    model.dispose()


def test_every_api_inside_a_running_loop_and_plain_there(tmp_path):
    model = dense_model(["mae"])
    _run_all_awaited(model, str(tmp_path), plain_inside=True)
    model.dispose()


def test_multi_output_predict_and_evaluate_lists_are_awaitable():
    model = two_output_model()
    model.compile(optimizer="sgd", loss="meanSquaredError")
    ys = [Y, np.concatenate([Y, Y], axis=1)]

    async def main() -> None:
        outs = await model.predict(X)
        assert isinstance(outs, ResolvedList) and [o.shape for o in outs] == [(12, 1), (12, 2)]
        values = await model.evaluate(X, ys)
        assert len(values) == 3
        nf.dispose([*outs, *values])

    asyncio.run(main())
    model.dispose()


def test_async_callbacks_awaited_by_fit_async_inside_a_loop():
    model = dense_model()
    seen: list[int] = []

    async def on_epoch_end(epoch: int, logs: dict) -> None:
        await asyncio.sleep(0)
        seen.append(epoch)

    async def main() -> None:
        await model.fit_async(X, Y, epochs=2, verbose=0, callbacks={"onEpochEnd": on_epoch_end})
        with pytest.raises(RuntimeError, match="fit_async"):  # the plain fit cannot await it in a running loop
            model.fit(X, Y, epochs=1, verbose=0, callbacks={"on_epoch_end": on_epoch_end})

    asyncio.run(main())
    assert seen == [0, 1]
    model.fit(X, Y, epochs=1, verbose=0, callbacks={"on_epoch_end": on_epoch_end})  # no loop: run on its own
    assert seen == [0, 1, 0]
    model.dispose()


def test_callback_returning_a_finished_result_is_not_awaited_inside_a_loop():
    model = dense_model()
    t = nf.tensor([1.0])

    async def main() -> None:
        model.fit(X, Y, epochs=1, verbose=0, callbacks={"on_epoch_end": lambda e, logs: t})

    asyncio.run(main())
    t.dispose()
    model.dispose()


def test_async_variants_are_coroutine_functions():
    for name in ("fit_async", "evaluate_async", "fit_dataset_async", "evaluate_dataset_async"):
        assert inspect.iscoroutinefunction(getattr(nf.Sequential, name)), name
    assert inspect.iscoroutinefunction(load_layers_model_async)
