"""A graph program's replayed steps in C (``_dispatch.run_steps``, ``core/dispatch/csrc/steps.c``): the plain replays
run there, every other step in Python (``Program._step``), with the same outputs, the same disposal and the
same errors as with compiled dispatch off."""

from __future__ import annotations

import numpy as np
import pytest
from gm_helpers import load, node, placeholder

import ndflow as nf
from ndflow.converter.runtime import program as program_module
from ndflow.core.dispatch import compiled
from ndflow.core.engine import ENGINE

F = {"T": {"type": "DT_FLOAT"}}
needs_c = pytest.mark.skipif(not compiled.available(), reason="compiled dispatch was not built")


def _graph() -> list[dict]:
    """Unpack (a list of two outputs), then element-wise ops whose inputs die at different steps."""
    return [
        placeholder("x", [2, -1]),
        node("parts", "Unpack", ["x"], **F, num={"i": 2}, axis={"i": 0}),
        node("sum", "AddV2", ["parts", "parts:1"], **F),
        node("prod", "Mul", ["sum", "parts:1"], **F),
        node("e", "Exp", ["prod"], **F),
        node("out", "Sub", ["e", "sum"], **F),
    ]


def _expected(x: np.ndarray) -> np.ndarray:
    s = x[0] + x[1]
    return np.exp(s * x[1]) - s


