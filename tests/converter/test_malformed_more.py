"""More malformed graph models (issue 24): a bad ``versions``, a non-string ``op``, a graph with no nodes, an
invalid output index in a tensor name; each raises a ValueError naming what is wrong, and a load that fails
after its weights were decoded frees them (the conftest fixture checks that nothing leaked)."""

from __future__ import annotations

import numpy as np
import pytest
from gm_helpers import artifacts, const, load, node, placeholder

import ndflow as nf
from ndflow.converter import GraphModel, load_graph_model

F = {"type": "DT_FLOAT"}
NODES = [placeholder("x", [2]), const("w"), node("y", "AddV2", ["x", "w"], T=F)]
WEIGHTS = {"w": np.ones(2, np.float32)}


def _load_artifacts(arts: nf.io.ModelArtifacts) -> GraphModel:
    return load_graph_model(nf.io.from_memory(arts))


def test_versions_not_an_object():
    arts = artifacts(NODES, WEIGHTS)
    arts.model_topology["versions"] = "x"
    with pytest.raises(ValueError, match=r"graph model: modelTopology.versions must be an object, got str"):
        _load_artifacts(arts)


@pytest.mark.parametrize("op", [3, None, ["Relu"], ""])
def test_node_op_not_a_string(op):
    nodes = [placeholder("x", [2]), {"name": "y", "op": op, "input": ["x"]}]
    with pytest.raises(ValueError, match=r"node 'y': 'op' must be a string"):
        load(nodes)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"name": 3, "op": "Relu"}, r"a node's 'name' must be a non-empty string, got 3"),
        ({"name": "y", "op": "Relu", "input": "x"}, r"node 'y': 'input' must be a list"),
        ({"name": "y", "op": "Relu", "input": [3]}, r"node 'y': inputs must be strings"),
        ({"name": "y", "op": "Relu", "input": ["x"], "attr": []}, r"node 'y': 'attr' must be an object"),
    ],
)
def test_malformed_node_fields(bad, match):
    with pytest.raises(ValueError, match=match):
        load([placeholder("x", [2]), bad])


def test_graph_without_nodes():
    with pytest.raises(ValueError, match=r"graph model: the graph has no nodes"):
        load([])


@pytest.mark.parametrize("ref", ["x:-1", "x:a", "x:1.5", "x:out:-2"])
def test_invalid_output_index(ref):
    nodes = [placeholder("x", [2]), node("y", "Relu", [ref], T=F)]
    with pytest.raises(ValueError, match=rf"node 'y': tensor name '{ref}' has an invalid output index"):
        load(nodes)


def test_valid_output_indices_still_load():
    model = load([placeholder("x", [2]), node("y", "Relu", ["x:0"], T=F), node("z", "Neg", ["y"], T=F)])
    model.dispose()


def test_failure_after_weights_were_decoded_frees_them(monkeypatch):
    def boom(self: GraphModel) -> None:
        raise ValueError("graph model: boom")

    monkeypatch.setattr(GraphModel, "_precompile", boom)
    before = nf.memory().num_tensors
    with pytest.raises(ValueError, match="boom"):
        load(NODES, WEIGHTS)
    assert nf.memory().num_tensors == before
