"""What the leak finder costs while its flags are off: per-op time of ``nf.add`` + ``dispose`` with the
engine as it is, against the same engine with the leak-tracking checks removed (the two hooks swapped
for the same functions recompiled without them). Runs alternate to cancel machine noise. The ops run on int32
tensors through the Python engine (``C_DISPATCH`` off): float32 element-wise ops take the direct path, which has no
such hooks.

    python benchmarks/leak_overhead.py [--n 100000] [--rounds 7]
"""

from __future__ import annotations
import __future__

import argparse
import ast
import inspect
import textwrap
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ndflow as nf
from ndflow.core.dispatch.outputs import track_output
from ndflow.core.engine import Engine


class _StripTracker(ast.NodeTransformer):
    """Drops the statements about the leak tracker: ``if ...tracker...:`` blocks and ``tracker = ...``."""

    def visit_If(self, node: ast.If) -> Any:
        return None if "tracker" in ast.unparse(node.test) else self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        return None if any("tracker" in ast.unparse(t) for t in node.targets) else node


def without_tracker_checks(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled again from its own source without its leak-tracker statements (no copy to keep in step)."""
    tree = _StripTracker().visit(ast.parse(textwrap.dedent(inspect.getsource(fn))))
    code = compile(tree, inspect.getsourcefile(fn) or "<hook>", "exec", __future__.annotations.compiler_flag, True)
    namespace = dict(fn.__globals__)
    exec(code, namespace)
    return namespace[fn.__name__]


def per_op_us(n: int) -> float:
    a, b = nf.tensor(np.ones(1, np.int32)), nf.tensor(np.ones(1, np.int32))
    start = time.perf_counter()
    for _ in range(n):
        nf.add(a, b).dispose()
    elapsed = (time.perf_counter() - start) / n * 1e6
    nf.dispose([a, b])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    nf.set_backend("cpu")
    nf.env().set("C_DISPATCH", False)
    with_hooks = (Engine._track_output, Engine.dispose_tensor)
    without = (without_tracker_checks(track_output), without_tracker_checks(Engine.dispose_tensor))
    times: dict[str, list[float]] = {"with leak-finder checks (flags off)": [], "without them": []}
    per_op_us(args.n // 10)  # warm-up
    for _ in range(args.rounds):
        for label, (track, dispose) in zip(times, (with_hooks, without), strict=True):
            Engine._track_output, Engine.dispose_tensor = track, dispose
            times[label].append(per_op_us(args.n))
    Engine._track_output, Engine.dispose_tensor = with_hooks
    best = {label: min(v) for label, v in times.items()}
    base = best["without them"]
    print(f"{'engine':<40} {'us/op (best of ' + str(args.rounds) + ')':>22} {'overhead':>10}")
    for label, us in best.items():
        print(f"{label:<40} {us:22.3f} {(us / base - 1) * 100:9.1f}%")


if __name__ == "__main__":
    main()
