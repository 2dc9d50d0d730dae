"""Server-side batching: the batcher merges concurrent requests along the first axis up to ``max_batch`` rows or
the timeout, splits the outputs back by row counts, keeps requests of other shapes apart, and falls back to one
run per request when the merged run fails or its outputs are not batched; through the server, concurrent
requests are merged (batch-size metrics) and answered exactly as one by one, also with malformed requests
among them, and a model with a fixed batch size is never batched."""

from __future__ import annotations

import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from serve_helpers import ServerThread, dense_model, needs_serve, predict_local, save

import ndflow as nf
from ndflow.serving.batching import Batcher
from ndflow.serving.errors import ServingError


class Recorder:
    """A model that doubles ``x`` and records the batch sizes it ran; fails on a negative value."""

    def __init__(self, extra_output: bool = False) -> None:
        self.sizes: list[int] = []
        self.lock = threading.Lock()
        self.extra_output = extra_output

    def __call__(self, feeds):
        x = feeds["x"]
        with self.lock:
            self.sizes.append(x.shape[0])
        if (x < 0).any():
            raise ServingError("negative input", "INVALID_ARGUMENT")
        out = {"y": x * 2}
        if self.extra_output:
            out["n"] = np.array([x.shape[0]])  # not batched: its first dimension is not the rows
        return out


def _run(coro):
    return asyncio.run(coro)


async def _submit_all(batcher, requests, stagger: float = 0.0):
    items = []
    for feeds, rows in requests:
        items.append(batcher.submit(feeds, rows))
        if stagger:
            await asyncio.sleep(stagger)
    results = await asyncio.gather(*(i.future for i in items), return_exceptions=True)
    await batcher.aclose()
    return results


def _requests(sizes, width=3):
    out, start = [], 0
    for n in sizes:
        out.append(({"x": np.arange(start, start + n * width, dtype=np.float32).reshape(n, width)}, n))
        start += n * width
    return out


def test_merges_up_to_max_batch_and_splits_back():
    model = Recorder()
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=4, timeout_s=0.5, executor=pool)
            return await _submit_all(batcher, _requests([1, 2, 1, 3, 1]))

        reqs = _requests([1, 2, 1, 3, 1])
        results = _run(go())
    assert model.sizes[0] == 4  # the first three (1 + 2 + 1 rows) closed a full batch at once
    assert sum(model.sizes) == 8 and max(model.sizes) <= 4
    for (feeds, _), got in zip(reqs, results, strict=True):
        np.testing.assert_array_equal(got["y"], feeds["x"] * 2)


def test_timeout_closes_a_partial_batch():
    model = Recorder()
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=64, timeout_s=0.02, executor=pool)
            loop = asyncio.get_running_loop()
            start = loop.time()
            out = await _submit_all(batcher, _requests([1, 1, 1]))
            return out, loop.time() - start

        results, took = _run(go())
    assert model.sizes == [3] and took < 1.0
    assert [r["y"].shape for r in results] == [(1, 3)] * 3


def test_other_shapes_and_oversized_requests_run_apart():
    model = Recorder()
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=4, timeout_s=0.01, executor=pool)
            reqs = _requests([1, 1], width=3) + _requests([1], width=5) + _requests([6], width=3)
            return reqs, await _submit_all(batcher, reqs)

        reqs, results = _run(go())
    assert sorted(model.sizes) == [1, 2, 6]
    for (feeds, _), got in zip(reqs, results, strict=True):
        np.testing.assert_array_equal(got["y"], feeds["x"] * 2)


def test_a_failing_request_does_not_fail_the_others():
    model = Recorder()
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=8, timeout_s=0.05, executor=pool)
            reqs = _requests([1, 1, 1])
            reqs[1] = ({"x": -np.ones((1, 3), np.float32)}, 1)
            return reqs, await _submit_all(batcher, reqs)

        reqs, results = _run(go())
    assert isinstance(results[1], ServingError) and "negative" in str(results[1])
    np.testing.assert_array_equal(results[0]["y"], reqs[0][0]["x"] * 2)
    np.testing.assert_array_equal(results[2]["y"], reqs[2][0]["x"] * 2)
    assert model.sizes[0] == 3 and sorted(model.sizes[1:]) == [1, 1, 1]