class _Steps:
    """Counts the steps that ``Program._step`` (Python) runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.python: list[str] = []
        original = program_module.Program._step

        def step(program, k, *args):
            self.python.append(program.steps[k][1].name)
            return original(program, k, *args)

        monkeypatch.setattr(program_module.Program, "_step", step)


def _run(model, x: np.ndarray, outputs=("out",)) -> list[np.ndarray]:
    t = nf.tensor(x)
    try:
        outs = model.execute({"x": t}, list(outputs))
        outs = outs if isinstance(outs, list) else [outs]  # one name: one tensor, as TF.js returns it
        values = [o.numpy() for o in outs]
        nf.dispose(outs)
        return values
    finally:
        t.dispose()


@needs_c
def test_replayed_steps_run_in_c_and_match_python(monkeypatch):
    nf.set_backend("cpu")
    model = load(_graph())
    steps = _Steps(monkeypatch)
    try:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((2, 4)).astype(np.float32)
        first = _run(model, x)[0]  # records every call (Python)
        assert steps.python == ["parts", "sum", "prod", "e", "out"]
        steps.python.clear()
        before = nf.memory()["num_tensors"]
        replayed = _run(model, x)[0]
        assert steps.python == []  # every step replayed in C, the Unpack's two outputs too
        assert nf.memory()["num_tensors"] == before  # every intermediate freed
        nf.env().set("C_DISPATCH", False)
        try:
            python = _run(model, x)[0]
        finally:
            nf.env().set("C_DISPATCH", True)
        np.testing.assert_array_equal(replayed, first)
        np.testing.assert_array_equal(replayed, python)
        np.testing.assert_allclose(replayed, _expected(x), rtol=1e-6)
        # another shape: the check fails in C, Python records again, and C replays from the next run
        y = rng.standard_normal((2, 3)).astype(np.float32)
        t = nf.tensor(y)
        out = model.execute({"x": t}, "out")
        np.testing.assert_allclose(out.numpy(), _expected(y), rtol=1e-6)
        nf.dispose([out, t])
        assert steps.python  # recorded again
    finally:
        model.dispose()


@needs_c
def test_requested_intermediates_are_not_freed(monkeypatch):
    nf.set_backend("cpu")
    model = load(_graph())
    try:
        x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
        for _ in range(3):
            out, s = _run(model, x, ("out", "sum"))
            np.testing.assert_allclose(s, x[0] + x[1], rtol=1e-6)
            np.testing.assert_allclose(out, _expected(x), rtol=1e-6)
    finally:
        model.dispose()


@pytest.fixture
def recorded(monkeypatch):
    """The graph loaded on cpu and run once (its calls recorded), a ones input, and the Python step counter."""
    nf.set_backend("cpu")
    model = load(_graph())
    steps = _Steps(monkeypatch)
    x = nf.tensor(np.ones((2, 4), np.float32))
    try:
        nf.dispose(model.execute({"x": x}, "out"))
        steps.python.clear()
        yield model, x, steps
    finally:
        x.dispose()
        model.dispose()


def _patch_kernel(monkeypatch, name: str, make) -> None:
    """Kernel ``name`` of the active backend replaced by ``make(original)``."""
    config = ENGINE._kernels[name]
    monkeypatch.setitem(ENGINE._kernels, name, (*config[:2], make(config[2]), *config[3:]))


@needs_c
def test_an_error_in_a_replayed_step_names_its_node(recorded, monkeypatch):
    model, x, _ = recorded

    def broken(original):
        def run(backend, inputs, attrs):
            raise ValueError("exp failed")

        return run

    _patch_kernel(monkeypatch, "Exp", broken)
    before = nf.memory()["num_tensors"]
    with pytest.raises(ValueError, match=r"graph model node 'e' \(Exp\): exp failed"):
        model.execute({"x": x}, "out")
    assert nf.memory()["num_tensors"] == before  # the scope freed what the run had made


@needs_c
def test_a_kernel_that_makes_an_extra_tensor_is_settled_in_python(recorded, monkeypatch):
    """Outputs that are not exactly the tensors the call made go back to Python, which frees the extra."""
    model, x, steps = recorded

    def and_more(original):
        def run(backend, inputs, attrs):
            ENGINE.make_tensor(np.zeros(3, np.float32), (3,), "float32")  # tracked by the run's scope
            return original(backend, inputs, attrs)

        return run

    _patch_kernel(monkeypatch, "Exp", and_more)
    before = nf.memory()["num_tensors"]
    out = model.execute({"x": x}, "out")
    np.testing.assert_allclose(out.numpy(), _expected(np.ones((2, 4), np.float32)), rtol=1e-6)
    out.dispose()
    assert steps.python == ["e"]
    assert nf.memory()["num_tensors"] == before


@needs_c
def test_profiling_leaves_the_c_loop(recorded):
    model, x, steps = recorded
    info = nf.profile(lambda: model.execute({"x": x}, "out"))
    nf.dispose(info.result)
    assert len(steps.python) == 5 and "Exp" in [k.name for k in info.kernels]


@needs_c
def test_bad_arguments_are_refused():
    from ndflow.core.dispatch import _dispatch

    with pytest.raises(TypeError, match="run_steps"):
        _dispatch.run_steps([], [], [], (), (), [], [], set(), 0, 0)
    with pytest.raises(TypeError, match="run_steps"):
        _dispatch.run_steps([], [], [], (), (), [], [], [], 0, 0, [0])  # keep_ids must be a set
    assert _dispatch.run_steps([], [], [], (), (), [], [], set(), 0, 0, [0]) == 0


@needs_c
def test_shape_only_steps_off_the_frontier_are_skipped_in_c(monkeypatch):
    """In a run on the shape cache, a shape-only step that only empties its slot (not a source, not on the
    frontier) runs in C; the source (Shape) and frontier (Pack: the Reshape's target) ones in Python."""
    from test_replay import _expected as shape_expected
    from test_replay import _graph as shape_graph
    from test_replay import _weights as shape_weights

    nf.set_backend("cpu")
    model = load(shape_graph(), shape_weights())
    steps = _Steps(monkeypatch)
    try:
        x = np.random.default_rng(5).standard_normal((3, 3)).astype(np.float32)
        for _ in range(3):  # records, then runs on the shape cache twice
            steps.python.clear()
            t = nf.tensor(x)
            out = model.execute({"x": t}, "flat")
            np.testing.assert_array_equal(out.numpy(), shape_expected(x))
            nf.dispose([out, t])
        (program,) = model.executor._programs.values()
        cache = program.shapes
        names = [step[1].name for step in program.steps]
        skipped = {names[k] for k, s in enumerate(cache.skippable) if s}
        assert skipped and not skipped & set(steps.python)  # none of them ran in Python
        assert set(steps.python) == {names[k] for k, p in enumerate(cache.pure) if p} - skipped
    finally:
        model.dispose()
