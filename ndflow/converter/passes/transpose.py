"""Transpose sinking: models converted from ONNX wrap every NHWC convolution in Transposes to NCHW and
back; moving each Transpose down through the element-wise ops, pads and concatenations after it until it
meets the next Transpose lets the two cancel (a pass over the tensor each, saved).

With ``T = Transpose(x, p)`` read only by ``U``:

- ``U`` element-wise unary (``Relu``, ``LeakyRelu``, ``Sigmoid``, ``Cast``...): ``U(T(x)) = T(U(x))``;
- ``U`` element-wise binary whose other input is a scalar constant, or the same Transpose ``p`` of
  another value: ``U(T(x), T(y)) = T(U(x, y))``;
- ``U`` a ``Pad``/``PadV2``/``MirrorPad`` with constant paddings: the paddings are permuted back;
- ``U`` a ``ConcatV2`` of such Transposes only (same ``p``), constant axis: the axis maps through ``p``;
- ``U`` a Transpose ``q``: one Transpose ``p∘q``, or an ``Identity`` when that is the identity.

The node that keeps ``U``'s name is the Transpose (``U``'s value is unchanged); the moved op gets a new
name. Identity removal then drops the cancelled pairs.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ..load.graph import Node
from .rewrite import Rewriter, used_outputs

UNARY = frozenset(
    """Abs Ceil Cos Elu Erf Exp Expm1 Floor LeakyRelu Log Log1p Neg Reciprocal Relu Relu6 Round Rsqrt Selu
    Sigmoid Sign Sin Softplus Sqrt Square Tanh Cast""".split()
)
BINARY = frozenset({"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow", "SquaredDifference"})
PADS = frozenset({"Pad", "PadV2", "MirrorPad"})


def _perm(rw: Rewriter, node: Node) -> list[int] | None:
    """A Transpose node's constant permutation, else None."""
    if node.op != "Transpose" or len(node.inputs) != 2 or node.controls:
        return None
    src, index = node.inputs[1]
    if index or not rw.is_const(src) or rw.weights[src].rank != 1:
        return None
    perm = [int(v) for v in rw.weights[src].numpy()]
    return perm if sorted(perm) == list(range(len(perm))) else None


def _transposed(rw: Rewriter, ref: tuple[str, int], user: str) -> tuple[tuple[str, int], list[int]] | None:
    """``(x, p)`` when ``ref`` is ``Transpose(x, p)`` read only by ``user``."""
    node = rw.nodes.get(ref[0])
    if node is None or ref[1] or rw.only_consumer(ref[0]) != user:
        return None
    perm = _perm(rw, node)
    return (node.inputs[0], perm) if perm is not None else None


def _scalar_const(rw: Rewriter, ref: tuple[str, int]) -> bool:
    return ref[1] == 0 and rw.is_const(ref[0]) and rw.weights[ref[0]].rank == 0


def _sink(rw: Rewriter, user: Node, op_inputs: list[tuple[str, int]], perm: list[int], attr: dict) -> None:
    """``user`` becomes ``Transpose(op(op_inputs), perm)``; the transposes it read go away."""
    old = [src for src, _ in user.inputs if rw.nodes[src].op == "Transpose" and rw.only_consumer(src) == user.name]
    inner = rw.unique_name(f"{user.name}/untransposed")
    rw.nodes[inner] = Node(inner, user.op, [], [], attr, user.device)
    rw.consumers[inner] = []
    rw.set_inputs(inner, op_inputs, [])
    perm_name = rw.add_const(f"{user.name}/perm", ops.tensor(np.array(perm, np.int32)))
    transpose = Node(user.name, "Transpose", [(inner, 0), (perm_name, 0)], [], {"T": user.attr.get("T", {})})
    transpose.device = user.device
    rw.replace(user.name, transpose)
    for name in dict.fromkeys(old):
        if not rw.consumers[name]:
            rw.remove(name)
    rw.stats.add("transposes moved")


def _try(rw: Rewriter, user: Node) -> bool:
    """Move the Transpose(s) ``user`` reads below it, when a rule applies."""
    if user.controls or used_outputs(rw, user.name) - {0}:
        return False
    op = user.op
    if op == "Transpose":
        first = _transposed(rw, user.inputs[0], user.name) if user.inputs else None
        second = _perm(rw, user)
        if first is None or second is None or len(first[1]) != len(second):
            return False
        (x, p), q = first, second
        composed = [p[i] for i in q]
        src = user.inputs[0][0]
        if composed == list(range(len(composed))):
            rw.replace(user.name, Node(user.name, "Identity", [x], [], {"T": user.attr.get("T", {})}, user.device))
        else:
            perm_name = rw.add_const(f"{user.name}/perm", ops.tensor(np.array(composed, np.int32)))
            rw.replace(user.name, Node(user.name, "Transpose", [x, (perm_name, 0)], [], dict(user.attr), user.device))
        rw.remove(src)
        rw.stats.add("transposes cancelled" if composed == sorted(composed) else "transposes merged")
        return True
    if op in UNARY and len(user.inputs) == 1:
        found = _transposed(rw, user.inputs[0], user.name)
        if found is None:
            return False
        _sink(rw, user, [found[0]], found[1], dict(user.attr))
        return True
    if op in BINARY and len(user.inputs) == 2:
        a, b = (_transposed(rw, ref, user.name) for ref in user.inputs)
        if a is not None and b is not None and a[1] == b[1] and user.inputs[0] != user.inputs[1]:
            _sink(rw, user, [a[0], b[0]], a[1], dict(user.attr))
            return True
        for t, other, first in ((a, user.inputs[1], True), (b, user.inputs[0], False)):
            if t is not None and _scalar_const(rw, other):
                _sink(rw, user, [t[0], other] if first else [other, t[0]], t[1], dict(user.attr))
                return True
        return False
    if op in PADS and len(user.inputs) >= 2:
        found = _transposed(rw, user.inputs[0], user.name)
        src, index = user.inputs[1]
        if found is None or index or not rw.is_const(src):
            return False
        x, perm = found
        paddings = rw.weights[src].numpy()
        if paddings.shape != (len(perm), 2):
            return False
        back = np.zeros_like(paddings)
        for i, axis in enumerate(perm):
            back[axis] = paddings[i]
        rw.value(src)
        pads = rw.add_const(f"{user.name}/paddings", ops.tensor(back.astype(np.int32)))
        _sink(rw, user, [x, (pads, 0), *user.inputs[2:]], perm, dict(user.attr))
        return True
    if op == "ConcatV2" and len(user.inputs) >= 3:
        *values, axis_ref = user.inputs
        found = [_transposed(rw, ref, user.name) for ref in values]
        if any(f is None for f in found) or len({tuple(f[1]) for f in found}) != 1 or len(set(values)) != len(values):
            return False
        if axis_ref[1] or not rw.is_const(axis_ref[0]) or rw.weights[axis_ref[0]].rank != 0:
            return False
        perm = found[0][1]
        axis = int(rw.weights[axis_ref[0]].numpy())
        if not -len(perm) <= axis < len(perm):
            return False
        rw.value(axis_ref[0])
        new_axis = rw.add_const(f"{user.name}/axis", ops.scalar(perm[axis % len(perm)], "int32"))
        _sink(rw, user, [f[0] for f in found] + [(new_axis, 0)], perm, dict(user.attr))
        return True
    return False


def sink_transposes(rw: Rewriter) -> None:
    """Apply the rules until none applies (see the module docstring)."""
    changed = True
    while changed:
        changed = False
        for name in rw.topological():
            node = rw.nodes.get(name)
            if node is not None and _try(rw, node):
                changed = True
