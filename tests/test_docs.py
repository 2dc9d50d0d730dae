"""Generated documentation and name tables stay in step with the code."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from ndflow.backends import coverage

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_backends(text: str, backends: set[str]) -> str:
    """The doc without the rows of backends that are not installed here (torch is an extra)."""
    return "\n".join(
        line for line in text.splitlines() if not any(line.startswith((f"| `{b}`", f"- `{b}`")) for b in backends)
    )


def test_ops_doc_is_current():
    text = (ROOT / "docs" / "ops.md").read_text()
    rendered = _tool("gen_ops_doc").render()
    documented = set(re.findall(r"^\| `(\w+)` \| \d+ \|", text, flags=re.M))
    missing_here = documented - set(coverage())
    assert _without_backends(text, missing_here) == _without_backends(rendered, missing_here), (
        "docs/ops.md is stale: run python tools/gen_ops_doc.py (with every backend's extra installed)"
    )


def test_every_registered_kernel_has_a_tfjs_kernel_name():
    """Kernels are TF.js's, but for the ``_Ndflow*`` ones that only ndflow's graph optimizer writes nodes for
    (converter/passes/hard_swish.py), which no op calls."""
    tfjs = {name for _, name in json.loads((ROOT / "tools" / "tfjs_api.json").read_text())["kernels"]}
    for backend, names in coverage().items():
        unknown = sorted(n for n in set(names) - tfjs if not n.startswith("_Ndflow"))
        assert not unknown, f"backend {backend} registers kernels TF.js does not name: {unknown}"


def test_snake_case_rule():
    snake = _tool("gen_ops_doc").snake
    cases = {
        "gatherND": "gather_nd", "isNaN": "is_nan", "conv2dTranspose": "conv2d_transpose",
        "maxPool3d": "max_pool3d", "topk": "topk", "matMul": "mat_mul", "batchToSpaceND": "batch_to_space_nd",
        "grayscaleToRGB": "grayscale_to_rgb", "basicLSTMCell": "basic_lstm_cell", "inTopKAsync": "in_top_k_async",
        "setdiff1dAsync": "setdiff1d_async", "logSumExp": "log_sum_exp", "divNoNan": "div_no_nan",
    }  # fmt: skip
    for tfjs, ours in cases.items():
        assert snake(tfjs) == ours
