"""What the trace's span markers cost while no profile runs: per-call time of a named ``nf.tidy``, a ``Dense``
layer's call and a small graph model's ``execute``, with the engine as it is against the same functions compiled
again without their markers (``if ... SPANS ...:`` blocks dropped, ``span_of(...)`` taken out of ``with``, the
graph step's choice fixed to the plain step). ``nf.add`` (compiled dispatch, untouched) is the control. Runs
alternate to cancel machine noise; the best round of each is compared.

    python benchmarks/trace_overhead.py [--n 20000] [--rounds 7]
"""

from __future__ import annotations
import __future__

import argparse
import ast
import inspect
import json
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import ndflow as nf
from ndflow.converter.runtime.program import Program
from ndflow.core.engine import Engine
from ndflow.layers.engine.base import Layer


class _StripSpans(ast.NodeTransformer):
    """Drops the span markers: ``if`` blocks testing ``SPANS``, ``span_of(...)`` items of ``with``, and makes
    ``step = ... SPANS ...`` the plain ``step = self._step``."""

    def visit_If(self, node: ast.If) -> Any:
        return None if "SPANS" in ast.unparse(node.test) else self.generic_visit(node)

    def visit_With(self, node: ast.With) -> Any:
        node.items = [i for i in node.items if "span_of" not in ast.unparse(i.context_expr)]
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        if "SPANS" in ast.unparse(node.value):
            node.value = ast.parse("self._step", mode="eval").body
        return node


def without_spans(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled again from its own source without its span markers."""
    tree = _StripSpans().visit(ast.parse(textwrap.dedent(inspect.getsource(fn))))
    ast.fix_missing_locations(tree)
    code = compile(tree, inspect.getsourcefile(fn) or "<stripped>", "exec", __future__.annotations.compiler_flag)
    namespace: dict[str, Any] = {}
    exec(code, fn.__globals__, namespace)  # noqa: S102 - our own source, recompiled
    return namespace[fn.__name__]


PATCHED = [(Engine, "start_scope"), (Engine, "end_scope"), (Layer, "apply"), (Program, "_steps")]


def _graph_model(folder: Path) -> Any:
    weights = {"w": np.ones((8, 8), np.float32), "b": np.ones(8, np.float32)}
    t = {"T": {"type": "DT_FLOAT"}}
    dims = {"shape": {"dim": [{"size": "-1"}, {"size": "8"}]}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": dims}},
        {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "b", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "mm", "op": "MatMul", "input": ["x", "w"], "attr": t},
        {"name": "add", "op": "Add", "input": ["mm", "b"], "attr": t},
        {"name": "out", "op": "Tanh", "input": ["add"], "attr": t},
    ]
    data, specs = nf.io.encode_weights(weights)
    (folder / "weights.bin").write_bytes(data)
    model = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "versions": {"producer": 7}},
        "weightsManifest": [{"paths": ["weights.bin"], "weights": [dict(s) for s in specs]}],
    }
    (folder / "model.json").write_text(json.dumps(model))
    return nf.load_graph_model(str(folder / "model.json"))


def _per_call_us(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20000, help="calls per timing")
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds")
    args = p.parse_args(argv)
    nf.set_backend("cpu")
    original = {(cls, name): getattr(cls, name) for cls, name in PATCHED}
    stripped = {(cls, name): without_spans(getattr(cls, name)) for cls, name in PATCHED}
    with tempfile.TemporaryDirectory() as tmp:
        model = _graph_model(Path(tmp))
        dense = nf.layers.dense({"units": 8, "input_shape": [8]})
        x = nf.ones([1, 8])
        nf.dispose([dense.apply(x), model.execute(x)])
        work = {
            "nf.tidy('name', fn)": lambda: nf.tidy("name", lambda: None),
            "Dense layer call": lambda: dense.apply(x).dispose(),
            "graph model execute": lambda: model.execute(x).dispose(),
            "nf.add (control)": lambda: nf.add(x, x).dispose(),
        }
        times: dict[str, dict[str, list[float]]] = {w: {"with": [], "without": []} for w in work}
        for _ in range(args.rounds):
            for variant, table in (("with", original), ("without", stripped)):
                for (cls, name), fn in table.items():
                    setattr(cls, name, fn)
                for w, fn in work.items():
                    n = args.n if "tidy" in w or "add" in w else args.n // 10
                    times[w][variant].append(_per_call_us(fn, n))
        for (cls, name), fn in original.items():
            setattr(cls, name, fn)
        nf.dispose(x)
        dense.dispose()
        model.dispose()
    print(f"{'us per call':<24} {'with markers':>14} {'without':>10} {'difference':>11}   (best of rounds; median)")
    for w, t in times.items():
        a, b = min(t["with"]), min(t["without"])
        ma, mb = statistics.median(t["with"]), statistics.median(t["without"])
        print(f"{w:<24} {a:>14.3f} {b:>10.3f} {a - b:>+11.3f}   ({ma:.3f} vs {mb:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
