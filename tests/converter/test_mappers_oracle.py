"""Every op mapper against real TF.js: single-node graphs from ``tests/fixtures/mapper_cases/``.

Each case is a TF node as a converted model.json holds it; its mapper runs on the case's inputs and
its outputs are compared with what TF.js 4.22's converter computed for the same node (or, where TF.js
is wrong or refuses the node, with the reference named in the case's ``ref`` and ``why``; see
``tests/fixtures/gen_mapper_cases.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_cases import _check_output, _make_tensor

import ndflow as nf
import ndflow.converter.mappers  # noqa: F401  (registers the mappers)
from ndflow.converter.load.graph import Node
from ndflow.converter.load.registry import get_mapper
from ndflow.converter.runtime.control_flow import ResourceManager

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "mapper_cases"
CATEGORIES = sorted(p.stem for p in CASES_DIR.glob("*.json") if p.stem != "tfjs_ops")


def _cases() -> list:
    params = []
    for cat in CATEGORIES:
        for c in json.loads((CASES_DIR / f"{cat}.json").read_text())["cases"]:
            params.append(pytest.param(c, id=f"{cat}/{c['id']}"))
    return params


class Context:
    """The part of the execution context that mappers use: the model's hash tables."""

    def __init__(self) -> None:
        self.resources = ResourceManager()


def _run(node: Node, values: dict, ctx: Context) -> list:
    mapper = get_mapper(node.op)
    assert mapper is not None, f"no mapper for {node.op}"
    inputs = [values[name][index] for name, index in node.inputs]
    result = mapper(node, inputs, ctx)
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    assert not any(o is i and not o.kept for o in outs for i in inputs), f"{node.name}: a mapper returned its input"
    return outs


def run_node(case: dict) -> None:
    """Run the case's node (after the nodes it needs) and check every output TF.js produced."""
    ctx = Context()
    created: list = []
    outs: list = []
    try:
        values = {f"in{i}": [_make_tensor(spec, created)] for i, spec in enumerate(case["inputs"])}
        for before in case.get("before", []):
            values[before["name"]] = _run(Node.from_json(before), values, ctx)
            created += [t for t in values[before["name"]] if not t.kept]
        outs = _run(Node.from_json(case["node"]), values, ctx)
        expected = case["outputs"]
        assert len(outs) >= len(expected), f"{case['id']}: {len(outs)} outputs, TF.js gave {len(expected)}"
        for k, exp in enumerate(expected):
            if case["ref"] == "shape":
                assert list(outs[k].shape) == exp["shape"] and outs[k].dtype == exp["dtype"], (
                    f"{case['id']} output {k}: {list(outs[k].shape)} {outs[k].dtype} != TF.js {exp}"
                )
            else:
                _check_output(case["id"], k, outs[k], exp)
    finally:
        nf.dispose(created + [o for o in outs if all(o is not c for c in created) and not o.kept])
        ctx.resources.dispose()


@pytest.mark.parametrize("case", _cases())
def test_mapper_matches_tfjs(case):
    assert "error" not in case, f"TF.js failed on this node: {case['error']}"
    run_node(case)


def test_mappers_leave_no_intermediates():
    """A mapper's temporaries are freed: only its outputs stay (a fused conv folding a batch norm
    and an odd-length IRFFT create several)."""
    cases = {c["id"]: c for c in json.loads((CASES_DIR / "convolution.json").read_text())["cases"]}
    cases.update({c["id"]: c for c in json.loads((CASES_DIR / "spectral.json").read_text())["cases"]})
    for cid in ("_FusedConv2D_batchnorm", "IRFFT_odd", "MaxPool_nchw"):
        before = nf.memory().num_tensors
        run_node(cases[cid])
        assert nf.memory().num_tensors == before, cid
