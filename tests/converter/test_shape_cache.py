"""Shape-only steps of compiled programs (``converter/runtime/shape_cache.py``): computed on a program's first run
for an input shape, skipped on later runs, recomputed when a source step sees a new shape. Every result is
compared with numpy, and with the same program run without the cache."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import const, load, node, placeholder

import ndflow as nf
from ndflow.converter.runtime import shape_cache
from ndflow.converter.runtime.shape_cache import ShapeCache

F = {"T": {"type": "DT_FLOAT"}}
I32 = {"T": {"type": "DT_INT32"}}
CAST = {"SrcT": {"type": "DT_INT32"}, "DstT": {"type": "DT_FLOAT"}}


def _graph(extra: list[dict] | None = None) -> list[dict]:
    """y = x + arange(x.size).reshape(x.shape): the grid is made from x's shape only."""
    return [
        placeholder("x", [-1, -1]),
        const("zero", "DT_INT32"),
        const("one", "DT_INT32"),
        node("shape", "Shape", ["x"], T=F["T"], out_type={"type": "DT_INT32"}),
        node("size", "Prod", ["shape", "zero"], **I32, Tidx={"type": "DT_INT32"}, keep_dims={"b": False}),
        node("range", "Range", ["zero", "size", "one"], Tidx={"type": "DT_INT32"}),
        node("range_f", "Cast", ["range"], **CAST),
        node("grid", "Reshape", ["range_f", "shape"], **F, Tshape={"type": "DT_INT32"}),
        node("y", "AddV2", ["x", "grid"], **F),
        *(extra or []),
    ]


def _weights() -> dict:
    return {"zero": np.array(0, np.int32), "one": np.array(1, np.int32)}


def _expected(x: np.ndarray) -> np.ndarray:
    return x + np.arange(x.size, dtype=np.float32).reshape(x.shape)


def _program(model):
    (program,) = model.executor._programs.values()
    return program


def _run(model, x: np.ndarray, outputs: str | list[str] = "y") -> list[np.ndarray]:
    t = nf.tensor(x)
    try:
        outs = model.execute({"x": t}, outputs)
        outs = outs if isinstance(outs, list) else [outs]
        values = [o.numpy() for o in outs]
        nf.dispose(outs)
        return values
    finally:
        t.dispose()


def _kernels(model, x: np.ndarray) -> list[str]:
    t = nf.tensor(x)
    try:
        info = nf.profile(lambda: model.execute({"x": t}, "y"))
        nf.dispose(info.result)
        return [k.name for k in info.kernels]
    finally:
        t.dispose()


def test_shape_only_steps_are_found():
    model = load(_graph(), _weights())
    try:
        _run(model, np.ones((2, 3), np.float32))
        program = _program(model)
        names = [step[1].name for step in program.steps]
        cache = program.shapes
        flags = {n: f for n, *f in zip(names, cache.pure, cache.source, cache.frontier, strict=True)}
        assert flags["shape"] == [True, True, False]  # reads x (computed); only shape-only steps read it
        assert flags["size"] == [True, False, False]
        assert flags["range"] == [True, False, False]
        assert flags["grid"] == [True, False, True]  # read by 'y'
        assert flags["y"] == [False, False, False]
    finally:
        model.dispose()


def test_later_runs_skip_shape_only_steps_and_shape_changes_recompute(backend):
    model = load(_graph(), _weights())
    try:
        rng = np.random.default_rng(0)
        for shape in [(2, 3), (2, 3), (2, 3), (4, 1), (4, 1), (2, 3), (1, 7), (1, 7)]:
            x = rng.standard_normal(shape).astype(np.float32)
            (y,) = _run(model, x)
            np.testing.assert_array_equal(y, _expected(x))
        x = np.ones((1, 7), np.float32)
        assert _kernels(model, x) == ["Add"]  # Shape, Prod, Range, Cast and Reshape are not run
        assert _kernels(model, np.ones((3, 2), np.float32)).count("Range") == 1  # a new shape: recomputed
        assert _kernels(model, np.ones((3, 2), np.float32)) == ["Add"]
    finally:
        model.dispose()


