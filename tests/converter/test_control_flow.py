"""Control flow and dynamic ops: TF1 while loops (Enter/Merge/Switch/LoopCond/NextIteration/Exit),
TensorArray, TensorList, If/While with library functions, TF1 cond, NonMaxSuppression/Where/ListDiff,
hash tables filled by the model's ``modelInitializer`` graph.

Reference values: the hand-built models of ``tests/fixtures/graph_models`` run by TF.js 4.22."""

from __future__ import annotations

import asyncio

import pytest
from gm_helpers import check_outputs, expected, expected_inputs, fixture

import ndflow as nf
from ndflow.converter import load_graph_model
from ndflow.converter.runtime.control_flow import ExecutionContext
from ndflow.converter.runtime.tensor_array import TensorArray
from ndflow.converter.runtime.tensor_list import TensorList, from_tensor, reserve

ASYNC_MODELS = ["while_loop", "tensor_array", "tensor_list", "functions", "cond_v1", "dynamic", "initializer"]


def _run_async(name: str, outputs=None):
    model = load_graph_model(str(fixture(name)))
    feeds = expected_inputs(name)
    names = outputs or [o["name"] for o in expected(name)["outputs"]]
    try:
        return asyncio.run(model.execute_async(feeds, names))
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


@pytest.mark.parametrize("name", ASYNC_MODELS)
def test_matches_tfjs(name, backend):
    out = _run_async(name)
    check_outputs(name, out)
    nf.dispose(out)


@pytest.mark.parametrize(
    "name, nodes",
    [
        ("while_loop", ["while/Exit", "while/Switch", "while/Merge", "while/Enter"]),
        ("tensor_array", ["while/Exit_1"]),
        ("tensor_list", ["TensorListStack", "TensorListFromTensor"]),
        ("functions", ["StatelessIf", "StatelessWhile"]),
        ("cond_v1", ["Merge", "Switch"]),
        ("dynamic", ["NonMaxSuppressionV3", "Where", "ListDiff"]),
        ("initializer", ["HashTableV2", "LookupTableFindV2"]),
    ],
)
def test_execute_refuses_and_names_the_nodes(name, nodes):
    model = load_graph_model(str(fixture(name)))
    feeds = expected_inputs(name)
    try:
        assert model.needs_async()
        with pytest.raises(RuntimeError, match="execute_async") as err:
            model.execute(feeds)
        for n in nodes:
            assert n in str(err.value)
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()


def test_predict_async_and_subsets():
    model = load_graph_model(str(fixture("while_loop")))
    x = expected_inputs("while_loop")["x"]
    base = nf.memory().num_tensors
    try:
        acc, count = asyncio.run(model.predict_async(x))
        check_outputs("while_loop", [acc, count])
        only = asyncio.run(model.execute_async({"x": x}, "count"))
        assert only.numpy().tolist() == 4
        nf.dispose([acc, count, only])
        # the loop body's intermediates are all freed
        assert nf.memory().num_tensors == base
    finally:
        x.dispose()
        model.dispose()


def test_repeated_runs_do_not_leak():
    model = load_graph_model(str(fixture("tensor_array")))
    x = expected_inputs("tensor_array")["x"]
    try:
        base = nf.memory().num_tensors
        for _ in range(3):
            nf.dispose(asyncio.run(model.execute_async(x)))
            assert nf.memory().num_tensors == base
    finally:
        x.dispose()
        model.dispose()


def test_frames_context_ids():
    ctx = ExecutionContext({})
    assert ctx.current_context_ids == [""] and ctx.key("a") == "a"
    ctx.enter_frame("loop")
    assert ctx.current_context_ids == ["/loop-0", ""] and ctx.key("a") == "a-/loop-0"
    ctx.next_iteration()
    ctx.enter_frame("inner")
    assert ctx.current_context_ids == ["/loop-1/inner-0", "/loop-1", ""]
    ctx.exit_frame()
    ctx.exit_frame()
    assert ctx.current_context_id == ""
    with pytest.raises(RuntimeError, match="Exit outside any frame"):
        ctx.exit_frame()


def test_tensor_array_rules():
    ta = TensorArray("ta", "float32", 2, [2], clear_after_read=True)
    a, b = nf.tensor([1.0, 2.0]), nf.tensor([3.0, 4.0])
    ints = nf.cast(b, "int32")
    try:
        ta.write(0, a)
        with pytest.raises(ValueError, match="already been written"):
            ta.write(0, b)
        with pytest.raises(ValueError, match="not resizeable"):
            ta.write(2, b)
        with pytest.raises(ValueError, match="dtype is int32"):
            ta.write(1, ints)
        assert ta.read(0) is a
        with pytest.raises(ValueError, match="twice"):
            ta.read(0)
    finally:
        ta.clear_and_close()
        nf.dispose([b, ints])
    assert a.is_disposed and ta.closed
    with pytest.raises(ValueError, match="closed"):
        ta.read(0)


def test_tensor_list_ops():
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    tl = from_tensor(x, [2], "float32")
    empty = reserve([2], "float32", 2, -1)
    try:
        assert tl.size() == 3
        item = tl.get_item(1, [2], "float32")
        tl.push_back(nf.tensor([7.0, 8.0]))
        popped = tl.pop_back([2], "float32")
        assert popped.numpy().tolist() == [7.0, 8.0]
        grown = tl.resize(5)
        stacked = grown.stack([2], "float32")  # empty slots read as zeros (TF), the shape being known
        assert stacked.numpy().tolist()[3:] == [[0.0, 0.0], [0.0, 0.0]]
        concat = tl.concat("float32", [2])
        assert concat.numpy().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        zeros = empty.stack([2], "float32")
        assert empty.size() == 2 and zeros.numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
        with pytest.raises(ValueError, match="Invalid data types"):
            tl.stack([2], "int32")
        full = TensorList([], [2], "float32", 0)
        with pytest.raises(ValueError, match="full list"):
            full.push_back(item)
        full.clear_and_close()
        nf.dispose([item, popped, stacked, concat, zeros])
        grown.clear_and_close()
    finally:
        tl.clear_and_close()
        empty.clear_and_close()
        x.dispose()
