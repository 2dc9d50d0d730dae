"""Graph-level optimizations at ``GraphModel`` load (what TF.js's converter partly does offline).

:func:`optimize_graph` runs, on a copy of the graph:

1. constant folding (``constant_fold.fold_constants``): shape arithmetic, casts, reshapes of weights...;
2. identity removal (``constant_fold.remove_identities``);
3. canonical activations (``canon``): clips spelled with Maximum/Minimum become Relu/Relu6, PReLU
   spelled with Maximum/Minimum or Relu/Abs becomes Prelu;
4. transpose sinking (``transpose``): Transposes move down through element-wise ops, pads and concats
   until they meet another Transpose and cancel (ONNX-converted models), then identities go again;
5. zero Pad nodes before convolutions become the convolutions' explicit padding (``canon``);
6. fusion (``fuse.fuse_products``): convolutions and matrix products absorb the constant bias,
   scale and batch-norm nodes after them and one activation;
7. hard swish (``hard_swish``): ``x * relu6(x + 3) * c`` becomes one node.
8. PReLU written with ``Abs`` (``abs_prelu``): ``x + (x - |x|) * c`` becomes one node.

The original graph stays: ``GraphModel`` runs it instead when a request needs a node the optimized graph
no longer has (an intermediate output, an input fed in the middle of a fused chain) or feeds a node whose
value was baked into a new constant. The flag ``GRAPH_MODEL_OPTIMIZE`` (default true) and the load option
``optimize`` turn the whole thing off, so that the unoptimized graph can still be run and compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...core.flags import env
from ...core.tensor import Tensor
from ..load.plan import Graph, is_control_flow
from ..load.registry import get_mapper
from .abs_prelu import fuse_abs_prelu
from .canon import canonical_clips, canonical_prelu, pads_into_convs
from .constant_fold import fold_constants, remove_identities
from .fuse import fuse_products
from .hard_swish import fuse_hard_swish
from .rewrite import Rewriter, Stats
from .transpose import sink_transposes

env().register_flag("GRAPH_MODEL_OPTIMIZE", lambda: True)

PASSES = ("fold", "identity", "canon", "transpose", "pad", "fuse", "hard_swish", "abs_prelu")


@dataclass
class Optimized:
    """An optimized graph, its weights (the original ones plus ``new_weights``), the original nodes whose
    values were baked into new constants, and what was done."""

    graph: Graph
    weights: dict[str, Tensor]
    new_weights: dict[str, Tensor]
    baked: set[str]
    stats: Stats


def optimize_enabled(option: object = None) -> bool:
    """The load option ``optimize`` when given, else the ``GRAPH_MODEL_OPTIMIZE`` flag."""
    if option is not None:
        if not isinstance(option, bool):
            raise TypeError(f"load_graph_model: option 'optimize' must be a bool, got {option!r}")
        return option
    return env().get_bool("GRAPH_MODEL_OPTIMIZE")


def optimize_graph(graph: Graph, weights: Mapping[str, Tensor], passes: tuple[str, ...] = PASSES) -> Optimized:
    """Run the ``passes`` (a subset of :data:`PASSES`, in that order) on a copy of ``graph``."""
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise ValueError(f"optimize_graph: unknown passes {unknown}; expected some of {list(PASSES)}")
    if any(getattr(get_mapper(n.op), "overrides_builtin", False) for g in graph.walk() for n in g.nodes.values()):
        passes = ()  # an op of the graph runs a function given to nf.register_op: no pass may rewrite it away
    rw = Rewriter(graph, weights)
    # Loop bodies (TF1 control flow) keep their nodes: frames give a node's inputs their meaning there.
    rw.protected |= _frame_nodes(graph)
    try:
        if "fold" in passes:
            fold_constants(rw)
        if "identity" in passes:
            remove_identities(rw)
        if "canon" in passes:
            canonical_prelu(rw)  # first: its Maximum(x, 0) would otherwise become a Relu
            canonical_clips(rw)
        if "transpose" in passes:
            sink_transposes(rw)
            if "identity" in passes:
                remove_identities(rw)
        if "pad" in passes:
            pads_into_convs(rw)
        if "fuse" in passes:
            fuse_products(rw)
        if "hard_swish" in passes:
            fuse_hard_swish(rw)
        if "abs_prelu" in passes:
            fuse_abs_prelu(rw)
        optimized = rw.to_graph()
    except BaseException:
        for t in rw.new_weights.values():
            t.dispose()
        raise
    return Optimized(optimized, rw.weights, rw.new_weights, rw.baked, rw.stats)


def _frame_nodes(graph: Graph) -> set[str]:
    """Nodes that run inside a TF1 control-flow frame: everything reachable from an ``Enter`` up to an
    ``Exit`` (those keep their identity: the executor tracks them per frame)."""
    seen: set[str] = set()
    stack = [n for n, node in graph.nodes.items() if node.op == "Enter"]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if graph.nodes[name].op == "Exit":
            continue
        stack.extend(graph.children[name])
    seen |= {n for n, node in graph.nodes.items() if is_control_flow(node.op)}
    return seen
