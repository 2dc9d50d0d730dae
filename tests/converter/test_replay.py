"""Replay of recorded kernel calls in compiled programs (``converter/runtime/replay.py``): a node that ran as one
kernel call on its own inputs repeats that call while its inputs keep their shapes and dtypes. Every run
is compared, bit for bit, with the mapper path (replay off), and expected values come from numpy."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import const, load, node, placeholder

import ndflow as nf
from ndflow.converter.load import registry
from ndflow.converter.runtime.replay import recordable
from ndflow.core.engine import ENGINE

F = {"T": {"type": "DT_FLOAT"}}
I32 = {"T": {"type": "DT_INT32"}}
W = np.array([1.0, -2.0, 3.0], np.float32)


def _graph() -> list[dict]:
    """y = relu(x * w + w) (weights), then a reshape to [-1] whose target is computed from x's shape."""
    return [
        placeholder("x", [-1, 3]),
        const("w"),
        const("minus_one", "DT_INT32"),
        node("mul", "Mul", ["x", "w"], **F),
        node("add", "AddV2", ["mul", "w"], **F),
        node("relu", "Relu", ["add"], **F),
        node("shape", "Shape", ["relu"], T=F["T"], out_type={"type": "DT_INT32"}),
        node("size", "Prod", ["shape", "zero"], T=I32["T"], Tidx={"type": "DT_INT32"}, keep_dims={"b": False}),
        const("zero", "DT_INT32"),
        node("target", "Pack", ["size"], N={"i": "1"}, **I32, axis={"i": "0"}),
        node("flat", "Reshape", ["relu", "target"], **F, Tshape={"type": "DT_INT32"}),
    ]


def _weights() -> dict:
    return {"w": W, "minus_one": np.array([-1], np.int32), "zero": np.array(0, np.int32)}


def _steps(model) -> dict[str, object]:
    """Each step's kept call (None: not run yet), by node name, over the executor's compiled programs."""
    found = {}
    for program in model.executor._programs.values():
        for step, call in zip(program.steps, program.calls, strict=True):
            found[step[1].name] = call
    return found


def _run(model, x: np.ndarray) -> np.ndarray:
    t = nf.tensor(x)
    try:
        out = model.execute({"x": t}, "flat")
        value = out.numpy()
        out.dispose()
        return value
    finally:
        t.dispose()


def _expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x * W + W, 0).reshape(-1)


def test_single_call_nodes_replay_and_computed_reads_do_not(backend):
    model = load(_graph(), _weights())
    try:
        rng = np.random.default_rng(0)
        for rows in (2, 2, 5, 5, 2):
            x = rng.standard_normal((rows, 3)).astype(np.float32)
            np.testing.assert_array_equal(_run(model, x), _expected(x))
        calls = _steps(model)
        for name in ("mul", "add", "relu"):
            assert calls[name][1] is not None, name  # one kernel call on the node's own inputs
        assert calls["shape"][1] is None  # its tensor is made from the shape, not by a kernel
        assert calls["relu"][0] == (((2, 3), "float32"),)  # the last signature seen
        # what a later run compares: the inputs that may change, not the weight
        (check,) = calls["mul"][4]
        assert check[2:] == ((2, 3), "float32")
        assert len(calls["mul"][5]) == 2  # the kernel's inputs, as (slot, output index)
        # 'target' is computed from relu's shape only (shape_cache.py): for one input shape it is a constant
        assert calls["flat"][1] == "Reshape"
    finally:
        model.dispose()


def test_a_read_of_a_computed_value_keeps_the_mapper(backend):
    """Reshape's target fed as an input: its values decide the kernel's attributes, so the mapper runs."""
    nodes = [
        placeholder("x", [-1, 3]),
        placeholder("target", [1], "DT_INT32"),
        node("relu", "Relu", ["x"], **F),
        node("flat", "Reshape", ["relu", "target"], **F, Tshape={"type": "DT_INT32"}),
    ]
    model = load(nodes)
    x = nf.tensor(np.array([[1.0, -2.0, 3.0]], np.float32))
    try:
        for size in (-1, 3, -1):
            target = nf.tensor(np.array([size], np.int32))
            out = model.execute({"x": x, "target": target}, "flat")
            np.testing.assert_array_equal(out.numpy(), [1.0, 0.0, 3.0])
            nf.dispose([out, target])
        assert _steps(model)["flat"][1] is None
    finally:
        x.dispose()
        model.dispose()


def test_replay_matches_the_mapper_path_bit_for_bit(backend):
    model = load(_graph(), _weights())
    try:
        x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
        first = _run(model, x)  # records
        replayed = _run(model, x)
        programs = list(model.executor._programs.values())
        for p in programs:
            p.replayable = [False] * len(p.steps)
        mapped = _run(model, x)
        np.testing.assert_array_equal(replayed, first)
        np.testing.assert_array_equal(replayed, mapped)
    finally:
        model.dispose()