def test_cached_runs_equal_runs_without_the_cache(backend):
    model = load(_graph(), _weights())
    try:
        x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
        first, cached = _run(model, x)[0], _run(model, x)[0]
        program = _program(model)
        program.shapes = None
        uncached = _run(model, x)[0]
        np.testing.assert_array_equal(cached, first)
        np.testing.assert_array_equal(cached, uncached)
    finally:
        model.dispose()


def test_no_tensor_is_held_between_runs():
    model = load(_graph(), _weights())
    try:
        before = nf.memory().num_tensors
        for shape in [(2, 3), (2, 3), (3, 3)]:
            _run(model, np.ones(shape, np.float32))
            assert nf.memory().num_tensors == before
    finally:
        model.dispose()


def test_a_shape_only_output_is_a_new_tensor_each_run():
    model = load(_graph(), _weights())
    try:
        x = np.ones((2, 3), np.float32)
        for _ in range(3):
            y, shape = _run(model, x, ["y", "shape"])
            np.testing.assert_array_equal(shape, [2, 3])
            np.testing.assert_array_equal(y, _expected(x))
        t = nf.tensor(np.ones((5, 1), np.float32))
        shape = model.execute({"x": t}, "shape")
        try:
            np.testing.assert_array_equal(shape.numpy(), [5, 1])
        finally:
            nf.dispose([shape, t])
    finally:
        model.dispose()


def test_an_error_while_recording_leaves_no_cache():
    """Reshape to [2, -1] fails on 3x3 after the shape-only steps ran: the next runs record again."""
    extra = [const("two_rows", "DT_INT32"), node("pairs", "Reshape", ["y", "two_rows"], **F, Tshape=I32["T"])]
    model = load(_graph(extra), {**_weights(), "two_rows": np.array([2, -1], np.int32)})
    try:
        x = np.ones((2, 3), np.float32)
        np.testing.assert_array_equal(_run(model, x, "pairs")[0], _expected(x).reshape(2, -1))
        with pytest.raises(ValueError, match="pairs"):
            _run(model, np.ones((3, 3), np.float32), "pairs")
        assert not _program(model).shapes.ready
        for shape in [(2, 3), (2, 3), (4, 3)]:
            x = np.full(shape, 2.0, np.float32)
            np.testing.assert_array_equal(_run(model, x, "pairs")[0], _expected(x).reshape(2, -1))
    finally:
        model.dispose()


def test_a_large_value_turns_the_cache_off(monkeypatch):
    monkeypatch.setattr(shape_cache, "MAX_CACHED_ELEMENTS", 5)
    model = load(_graph(), _weights())
    try:
        for shape in [(2, 3), (2, 3), (1, 2)]:
            x = np.ones(shape, np.float32)
            np.testing.assert_array_equal(_run(model, x)[0], _expected(x))
        assert _program(model).shapes is None
        assert "Range" in _kernels(model, np.ones((2, 3), np.float32))
    finally:
        model.dispose()


def test_programs_with_random_or_stateful_steps_get_no_cache():
    build = ShapeCache.build
    assert build(["Shape", "Relu"], [((0, 0),), ((1, 0),)], [1, 2], set(), set()) is not None
    assert build(["Shape", "RandomUniform"], [((0, 0),), ((1, 0),)], [1, 2], set(), set()) is None
    assert build(["Relu", "Neg"], [((0, 0),), ((1, 0),)], [1, 2], set(), set()) is None  # nothing shape-only


def test_the_static_part_of_an_async_model_caches_too():
    """Where's output has a data-dependent shape: the nodes after it are scheduled, the grid is static."""
    extra = [
        node("where", "Where", ["x"], **F),
        node("count", "Shape", ["where"], T={"type": "DT_INT64"}, out_type={"type": "DT_INT32"}),
    ]
    model = load(_graph(extra), _weights())
    try:
        for shape in [(2, 3), (2, 3), (3, 1)]:
            x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
            t = nf.tensor(x)
            try:
                y, count = asyncio.run(model.execute_async({"x": t}, ["y", "count"]))
                np.testing.assert_array_equal(y.numpy(), _expected(x))
                np.testing.assert_array_equal(count.numpy(), [x.size - 1, 2])
                nf.dispose([y, count])
            finally:
                t.dispose()
        program = model.executor.async_plan_for(["x"], ["y", "count"]).program
        assert program.shapes is not None and program.shapes.ready
    finally:
        model.dispose()
