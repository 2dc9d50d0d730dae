"""``execute_async``'s plan: the static part (no dynamic op and no missing input leads to it) runs as a
compiled program, the rest is scheduled from the static tensors it reads.

Expected values are computed with numpy; the plan's split (static nodes, exports, seeds) is checked
directly, and every test runs under the leak check of ``conftest.py``."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import const, load, node, placeholder

import ndflow as nf

F = {"T": {"type": "DT_FLOAT"}}
W = np.array([1.0, -2.0, 3.0, -4.0, 5.0, 0.5], np.float32)
X = np.array([2.0, 1.0, -1.0, -3.0, 0.0, 4.0], np.float32)


def _detector_like() -> list[dict]:
    """A static chain (Mul, Neg, Relu) feeding a dynamic op (Where) and a node after it (GatherNd) that
    reads a static tensor; ``scaled`` is also an output; ``unused`` is not needed."""
    return [
        placeholder("x", [6]),
        const("w"),
        node("scaled", "Mul", ["x", "w"], **F),
        node("flipped", "Neg", ["scaled"], **F),
        node("positive", "Relu", ["flipped"], **F),
        node("unused", "Exp", ["positive"], **F),
        node("where", "Where", ["positive"], T={"type": "DT_FLOAT"}),
        node("picked", "GatherNd", ["positive", "where"], Tparams={"type": "DT_FLOAT"}, Tindices={"type": "DT_INT32"}),
    ]


def _run(model, feeds: dict, outputs: list[str]) -> list[nf.Tensor]:
    out = asyncio.run(model.execute_async(feeds, outputs))
    return out if isinstance(out, list) else [out]


def test_static_part_runs_first_and_feeds_the_dynamic_part(backend):
    model = load(_detector_like(), {"w": W})
    x = nf.tensor(X)
    try:
        outs = _run(model, {"x": x}, ["picked", "scaled"])
        positive = np.maximum(-(X * W), 0)
        np.testing.assert_allclose(outs[0].numpy(), positive[positive != 0], rtol=1e-6)
        np.testing.assert_allclose(outs[1].numpy(), X * W, rtol=1e-6)
        executor = model.executor
        plan = executor.async_plan_for(["x"], ["picked", "scaled"])
        assert plan.static == {"scaled", "flipped", "positive"}
        assert set(plan.exports) == {"scaled", "positive"}  # an output, and what Where/GatherNd read
        assert "flipped" not in plan.seeds and "w" not in plan.seeds  # nothing left to start there
        nf.dispose(outs)
        again = _run(model, {"x": x}, ["picked", "scaled"])  # the cached plan, again
        assert executor.async_plan_for(["x"], ["scaled", "picked"]) is plan
        np.testing.assert_allclose(again[0].numpy(), positive[positive != 0], rtol=1e-6)
        nf.dispose(again)
    finally:
        x.dispose()
        model.dispose()


def test_static_intermediates_are_freed_during_the_run():
    model = load(_detector_like(), {"w": W})
    x = nf.tensor(X)
    base = nf.memory().num_tensors
    try:
        seen: list[int] = []
        original = model.executor.async_plan_for(["x"], ["picked"])
        program = original.program
        assert program is not None
        run_exports = program.run_exports

        def spy(*args, **kw):
            found = run_exports(*args, **kw)
            seen.append(nf.memory().num_tensors - base)
            return found

        program.run_exports = spy
        (picked,) = _run(model, {"x": x}, ["picked"])
        assert seen == [1]  # only 'positive' (read by Where and GatherNd) is alive after the static part
        picked.dispose()
        assert nf.memory().num_tensors == base
    finally:
        x.dispose()
        model.dispose()


def test_an_error_in_the_static_part_names_the_node_and_leaks_nothing():
    nodes = [
        placeholder("x", [2, 3]),
        const("m"),
        node("product", "MatMul", ["x", "m"], transpose_a={"b": False}, transpose_b={"b": False}, **F),
        node("where", "Where", ["product"], T={"type": "DT_FLOAT"}),
    ]
    model = load(nodes, {"m": np.ones((4, 2), np.float32)})
    x = nf.tensor(np.ones((2, 3), np.float32))
    try:
        with pytest.raises(ValueError, match="graph model node 'product' \\(MatMul\\)"):
            asyncio.run(model.execute_async({"x": x}, "where"))
    finally:
        x.dispose()
        model.dispose()


def test_a_missing_input_keeps_its_consumers_out_of_the_static_part():
    nodes = [
        placeholder("x", [6]),
        placeholder("y", [6]),
        const("w"),
        node("scaled", "Mul", ["x", "w"], **F),
        node("both", "Add", ["scaled", "y"], **F),
        node("where", "Where", ["both"], T={"type": "DT_FLOAT"}),
    ]
    model = load(nodes, {"w": W})
    x = nf.tensor(X)
    try:
        plan = model.executor.async_plan_for(["x"], ["where"])
        assert plan.static == {"scaled"}
        with pytest.raises(ValueError, match="Cannot compute the outputs"):
            asyncio.run(model.execute_async({"x": x}, "where"))
    finally:
        x.dispose()
        model.dispose()


def test_an_intermediate_fed_as_input_is_not_recomputed():
    model = load(_detector_like(), {"w": W})
    given = nf.tensor(np.array([0.0, 2.0, 0.0, 5.0, 1.0, 0.0], np.float32))
    try:
        plan = model.executor.async_plan_for(["positive"], ["picked"])
        assert plan.static == frozenset() and plan.program is None
        (picked,) = _run(model, {"positive": given}, ["picked"])
        np.testing.assert_allclose(picked.numpy(), [2.0, 5.0, 1.0])
        picked.dispose()
    finally:
        given.dispose()
        model.dispose()


def test_a_merge_fed_by_a_weight_runs_from_the_start():
    """A Merge is ready when one input is: a weight input makes it ready before anything ran (as TF.js,
    whose stack starts with the weights)."""
    nodes = [
        placeholder("x", [6]),
        placeholder("pred", [], "DT_BOOL"),
        const("w"),
        node("switch", "Switch", ["x", "pred"], **F),
        node("neg", "Neg", ["switch:1"], **F),
        node("merge", "Merge", ["w", "neg"], N={"i": "2"}, **F),
    ]
    model = load(nodes, {"w": W})
    x, pred = nf.tensor(X), nf.tensor(True)
    try:
        plan = model.executor.async_plan_for(["x", "pred"], ["merge"])
        assert "w" in plan.seeds
        (merged,) = _run(model, {"x": x, "pred": pred}, ["merge"])
        np.testing.assert_allclose(merged.numpy(), W)
        merged.dispose()
    finally:
        x.dispose()
        pred.dispose()
        model.dispose()