def test_profile_and_tapes_take_the_mapper_path():
    model = load(_graph(), _weights())
    x = nf.tensor(np.ones((2, 3), np.float32))
    try:
        nf.dispose(model.execute({"x": x}, "flat"))
        nf.dispose(model.execute({"x": x}, "flat"))  # replayed from here on
        info = nf.profile(lambda: model.execute({"x": x}, "flat"))
        nf.dispose(info.result)
        assert [k.name for k in info.kernels][:3] == ["Multiply", "Add", "Relu"]
        grad = nf.grad(lambda t: nf.sum(model.execute({"x": t}, "flat")))(x)
        np.testing.assert_allclose(grad.numpy(), np.tile((W > 0) * W, (2, 1)))  # relu'(w + w) * w
        grad.dispose()
    finally:
        x.dispose()
        model.dispose()


def test_a_node_of_two_kernel_calls_keeps_its_mapper(monkeypatch):
    def two_calls(node, inputs, ctx):
        return nf.add(nf.neg(inputs[0]), inputs[0])

    monkeypatch.setitem(registry._MAPPERS, "_TestTwoCalls", two_calls)
    nodes = [placeholder("x", [3]), node("two", "_TestTwoCalls", ["x"], **F), node("out", "Exp", ["two"], **F)]
    model = load(nodes)
    x = nf.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    try:
        for _ in range(2):
            out = model.execute({"x": x}, "out")
            np.testing.assert_array_equal(out.numpy(), np.ones(3, np.float32))
            out.dispose()
        calls = _steps(model)
        assert calls["two"][1] is None and calls["out"][1] == "Exp"
    finally:
        x.dispose()
        model.dispose()


def test_an_island_replays_too():
    """Islands are compiled programs: their steps record and replay as well."""
    nodes = [
        placeholder("x", [6]),
        placeholder("pred", [], "DT_BOOL"),
        const("w"),
        node("switch", "Switch", ["x", "pred"], **F),
        node("a", "Mul", ["switch:1", "w"], **F),
        node("b", "Sub", ["a", "w"], **F),
        node("c", "Neg", ["b"], **F),
        node("d", "Relu", ["c"], **F),
    ]
    w = np.arange(6, dtype=np.float32) - 2
    model = load(nodes, {"w": w})
    x, pred = nf.tensor(np.ones(6, np.float32)), nf.tensor(True)
    try:
        for _ in range(2):
            out = asyncio.run(model.execute_async({"x": x, "pred": pred}, "d"))
            np.testing.assert_array_equal(out.numpy(), np.maximum(-(w - w), 0))
            out.dispose()
        (island,) = model.executor.async_plan_for(["x", "pred"], ["d"]).islands.values()
        assert [c[1] for c in island.program.calls] == ["Multiply", "Sub", "Neg", "Relu"]
    finally:
        nf.dispose([x, pred])
        model.dispose()


def test_record_calls_lists_calls_and_reads_and_restores_the_fast_path():
    a = nf.tensor(np.array([1.0, 2.0], np.float32))
    try:
        calls = ENGINE.record_calls()
        try:
            assert ENGINE._slow
            b = nf.add(a, a)
            a.data_sync()
        finally:
            ENGINE.stop_recording()
        assert not ENGINE._slow
        assert [(c[0], c[1]) for c in calls] == [("Add", (a, a)), ("", a)]
        assert calls[0][3] is b
        b.dispose()
    finally:
        a.dispose()


@pytest.mark.parametrize(
    ("op", "replay"),
    [("Conv2D", True), ("AddV2", True), ("RandomUniform", False), ("TensorListGetItem", False),
     ("Switch", False), ("NonMaxSuppressionV3", False), ("HashTableV2", False), ("AssignVariableOp", False)],
)  # fmt: skip
def test_recordable_ops(op, replay):
    assert recordable(op) is replay


def test_multi_output_kernels_replay(backend):
    """A replayed kernel of several outputs (Unpack) settles them as the mapper path does."""
    nodes = [
        placeholder("x", [2, 3]),
        node("parts", "Unpack", ["x"], **F, num={"i": 2}, axis={"i": 0}),
        node("sum", "AddV2", ["parts", "parts:1"], **F),
    ]
    model = load(nodes)
    try:
        rng = np.random.default_rng(3)
        for _ in range(3):
            x = rng.standard_normal((2, 3)).astype(np.float32)
            t = nf.tensor(x)
            out = model.execute({"x": t}, "sum")
            np.testing.assert_array_equal(out.numpy(), x[0] + x[1])
            nf.dispose([out, t])
        assert _steps(model)["parts"][1] == "Unpack"
    finally:
        model.dispose()
