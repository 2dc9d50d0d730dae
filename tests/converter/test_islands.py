"""``execute_async``'s islands: plain nodes after a dynamic op, run as one compiled program per group.

Every run is compared with the node-by-node schedule (``islands.ENABLED`` off) and, for the hand-built
fixtures, with TF.js; the groups themselves are checked on small graphs whose structure is known (a TF1
cond's branches, what comes after its Merge, a Merge whose condition is unknown). Every test runs under
the leak check of ``conftest.py``."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import check_outputs, const, expected, expected_inputs, fixture, load, node, placeholder

import ndflow as nf
from ndflow.converter import load_graph_model
from ndflow.converter.runtime import islands

F = {"T": {"type": "DT_FLOAT"}}
X = np.array([2.0, 1.0, -1.0, -3.0, 0.0, 4.0], np.float32)
W = np.array([1.0, -2.0, 3.0, -4.0, 5.0, 0.5], np.float32)


def _run(model, feeds: dict, outputs: list[str]) -> list[np.ndarray]:
    out = asyncio.run(model.execute_async(feeds, outputs))
    outs = out if isinstance(out, list) else [out]
    values = [t.numpy() for t in outs]
    nf.dispose(outs)
    return values


def _both_ways(model, feeds: dict, outputs: list[str], monkeypatch) -> list[np.ndarray]:
    """The outputs with islands, after checking they equal the node-by-node schedule's, bit for bit."""
    executor = model.executor
    monkeypatch.setattr(islands, "ENABLED", False)
    executor._async_plans.clear()
    reference = _run(model, feeds, outputs)
    monkeypatch.setattr(islands, "ENABLED", True)
    executor._async_plans.clear()
    got = _run(model, feeds, outputs)
    for a, b in zip(got, reference, strict=True):
        np.testing.assert_array_equal(a, b)
    return got


def _chain(prefix: str, source: str) -> list[dict]:
    """Four plain nodes after ``source``: ((source * w) - w) -> Neg -> Relu."""
    return [
        node(f"{prefix}/mul", "Mul", [source, "w"], **F),
        node(f"{prefix}/sub", "Sub", [f"{prefix}/mul", "w"], **F),
        node(f"{prefix}/neg", "Neg", [f"{prefix}/sub"], **F),
        node(f"{prefix}/relu", "Relu", [f"{prefix}/neg"], **F),
    ]


def _chain_np(x: np.ndarray) -> np.ndarray:
    return np.maximum(-(x * W - W), 0)


def _cond_graph(merge_inputs: tuple[str, str] = ("then/relu", "else/relu"), one_switch: bool = False) -> list[dict]:
    """A TF1 cond (one Switch per branch input, one predicate; or one Switch for both), four nodes in each
    branch, a Merge, four nodes after it."""
    if one_switch:  # both branches read the same Switch: only the condition tells them apart
        return [
            placeholder("x", [6]),
            placeholder("pred", [], "DT_BOOL"),
            const("w"),
            node("pre", "Abs", ["x"], **F),
            node("switch_a", "Switch", ["pre", "pred"], **F),
            *_chain("then", "switch_a:1"),
            *_chain("else", "switch_a"),
            node("merge", "Merge", list(merge_inputs), N={"i": "2"}, **F),
            *_chain("after", "merge"),
        ]
    return [
        placeholder("x", [6]),
        placeholder("pred", [], "DT_BOOL"),
        const("w"),
        node("pre", "Abs", ["x"], **F),
        node("switch_a", "Switch", ["pre", "pred"], **F),
        node("switch_b", "Switch", ["x", "pred"], **F),
        *_chain("then", "switch_a:1"),
        *_chain("else", "switch_b"),
        node("merge", "Merge", list(merge_inputs), N={"i": "2"}, **F),
        *_chain("after", "merge"),
    ]


@pytest.mark.parametrize("one_switch", [False, True])
@pytest.mark.parametrize("taken", [True, False])
def test_cond_branches_and_what_follows_are_islands(taken, one_switch, monkeypatch):
    model = load(_cond_graph(one_switch=one_switch), {"w": W})
    x, pred = nf.tensor(X), nf.tensor(taken)
    try:
        (out,) = _both_ways(model, {"x": x, "pred": pred}, ["after/relu"], monkeypatch)
        branch = _chain_np(np.abs(X)) if taken or one_switch else _chain_np(X)
        np.testing.assert_allclose(out, _chain_np(branch), rtol=1e-6)
        plan = model.executor.async_plan_for(["x", "pred"], ["after/relu"])
        groups = sorted(sorted(i.members) for i in plan.islands.values())
        assert groups == sorted(sorted(n["name"] for n in _chain(p, "")) for p in ("then", "else", "after"))
        assert plan.static == {"pre"}
    finally:
        nf.dispose([x, pred])
        model.dispose()


