"""Helpers for the graph-model tests: the hand-built fixtures and in-memory models built from node lists."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np

import ndflow as nf

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "graph_models"


def fixture(name: str) -> Path:
    """``model.json`` of a hand-built fixture model."""
    return FIXTURES / name / "model.json"


def expected(name: str) -> dict[str, Any]:
    """What TF.js computed for a fixture (inputs and outputs, flat values)."""
    return json.loads((FIXTURES / name / "expected.json").read_text())


def expected_inputs(name: str) -> dict[str, nf.Tensor]:
    """The fixture's TF.js inputs as tensors, by input name (dispose them)."""
    return {
        rec["name"]: nf.tensor(np.array(rec["values"]).reshape(rec["shape"]), rec["shape"], rec["dtype"])
        for rec in expected(name)["inputs"]
    }


def check_outputs(name: str, outputs: Any, atol: float = 1e-5) -> None:
    """Outputs (a tensor or a list, in the fixture's order) equal TF.js's: dtype, shape and values."""
    outs = outputs if isinstance(outputs, list) else [outputs]
    recs = expected(name)["outputs"]
    assert len(outs) == len(recs)
    for t, rec in zip(outs, recs, strict=True):
        assert t.dtype == rec["dtype"], f"{rec['name']}: dtype {t.dtype} != {rec['dtype']}"
        assert list(t.shape) == rec["shape"], f"{rec['name']}: shape {t.shape} != {rec['shape']}"
        want = np.array(rec["values"], dtype=np.float64).reshape(rec["shape"])
        np.testing.assert_allclose(t.numpy().astype(np.float64), want, atol=atol, err_msg=rec["name"])


def load_dump_output(folder: Path, rec: dict[str, Any]) -> np.ndarray:
    """An output of a run_model.js dump, read as TF.js's ``.data()`` gives it (see gen_human_outputs.py)."""
    spec = importlib.util.spec_from_file_location("gen_human_outputs", FIXTURES / "gen_human_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_output(folder, rec)


# -- in-memory models --------------------------------------------------------------------------------
def attr_type(dtype: str = "DT_FLOAT") -> dict:
    return {"type": dtype}


def attr_str(text: str) -> dict:
    return {"s": base64.b64encode(text.encode()).decode()}


def node(name: str, op: str, inputs: list[str] = (), **attr: Any) -> dict:
    d: dict[str, Any] = {"name": name, "op": op, "attr": attr}
    if inputs:
        d["input"] = list(inputs)
    return d


def placeholder(name: str, dims: list[int], dtype: str = "DT_FLOAT") -> dict:
    return node(name, "Placeholder", dtype=attr_type(dtype), shape={"shape": {"dim": [{"size": str(d)} for d in dims]}})


def const(name: str, dtype: str = "DT_FLOAT") -> dict:
    return node(name, "Const", dtype=attr_type(dtype), value={})


def artifacts(
    nodes: list[dict],
    weights: dict[str, np.ndarray] | None = None,
    library: list[dict] | None = None,
    signature: dict | None = None,
    **extra: Any,
) -> nf.io.ModelArtifacts:
    """In-memory ModelArtifacts of a graph model (weights float32/int32/bool, unquantized)."""
    data, specs = nf.io.encode_weights(dict(weights or {}))
    topology: dict[str, Any] = {"node": nodes, "versions": {"producer": 7}}
    if library:
        topology["library"] = {"function": library}
    return nf.io.ModelArtifacts(
        model_topology=topology,
        weight_specs=specs,
        weight_data=data,
        format="graph-model",
        signature=signature,
        **extra,
    )


def load(nodes: list[dict], weights: dict[str, np.ndarray] | None = None, **kw: Any) -> Any:
    """A GraphModel from nodes and weights held in memory."""
    from ndflow.converter import load_graph_model

    return load_graph_model(nf.io.from_memory(artifacts(nodes, weights, **kw)))
