"""``await`` on graph models (ndflow/core/awaitable.py): ``await nf.load_graph_model(url)``, ``await
model.predict(x)``, ``await model.save(url)`` under ``asyncio.run`` and inside a running loop; the
``load_graph_model_async`` coroutine; ``execute_async`` stays a coroutine (``asyncio.run`` takes it)."""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
from gm_helpers import check_outputs, expected_inputs, fixture

import ndflow as nf
from ndflow.converter.graph_model import GraphModel
from ndflow.converter.loading import load_graph_model, load_graph_model_async
from ndflow.core.awaitable import ResolvedList


def _x() -> nf.Tensor:
    return nf.tensor(np.array([[0.5, -1.0, 2.0]], np.float32))


def test_load_predict_execute_save_awaited(tmp_path):
    async def main() -> None:
        model = await load_graph_model(str(fixture("basic")))
        assert isinstance(model, GraphModel)
        assert await model is model
        x = _x()
        out = await model.predict(x)
        outs = await model.execute(x, ["out", "shape"])
        assert isinstance(outs, ResolvedList) and outs[1].numpy().tolist() == [1, 4]
        same = await model.execute_async(x, "out")
        np.testing.assert_array_equal(same.numpy(), outs[0].numpy())
        result = await model.save(f"file://{tmp_path}")
        assert result.model_artifacts_info.weight_data_bytes > 0
        again = await load_graph_model_async(f"file://{tmp_path}/model.json")
        out2 = again.predict(x)
        np.testing.assert_array_equal(out2[0].numpy(), out[0].numpy())
        nf.dispose([x, out, outs, same, out2])
        again.dispose()
        model.dispose()

    asyncio.run(main())


def test_plain_calls_inside_a_running_loop():
    async def main() -> None:
        model = load_graph_model(str(fixture("basic")))  # plain, in a running loop: runs to completion
        inputs = expected_inputs("basic")
        out = model.predict(inputs)
        check_outputs("basic", out)
        nf.dispose([*inputs.values(), out])
        model.dispose()

    asyncio.run(main())


def test_load_graph_model_async_yields_and_execute_async_stays_a_coroutine():
    assert inspect.iscoroutinefunction(load_graph_model_async)
    assert inspect.iscoroutinefunction(GraphModel.execute_async)
    ticks = [0]

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks[0] += 1
            await asyncio.sleep(0)

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0)
        before = ticks[0]
        model = await load_graph_model_async(str(fixture("while_loop")))
        assert ticks[0] > before  # the loop ran other tasks while the model loaded
        x = expected_inputs("while_loop")["x"]
        acc, count = await model.predict_async(x)
        check_outputs("while_loop", [acc, count])
        nf.dispose([acc, count, x])
        model.dispose()
        stop.set()
        await task

    asyncio.run(main())
    model = load_graph_model(str(fixture("while_loop")))
    x = expected_inputs("while_loop")["x"]
    acc, count = asyncio.run(model.execute_async(x))  # Python's usual way from plain code still works
    nf.dispose([acc, count, x])
    model.dispose()


def test_structured_outputs_dict_is_awaitable():
    model = load_graph_model(str(fixture("basic")))
    model.structured_output_keys = ["probs", "shape"]
    x = _x()

    async def main() -> None:
        out = await model.predict(x)
        assert sorted(out) == ["probs", "shape"]
        nf.dispose(list(out.values()))

    asyncio.run(main())
    x.dispose()
    model.dispose()