def test_nodes_after_a_merge_of_unknown_condition_stay_scheduled(monkeypatch):
    """A Merge of one branch and a node outside the cond may not run: nothing after it joins an island."""
    model = load(_cond_graph(("then/relu", "pre")), {"w": W})
    x, pred = nf.tensor(X), nf.tensor(False)
    try:
        (out,) = _both_ways(model, {"x": x, "pred": pred}, ["after/relu"], monkeypatch)
        np.testing.assert_allclose(out, _chain_np(np.abs(X)), rtol=1e-6)  # the Merge took 'pre'
        plan = model.executor.async_plan_for(["x", "pred"], ["after/relu"])
        members = {m for i in plan.islands.values() for m in i.members}
        assert members == {n["name"] for n in _chain("then", "")}  # 'else' is unused; 'after' unknown
    finally:
        nf.dispose([x, pred])
        model.dispose()


def test_small_groups_stay_scheduled(monkeypatch):
    model = load(_cond_graph(), {"w": W})
    monkeypatch.setattr(islands, "MIN_MEMBERS", 5)
    try:
        assert model.executor.async_plan_for(["x", "pred"], ["after/relu"]).islands == {}
    finally:
        model.dispose()


def test_an_island_export_read_by_a_dynamic_op_and_returned(monkeypatch):
    monkeypatch.setattr(islands, "MIN_MEMBERS", 3)  # 'after/relu' is not used here
    nodes = [
        *_cond_graph(),
        node("where", "Where", ["after/neg"], T={"type": "DT_FLOAT"}),
        node("picked", "GatherNd", ["after/sub", "where"], Tparams=F["T"], Tindices={"type": "DT_INT32"}),
    ]
    model = load(nodes, {"w": W})
    x, pred = nf.tensor(X), nf.tensor(True)
    try:
        picked, neg = _both_ways(model, {"x": x, "pred": pred}, ["picked", "after/neg"], monkeypatch)
        sub = _chain_np(np.abs(X)) * W - W
        np.testing.assert_allclose(neg, -sub, rtol=1e-6)
        np.testing.assert_allclose(picked, sub[-sub != 0], rtol=1e-6)
        plan = model.executor.async_plan_for(["x", "pred"], ["picked", "after/neg"])
        (after,) = [i for i in plan.islands.values() if "after/mul" in i.members]
        assert set(after.exports) == {"after/sub", "after/neg"}  # read by GatherNd / Where, and returned
    finally:
        nf.dispose([x, pred])
        model.dispose()


def test_an_error_inside_an_island_names_the_node_and_leaks_nothing():
    nodes = [
        placeholder("x", [6]),
        placeholder("pred", [], "DT_BOOL"),
        const("w"),
        const("m"),
        node("switch", "Switch", ["x", "pred"], **F),
        *_chain("then", "switch:1"),
        node("bad", "MatMul", ["then/relu", "m"], transpose_a={"b": False}, transpose_b={"b": False}, **F),
    ]
    model = load(nodes, {"w": W, "m": np.ones((4, 2), np.float32)})
    x, pred = nf.tensor(X), nf.tensor(True)
    base = nf.memory().num_tensors
    try:
        assert model.executor.async_plan_for(["x", "pred"], ["bad"]).islands
        with pytest.raises(ValueError, match="graph model node 'bad' \\(MatMul\\)"):
            asyncio.run(model.execute_async({"x": x, "pred": pred}, "bad"))
        assert nf.memory().num_tensors == base
    finally:
        nf.dispose([x, pred])
        model.dispose()


@pytest.mark.parametrize("name", ["while_loop", "tensor_array", "tensor_list", "functions", "cond_v1", "dynamic"])
def test_fixture_models_match_tfjs_with_islands_of_any_size(name, monkeypatch):
    """The hand-built control-flow models (TF.js 4.22's outputs) with every group an island."""
    monkeypatch.setattr(islands, "MIN_MEMBERS", 1)
    model = load_graph_model(str(fixture(name)))
    feeds = expected_inputs(name)
    names = [o["name"] for o in expected(name)["outputs"]]
    try:
        out = asyncio.run(model.execute_async(feeds, names))
        check_outputs(name, out)
        nf.dispose(out)
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def test_some_fixture_models_get_islands(monkeypatch):
    """The parametrized test above does exercise islands: after the while loop, in the cond."""
    monkeypatch.setattr(islands, "MIN_MEMBERS", 1)
    found = {}
    for name in ("while_loop", "cond_v1"):
        model = load_graph_model(str(fixture(name)))
        try:
            executor = model.executor
            inputs = [r["name"] for r in expected(name)["inputs"]]
            plan = executor.async_plan_for(inputs, [o["name"] for o in expected(name)["outputs"]])
            found[name] = len(plan.islands)
        finally:
            model.dispose()
    assert all(found.values()), found
