"""One loaded model serves many threads: a graph model's ``execute``/``execute_async`` and a layers model's
``predict`` called from 8 threads at once (each thread with its own ``tidy`` scopes) give the single-threaded
results, bit for bit (the same kernels run; the cpu backend's thread split depends on shapes, not on load),
with no error and ``nf.memory()`` back to where it started. docs/threads.md states the thread model."""

from __future__ import annotations

import asyncio
import sys
import threading

import numpy as np
import pytest
from gm_helpers import expected_inputs, fixture

import ndflow as nf
from ndflow.converter import load_graph_model

THREADS, CALLS = 8, 40


def _in_threads(call) -> list[str]:
    """``call()`` CALLS times in each of THREADS threads, switching often; the errors they met."""
    errors: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)

    def work() -> None:
        for _ in range(CALLS):
            try:
                call()
            except Exception as exc:  # noqa: BLE001  (every error is a failure of the test, reported below)
                errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return errors


def _values(out) -> list[np.ndarray]:
    return [t.numpy() for t in (out if isinstance(out, list) else [out])]


@pytest.mark.parametrize("name", ["basic", "while_loop"])
def test_a_graph_model_serves_many_threads(backend, name):
    model = load_graph_model(str(fixture(name)))
    feeds = expected_inputs(name)
    try:
        run = (
            (lambda: asyncio.run(model.execute_async(feeds))) if model.needs_async() else (lambda: model.execute(feeds))
        )
        first = run()
        want = _values(first)
        nf.dispose(first)
        start = nf.memory().num_tensors
        mismatches: list[int] = []

        def call() -> None:
            def body() -> None:
                got = _values(run())
                if any(not np.array_equal(g, w) for g, w in zip(got, want, strict=True)):
                    mismatches.append(1)

            nf.tidy(body)

        assert _in_threads(call) == [] and mismatches == []
        assert nf.memory().num_tensors == start
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def test_a_layers_model_serves_many_threads(backend):
    model = nf.sequential()
    model.add(nf.layers.dense(units=16, activation="relu", input_shape=[8]))
    model.add(nf.layers.dense(units=4, activation="softmax"))
    x = nf.tensor(np.random.default_rng(3).random((5, 8), dtype=np.float32))
    try:
        y = model.predict(x)
        want = y.numpy()
        y.dispose()
        start = nf.memory().num_tensors
        mismatches: list[int] = []

        def call() -> None:
            out = model.predict(x)
            if not np.array_equal(out.numpy(), want):
                mismatches.append(1)
            out.dispose()

        assert _in_threads(call) == [] and mismatches == []
        assert nf.memory().num_tensors == start
    finally:
        x.dispose()
        model.dispose()
