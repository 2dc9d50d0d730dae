"""Malformed graph models raise clear errors at load, before any weight tensor is made: inputs naming
no node, cycles outside loops, Const nodes without a weight, weights whose bytes do not match their
shape, and one error listing every op type ndflow cannot run with the nodes that use them."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from gm_helpers import artifacts, const, fixture, load, node, placeholder

import ndflow as nf
from ndflow.converter import load_graph_model

F = {"type": "DT_FLOAT"}


def test_input_that_names_no_node():
    nodes = [placeholder("x", [2]), node("y", "Relu", ["x"], T=F), node("z", "AddV2", ["y", "ghost:1"], T=F)]
    with pytest.raises(ValueError, match=r"node 'z' \(AddV2\) has input 'ghost:1', which is not a node of the graph"):
        load(nodes)


def test_function_input_that_names_no_node():
    library = [
        {
            "signature": {"name": "f", "inputArg": [{"name": "a", "type": "DT_FLOAT"}], "outputArg": [{"name": "o"}]},
            "nodeDef": [node("neg", "Neg", ["b"], T=F)],
            "ret": {"o": "neg:y:0"},
        }
    ]
    nodes = [placeholder("x", [2]), node("call", "StatelessIf", ["x", "x"], then_branch={"func": {"name": "f"}})]
    with pytest.raises(ValueError, match=r"node 'neg' \(Neg\) has input 'b', which is not a node of function 'f'"):
        load(nodes, library=library)


def test_cycle_outside_loops():
    nodes = [
        placeholder("x", [2]),
        node("a", "AddV2", ["x", "c"], T=F),
        node("b", "Relu", ["a"], T=F),
        node("c", "Neg", ["b"], T=F),
        node("out", "Identity", ["c"], T=F),
    ]
    with pytest.raises(ValueError, match=r"cycle outside control-flow loops.*a -> b -> c -> a"):
        load(nodes)


def test_loop_back_edge_through_next_iteration_is_no_cycle():
    model = load_graph_model(str(fixture("while_loop")))
    model.dispose()


def test_const_without_weight():
    nodes = [placeholder("x", [2]), const("w1"), const("w2"), node("y", "AddV2", ["x", "w1"], T=F)]
    with pytest.raises(ValueError, match=r"2 Const node\(s\) have no weight in the weights manifest: 'w1', 'w2'"):
        load(nodes, {"other": np.zeros(2, np.float32)})


def test_weight_bytes_do_not_match_shape_in_memory():
    nodes = [placeholder("x", [2]), const("w"), node("y", "AddV2", ["x", "w"], T=F)]
    art = artifacts(nodes, {"w": np.ones(2, np.float32)})
    art.weight_specs[0]["shape"] = [3]  # 12 bytes wanted, 8 given
    with pytest.raises(ValueError, match=r"weight 'w' \(shape \[3\], float32.*needs 12 bytes"):
        load_graph_model(nf.io.from_memory(art))
    art.weight_specs[0]["shape"] = [1]  # 4 bytes wanted, 8 given
    with pytest.raises(ValueError, match=r"4 bytes left over after the last weight 'w'"):
        load_graph_model(nf.io.from_memory(art))


def test_weight_file_bytes_do_not_match_specs(tmp_path):
    folder = tmp_path / "basic"
    shutil.copytree(fixture("basic").parent, folder)
    shard = folder / "group1-shard2of2.bin"
    shard.write_bytes(shard.read_bytes()[:-2])
    with pytest.raises(ValueError, match=r"'group1-shard2of2.bin' \(8 bytes\).*'b'.*describe 20 bytes"):
        load_graph_model(str(folder / "model.json"))


def test_missing_weight_file(tmp_path):
    folder = tmp_path / "basic"
    shutil.copytree(fixture("basic").parent, folder)
    (folder / "group1-shard1of2.bin").unlink()
    with pytest.raises(ValueError, match="weight file 'group1-shard1of2.bin' is missing"):
        load_graph_model(str(folder / "model.json"))


def test_unsupported_ops_listed_in_one_error():
    library = [
        {
            "signature": {
                "name": "body",
                "inputArg": [{"name": "a", "type": "DT_FLOAT"}],
                "outputArg": [{"name": "o"}],
            },
            "nodeDef": [node("inner", "FancyOp", ["a"])],
            "ret": {"o": "inner:output:0"},
        }
    ]
    nodes = [
        placeholder("x", [2]),
        node("f1", "FancyOp", ["x"]),
        node("f2", "FancyOp", ["f1"]),
        node("g", "GadgetOp", ["f2"]),
        node("ok", "Relu", ["g"], T=F),
        node("call", "StatelessIf", ["x", "x"], then_branch={"func": {"name": "body"}}),  # functions count when called
    ]
    with pytest.raises(NotImplementedError) as err:
        load(nodes, library=library)
    msg = str(err.value)
    assert "2 op type(s) are not supported" in msg
    assert "FancyOp: 'f1', 'f2', 'body/inner'" in msg and "GadgetOp: 'g'" in msg and "Relu" not in msg


def test_layers_model_is_refused(tmp_path):
    topology = {"class_name": "Sequential", "config": {"layers": []}}
    art = nf.io.ModelArtifacts(model_topology=topology, format="layers-model", weight_specs=[], weight_data=b"")
    with pytest.raises(ValueError, match="layers model"):
        load_graph_model(nf.io.from_memory(art))


def test_duplicate_node_names():
    with pytest.raises(ValueError, match="two nodes named 'x'"):
        load([placeholder("x", [2]), placeholder("x", [2])])


def test_unknown_dtype_attribute_named():
    nodes = [node("x", "Placeholder", dtype={"type": "DT_VARIANT"}), node("y", "Relu", ["x"], T=F)]
    model = load(nodes)  # the dtype is only read when needed
    try:
        with pytest.raises(ValueError, match=r"node 'x' \(Placeholder\) has unsupported dtype DT_VARIANT"):
            _ = model.inputs
    finally:
        model.dispose()


def test_not_json(tmp_path):
    path = tmp_path / "model.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="Failed to parse model JSON"):
        load_graph_model(str(path))
    path.write_text(json.dumps({"format": "graph-model", "modelTopology": {"node": []}}))
    with pytest.raises(ValueError, match="needs a 'weightsManifest'"):
        load_graph_model(str(path))
