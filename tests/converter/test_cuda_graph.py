"""Graph models replayed as CUDA graphs (ndflow/backends/torch/cuda_graph.py), with a fake graph on CPU torch.

There is no CUDA here: ``cuda_graphs_possible`` is forced True and ``capture``/``CUDAGraph`` are fakes. The fake
capture runs the captured body once (as a real capture makes the static outputs), and ``replay`` runs the body
again and copies its results into the static outputs, as a real replay writes them in place."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import expected_inputs, fixture

import ndflow as nf
from ndflow.converter import load_graph_model

pytest.importorskip("torch", reason="the torch backend needs torch")
cuda_graph = pytest.importorskip("ndflow.backends.torch.cuda_graph")


class FakeGraph:
    made: list[FakeGraph] = []

    def __init__(self) -> None:
        self.body = None
        self.outs = None
        self.replays = 0
        self.was_reset = False
        FakeGraph.made.append(self)

    def replay(self) -> None:
        self.replays += 1
        for static, new in zip(self.outs, self.body(), strict=True):
            if static is not new:
                static.copy_(new)

    def reset(self) -> None:
        self.was_reset = True


def fake_capture(graph: FakeGraph, body):
    graph.body = body
    graph.outs = body()
    return graph.outs


@pytest.fixture
def faked(monkeypatch):
    """The torch backend (CPU) with fake CUDA graphs; restores the previous backend."""
    if nf.find_backend("torch") is None:
        pytest.skip("torch backend not available")
    FakeGraph.made = []
    monkeypatch.setattr(cuda_graph, "cuda_graphs_possible", lambda backend: True)
    monkeypatch.setattr(cuda_graph, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(cuda_graph, "capture", fake_capture)
    before = nf.get_backend()
    nf.set_backend("torch")
    nf.env().set("TORCH_CUDA_GRAPHS", True)  # off by default until a real GPU has checked it
    yield
    nf.set_backend(before)


def _runner(model):
    programs = list(model.executor._programs.values())
    assert len(programs) == 1
    held = programs[0].device_graph
    return None if held is None else held[1]


def _run(model, x):
    outs = model.execute({"x": x})
    values = [o.numpy().copy() for o in outs]
    nf.dispose(outs)
    return values


def _eager(x_values):
    before = nf.env().get("TORCH_CUDA_GRAPHS")
    nf.env().set("TORCH_CUDA_GRAPHS", False)
    model = load_graph_model(str(fixture("basic")))
    try:
        results = []
        for v in x_values:
            x = nf.tensor(v)
            results.append(_run(model, x))
            x.dispose()
        return results
    finally:
        model.dispose()
        nf.env().set("TORCH_CUDA_GRAPHS", before)


def _inputs(n: int, rows: int = 1) -> list[np.ndarray]:
    base = expected_inputs("basic")["x"]
    x = base.numpy()
    base.dispose()
    return [np.tile(x, (rows, 1)) * (k + 1) - k for k in range(n)]


def test_warm_up_capture_then_replay_with_eager_outputs(faked):
    values = _inputs(4)
    want = _eager(values)
    model = load_graph_model(str(fixture("basic")))
    try:
        got = []
        for v in values:
            x = nf.tensor(v)
            got.append(_run(model, x))
            x.dispose()
        runner = _runner(model)
        assert runner is not None and runner.captures == 1
        assert len(FakeGraph.made) == 1 and FakeGraph.made[0].replays == 3  # calls 2 (after capture), 3, 4
        for g, w in zip(got, want, strict=True):
            for a, b in zip(g, w, strict=True):
                np.testing.assert_array_equal(a, b)
        assert nf.memory().num_bytes_in_cuda_graphs > 0
    finally:
        model.dispose()
    assert FakeGraph.made[0].was_reset and cuda_graph.graph_bytes(nf.backend()) == 0
    assert _runner_after_dispose(model) is None


def _runner_after_dispose(model):
    return next((p.device_graph for p in model.executor._programs.values() if p.device_graph), None)


def test_a_new_shape_warms_up_and_captures_its_own_graph(faked):
    model = load_graph_model(str(fixture("basic")))
    try:
        one, three = _inputs(2), _inputs(3, rows=3)
        want = _eager(one + three)
        got = []
        for v in one + three:
            x = nf.tensor(v)
            got.append(_run(model, x))
            x.dispose()
        assert _runner(model).captures == 2
        for g, w in zip(got, want, strict=True):
            for a, b in zip(g, w, strict=True):
                np.testing.assert_array_equal(a, b)
    finally:
        model.dispose()


def test_outputs_are_independent_of_later_calls(faked):
    model = load_graph_model(str(fixture("basic")))
    values = _inputs(4)
    want = _eager(values)
    xs = [nf.tensor(v) for v in values]
    try:
        nf.dispose(model.execute({"x": xs[0]}))  # warm-up
        nf.dispose(model.execute({"x": xs[0]}))  # capture
        kept = model.execute({"x": xs[1]})
        nf.dispose(model.execute({"x": xs[2]}))
        later = model.execute({"x": xs[3]})
        for a, b in zip(kept, want[1], strict=True):
            np.testing.assert_array_equal(a.numpy(), b)
        for a, b in zip(later, want[3], strict=True):
            np.testing.assert_array_equal(a.numpy(), b)
        nf.dispose(kept)
        nf.dispose(later)
    finally:
        nf.dispose(xs)
        model.dispose()


def test_the_first_calls_outputs_survive(faked):
    model = load_graph_model(str(fixture("basic")))
    x = nf.tensor(_inputs(1)[0])
    try:
        first = model.execute({"x": x})
        second = model.execute({"x": x})
        for a, b in zip(first, second, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        nf.dispose(first + second)
    finally:
        x.dispose()
        model.dispose()


def test_a_failed_capture_runs_eagerly_and_gives_up(faked, monkeypatch):
    attempts = []

    def failing(graph, body):
        attempts.append(graph)
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    monkeypatch.setattr(cuda_graph, "capture", failing)
    values = _inputs(5)
    want = _eager(values)
    model = load_graph_model(str(fixture("basic")))
    try:
        for v, w in zip(values, want, strict=True):
            x = nf.tensor(v)
            got = _run(model, x)
            x.dispose()
            for a, b in zip(got, w, strict=True):
                np.testing.assert_array_equal(a, b)
        assert len(attempts) == cuda_graph.MAX_FAILURES and _runner(model).captures == 0
    finally:
        model.dispose()


def test_a_host_read_during_capture_refuses_it(faked, monkeypatch):
    def reading(graph, body):
        nf.backend().read_sync(1)  # as a kernel calling .cpu() would: torch raises on CUDA
        return body()

    monkeypatch.setattr(cuda_graph, "capture", reading)
    model = load_graph_model(str(fixture("basic")))
    x = nf.tensor(_inputs(1)[0])
    try:
        for _ in range(3):
            nf.dispose(model.execute({"x": x}))
        assert _runner(model).captures == 0
    finally:
        x.dispose()
        model.dispose()


def test_flag_off_never_captures(faked):
    nf.env().set("TORCH_CUDA_GRAPHS", False)
    model = load_graph_model(str(fixture("basic")))
    x = nf.tensor(_inputs(1)[0])
    try:
        for _ in range(3):
            nf.dispose(model.execute({"x": x}))
        assert FakeGraph.made == []
    finally:
        x.dispose()
        model.dispose()


def test_a_dynamic_model_never_captures(faked):
    model = load_graph_model(str(fixture("dynamic")))
    inputs = expected_inputs("dynamic")
    try:
        for _ in range(3):
            nf.dispose(asyncio.run(model.execute_async(inputs)))
        assert FakeGraph.made == []
    finally:
        nf.dispose(list(inputs.values()))
        model.dispose()


def test_other_backends_have_no_graph_capture():
    assert nf.backend().graph_capture(None) is None or nf.get_backend() == "torch"
