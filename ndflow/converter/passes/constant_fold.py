"""Constant folding at load: nodes whose inputs are all constants are run once and become Const nodes.

Only deterministic ops without side effects fold (:data:`FOLDABLE`: arithmetic, casts, shape
arithmetic, reshapes and slices of weights, reductions, ...); never random ops, control flow,
TensorArrays/TensorLists, hash tables or placeholders, and never a node with control dependencies.
A folded node runs through its own mapper on the active backend, so its value is exactly what the
unoptimized graph computes. A node whose result would be large and larger than its inputs (``Fill``,
``Tile`` of a small constant) is left to run, so folding never grows the model much.

``Identity``-like nodes (``Identity``, ``StopGradient``, ``Snapshot``) that are not outputs are
removed: their consumers read the identity's input directly.
"""

from __future__ import annotations

from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ..runtime.control_flow import ExecutionContext
from ..runtime.program import raw_mapper
from .rewrite import Rewriter, used_outputs

FOLDABLE = frozenset(
    """
    Abs Acos Acosh Add AddN AddV2 All Any ArgMax ArgMin Asin Asinh Atan Atan2 Atanh BiasAdd BroadcastArgs
    BroadcastTo Cast Ceil ClipByValue Concat ConcatV2 Cos Cosh Cumprod Cumsum Div DivNoNan Elu Equal Erf Exp
    ExpandDims Expm1 Fill Floor FloorDiv FloorMod Gather GatherNd GatherV2 Greater GreaterEqual Identity IsFinite
    IsInf IsNan LeakyRelu Less LessEqual LinSpace Log Log1p LogicalAnd LogicalNot LogicalOr Max Maximum Mean Min
    Minimum MirrorPad Mod Mul Neg NotEqual OneHot Ones OnesLike Pack Pad PadV2 Pow Prelu Prod Range Rank RealDiv
    Reciprocal Relu Relu6 Reshape Reverse ReverseV2 Round Rsqrt Select SelectV2 Selu Shape ShapeN Sigmoid Sign
    Sin Sinh Size Slice Snapshot Softplus Split SplitV Sqrt Square SquaredDifference Squeeze StopGradient
    SparseToDense StridedSlice Sub Sum Tan Tanh Tile Transpose Unpack Zeros ZerosLike
    """.split()
)
IDENTITIES = frozenset({"Identity", "StopGradient", "Snapshot"})
MAX_GROWTH_ELEMENTS = 1 << 20  # a folded value may exceed its inputs' size by at most this many elements


def _evaluate(rw: Rewriter, name: str, ctx: ExecutionContext) -> list[Tensor | None] | None:
    """Run node ``name`` on its constant inputs; its outputs, or None when it cannot run (or errs)."""
    node = rw.nodes[name]
    fn = raw_mapper(node.op)
    if fn is None:
        return None
    args = [rw.weights[src] for src, _ in node.inputs]
    scope = ENGINE.start_scope(f"fold {name}")
    try:
        out = fn(node, args, ctx)
    except Exception:  # the run reports it, with the node's name, as the unoptimized graph would
        ENGINE.end_scope(None)
        return None
    outs = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, list | tuple) else None
    if outs is None or not all(t is None or isinstance(t, Tensor) for t in outs):
        ENGINE.end_scope(None)
        return None
    made = {id(t) for t in scope.track}
    outs = [t if t is None or id(t) in made else t.clone() for t in outs]  # never an input itself
    ENGINE.end_scope(outs)
    return outs


def fold_constants(rw: Rewriter) -> None:
    """Replace every foldable node whose data inputs are all constants by a Const of its value."""
    ctx = ExecutionContext(rw.weights)
    outputs = rw.graph.outputs
    for name in rw.topological():
        node = rw.nodes.get(name)
        if node is None or node.op not in FOLDABLE or node.controls or not node.inputs:
            continue
        if not all(rw.is_const(src) and index == 0 for src, index in node.inputs):
            continue
        needed = used_outputs(rw, name) | {i for n, i in outputs if n == name}
        if not needed or (name in rw.protected and needed != {0}):
            continue  # dead, or an output whose other results need the node's name
        outs = _evaluate(rw, name, ctx)
        if outs is None or any(i >= len(outs) or outs[i] is None for i in needed):
            _dispose(outs)
            continue
        in_size = sum(rw.weights[src].size for src, _ in node.inputs)
        if sum(outs[i].size for i in needed) > in_size + MAX_GROWTH_ELEMENTS:
            _dispose(outs)
            continue
        for src, _ in node.inputs:
            rw.value(src)
        for index in sorted(needed - {0}):
            _redirect_output(rw, name, index, rw.add_const(f"{name}/folded_{index}", outs[index]))
        if 0 in needed:
            rw.make_const(name, outs[0])
        else:
            rw.set_inputs(name, [], [])
            rw.remove(name)
        _dispose([t for i, t in enumerate(outs) if i not in needed])
        rw.stats.add("constant folded")


def _redirect_output(rw: Rewriter, name: str, index: int, const: str) -> None:
    """Consumers of ``name:index`` read Const ``const`` instead."""
    for user in list(dict.fromkeys(rw.consumers[name])):
        node = rw.nodes[user]
        if any(src == name and i == index for src, i in node.inputs):
            inputs = [(const, 0) if src == name and i == index else (src, i) for src, i in node.inputs]
            rw.set_inputs(user, inputs, node.controls)


def _dispose(outs: list[Tensor | None] | None) -> None:
    for t in outs or []:
        if t is not None and not t.is_disposed:
            t.dispose()


def remove_identities(rw: Rewriter) -> None:
    """Consumers of an ``Identity`` (not an output, no control edges in or out) read its input instead."""
    for name in rw.topological():
        node = rw.nodes.get(name)
        if node is None or node.op not in IDENTITIES or name in rw.protected or node.controls:
            continue
        if len(node.inputs) != 1 or used_outputs(rw, name) - {0}:
            continue
        src = node.inputs[0]
        if src[0] in rw.nodes and rw.nodes[src[0]].op in ("Switch", "Merge", "Enter", "Exit", "NextIteration"):
            continue  # control-flow plumbing keeps its shape
        if any(name in rw.nodes[u].controls for u in rw.consumers[name]):
            continue
        rw.redirect(name, src)
        rw.remove(name)
        rw.stats.add("identity removed")