def test_outputs_that_are_not_batched_fall_back_to_single_runs():
    model = Recorder(extra_output=True)
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=8, timeout_s=0.05, executor=pool)
            return await _submit_all(batcher, _requests([2, 1]))

        results = _run(go())
    assert [r["n"].tolist() for r in results] == [[2], [1]]


def test_no_wait_when_no_other_request_is_on_its_way():
    model = Recorder()
    on_the_way = [0]
    with ThreadPoolExecutor(2) as pool:

        async def go():
            batcher = Batcher(model, max_batch=64, timeout_s=5.0, executor=pool, arriving=lambda: on_the_way[0])
            loop = asyncio.get_running_loop()
            start = loop.time()
            alone = await batcher.submit(*_requests([1])[0]).future
            took_alone = loop.time() - start
            on_the_way[0] = 1  # another request is being received: the batch waits for it
            first = batcher.submit(*_requests([1])[0])
            await asyncio.sleep(0.05)
            assert not first.future.done()
            on_the_way[0] = 0
            second = batcher.submit(*_requests([1])[0])
            await asyncio.gather(first.future, second.future)
            await batcher.aclose()
            return alone, took_alone

        alone, took_alone = _run(go())
    assert took_alone < 1.0 and alone["y"].shape == (1, 3)
    assert model.sizes == [1, 2]


def test_bad_settings_are_refused():
    with ThreadPoolExecutor(1) as pool:
        with pytest.raises(ValueError, match="max_batch"):
            Batcher(lambda f: f, 1, 0.01, pool)
        with pytest.raises(ValueError, match="timeout_s"):
            Batcher(lambda f: f, 4, -1, pool)


# -- through the server ------------------------------------------------------------------------------------------
def _metric(text: str, name: str, model: str) -> float:
    m = re.search(rf'^{name}{{model="{model}"}} ([0-9.e+]+)$', text, flags=re.M)
    return float(m.group(1)) if m else 0.0


@needs_serve
def test_concurrent_requests_are_merged_and_answered_exactly(tmp_path):
    import httpx

    import ndflow.serving as serving

    save(dense_model(), tmp_path / "dense")
    save(dense_model(batch=1), tmp_path / "fixed")
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(48, 3)).astype(np.float32)
    (want,) = predict_local(tmp_path / "dense" / "model.json", xs)
    before = nf.memory().num_tensors
    app = serving.app(
        [str(tmp_path / "dense"), str(tmp_path / "fixed")], max_batch=16, batch_timeout_ms=30, poll_s=0, tune_gc=False
    )
    with ServerThread(app) as running, httpx.Client(base_url=running.url, timeout=30) as client:

        def one(i):
            if i % 10 == 9:  # 10% malformed among them
                r = client.post("/v1/models/dense:predict", json={"instances": [[1.0, 2.0]]})
                return ("bad", r.status_code)
            r = client.post("/v1/models/dense:predict", json={"instances": [xs[i].tolist()]})
            return ("good", i, r.status_code, r.json())

        def fixed(i):
            return client.post("/v1/models/fixed:predict", json={"instances": [xs[i].tolist()]}).status_code

        with ThreadPoolExecutor(24) as pool:
            answers = list(pool.map(one, range(len(xs))))
            assert set(pool.map(fixed, range(8))) == {200}
        metrics = client.get("/metrics").text
    for a in answers:
        if a[0] == "bad":
            assert a[1] == 400
        else:
            _, i, status, body = a
            assert status == 200
            np.testing.assert_allclose(body["predictions"], want[i : i + 1], rtol=1e-5, atol=1e-6)
    runs = _metric(metrics, "ndflow_serve_batch_requests_count", "dense")
    merged = _metric(metrics, "ndflow_serve_batch_requests_sum", "dense")
    assert merged == sum(1 for a in answers if a[0] == "good") and runs < merged  # some runs held several requests
    assert _metric(metrics, "ndflow_serve_batch_requests_count", "fixed") == 0  # a fixed batch is never merged
    assert nf.memory().num_tensors == before
