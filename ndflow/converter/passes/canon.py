"""Canonical forms before fusion: activations spelled out in elementary ops become activation nodes, and
zero padding in front of a convolution moves into the convolution.

- clipping: ``Maximum(x, 0)`` is ``Relu``; ``Relu`` then ``Minimum(·, 6)``, and ``Minimum(x, 6)`` then
  ``Maximum(·, 0)`` (Keras's ``relu(max_value=6)``), are ``Relu6``; a redundant clip after ``Relu``/
  ``Relu6`` goes away (scalar float constants only);
- PReLU written as ``Maximum(x, 0) + alpha * Minimum(x, 0)`` (ONNX/MXNet exports) or as
  ``Relu(x) + (x - Abs(x)) * m`` (TF-slim, ``alpha = 2m``) is ``Prelu(x, alpha)``. Both are the same
  function on finite values (one of the two terms is zero; scaling by 2 is exact);
- ``Pad`` (zeros, constant paddings, spatial axes only) whose only consumer is a (fused) ``Conv2D`` or
  ``DepthwiseConv2dNative`` (NHWC, ``VALID`` or ``EXPLICIT`` padding) becomes the convolution's
  explicit padding: one pass over the input fewer.

Each rewrite names the new node after the node it replaces last, so outputs keep their names.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ..load.graph import Node
from .rewrite import Rewriter, used_outputs

CONVS = frozenset({"Conv2D", "DepthwiseConv2dNative", "DepthwiseConv2d", "_FusedConv2D", "FusedDepthwiseConv2dNative"})


def _scalar(rw: Rewriter, ref: tuple[str, int]) -> float | None:
    """The value of a rank-0 float32 constant, else None."""
    name, index = ref
    if index != 0 or not rw.is_const(name):
        return None
    t = rw.weights[name]
    if t.rank != 0 or t.dtype != "float32":
        return None
    return float(t.numpy())


def _clip_arg(rw: Rewriter, node: Node, op: str, value: float) -> tuple[str, int] | None:
    """For ``op(x, value)`` (either order, a float node): ``x``."""
    if node.op != op or len(node.inputs) != 2 or node.controls or node.dtype("T", "float32") != "float32":
        return None
    a, b = node.inputs
    if _scalar(rw, b) == value:
        return a
    if _scalar(rw, a) == value:
        return b
    return None


def _activation_of(rw: Rewriter, node: Node) -> tuple[str, tuple[str, int]] | None:
    """``(kind, x)`` when ``node`` is a clip: ``relu``, ``relu6``, ``max0`` (``Maximum(x, 0)``),
    ``min6`` (``Minimum(x, 6)``)."""
    if node.op in ("Relu", "Relu6") and len(node.inputs) == 1 and not node.controls:
        return node.op.lower(), node.inputs[0]
    x = _clip_arg(rw, node, "Maximum", 0.0)
    if x is not None:
        return "max0", x
    x = _clip_arg(rw, node, "Minimum", 6.0)
    if x is not None:
        return "min6", x
    return None


# (first, second) -> what the pair is
PAIRS = {
    ("relu", "max0"): "Relu",
    ("relu", "min6"): "Relu6",
    ("relu6", "max0"): "Relu6",
    ("relu6", "min6"): "Relu6",
    ("min6", "max0"): "Relu6",
    ("max0", "min6"): "Relu6",
    ("max0", "max0"): "Relu",
}


def _set(rw: Rewriter, name: str, op: str, inputs: list[tuple[str, int]], like: Node) -> None:
    """Replace node ``name`` by a new ``op`` node on ``inputs`` (float32, ``like``'s device)."""
    rw.replace(name, Node(name, op, inputs, [], {"T": {"type": "DT_FLOAT"}}, like.device))


def canonical_clips(rw: Rewriter) -> None:
    """Rewrite clip chains into ``Relu``/``Relu6`` (see the module docstring)."""
    changed = True
    while changed:
        changed = False
        for name in rw.topological():
            node = rw.nodes.get(name)
            if node is None:
                continue
            first = _activation_of(rw, node)
            if first is None:
                continue
            user = rw.only_consumer(name)
            second = _activation_of(rw, rw.nodes[user]) if user is not None else None
            if second is not None and second[1] == (name, 0) and (first[0], second[0]) in PAIRS:
                _set(rw, user, PAIRS[first[0], second[0]], [first[1]], node)
                rw.remove(name)
                rw.stats.add("clips simplified")
                changed = True
            elif first[0] == "max0":
                _set(rw, name, "Relu", [first[1]], node)
                rw.stats.add("clips simplified")
                changed = True


def _only(rw: Rewriter, name: str, op: str) -> Node | None:
    """Node ``name`` when it is an ``op`` without control edges whose value only one node reads."""
    node = rw.nodes.get(name)
    if node is None or node.op != op or node.controls or rw.only_consumer(name) is None:
        return None
    return node


def canonical_prelu(rw: Rewriter) -> None:
    """Rewrite the two spelled-out PReLU forms into ``Prelu`` nodes (see the module docstring)."""
    for name in rw.topological():
        node = rw.nodes.get(name)
        if node is None or node.op not in ("Add", "AddV2") or len(node.inputs) != 2 or node.controls:
            continue
        if node.dtype("T", "float32") != "float32":
            continue
        found = _max_min_form(rw, node) or _relu_abs_form(rw, node)
        if found is None:
            continue
        x, alpha, removed = found
        alpha_name = rw.add_const(f"{name}/alpha", ops.tensor(alpha))
        _set(rw, name, "Prelu", [x, (alpha_name, 0)], node)
        for dead in removed:
            rw.remove(dead)
        rw.stats.add("prelu recognized")


def _const_array(rw: Rewriter, ref: tuple[str, int]) -> np.ndarray | None:
    if ref[1] != 0 or not rw.is_const(ref[0]) or rw.weights[ref[0]].dtype != "float32":
        return None
    return rw.weights[ref[0]].numpy()


def _max_min_form(rw: Rewriter, add: Node) -> tuple[tuple[str, int], np.ndarray, list[str]] | None:
    """``Maximum(x, 0) + Mul(alpha, Minimum(x, 0))`` (any operand order)."""
    for i in (0, 1):
        mx, mul = rw.nodes.get(add.inputs[i][0]), rw.nodes.get(add.inputs[1 - i][0])
        if mx is None or mul is None or add.inputs[i][1] or add.inputs[1 - i][1]:
            continue
        if _only(rw, mx.name, "Maximum") is None or _only(rw, mul.name, "Mul") is None:
            continue
        x = _clip_arg(rw, mx, "Maximum", 0.0)
        if x is None or len(mul.inputs) != 2:
            continue
        for j in (0, 1):
            mn, alpha = rw.nodes.get(mul.inputs[j][0]), _const_array(rw, mul.inputs[1 - j])
            if mn is None or alpha is None or mul.inputs[j][1] or _only(rw, mn.name, "Minimum") is None:
                continue
            if _clip_arg(rw, mn, "Minimum", 0.0) != x:
                continue
            rw.value(mul.inputs[1 - j][0])
            return x, alpha, [mul.name, mn.name, mx.name]
    return None


def _relu_abs_form(rw: Rewriter, add: Node) -> tuple[tuple[str, int], np.ndarray, list[str]] | None:
    """``Relu(x) + Mul(Sub(x, Abs(x)), m)`` (any order of the Add's and the Mul's operands)."""
    for i in (0, 1):
        relu, mul = rw.nodes.get(add.inputs[i][0]), rw.nodes.get(add.inputs[1 - i][0])
        if relu is None or mul is None or add.inputs[i][1] or add.inputs[1 - i][1]:
            continue
        if _only(rw, relu.name, "Relu") is None or _only(rw, mul.name, "Mul") is None or len(mul.inputs) != 2:
            continue
        x = relu.inputs[0] if len(relu.inputs) == 1 else None
        for j in (0, 1):
            sub, m = rw.nodes.get(mul.inputs[j][0]), _const_array(rw, mul.inputs[1 - j])
            if sub is None or m is None or mul.inputs[j][1] or _only(rw, sub.name, "Sub") is None:
                continue
            if len(sub.inputs) != 2 or sub.inputs[0] != x or sub.inputs[1][1]:
                continue
            ab = _only(rw, sub.inputs[1][0], "Abs")
            if ab is None or ab.inputs != [x]:
                continue
            rw.value(mul.inputs[1 - j][0])
            return x, (m.astype(np.float32) * np.float32(2)), [mul.name, sub.name, ab.name, relu.name]
    return None


def pads_into_convs(rw: Rewriter) -> None:
    """Move zero ``Pad`` nodes into the convolution after them (see the module docstring)."""
    for name in rw.topological():
        conv = rw.nodes.get(name)
        if conv is None or conv.op not in CONVS or not conv.inputs:
            continue
        if (conv.str("data_format") or "NHWC").upper() != "NHWC":
            continue
        padding = (conv.str("padding") or "VALID").upper()
        if padding not in ("VALID", "EXPLICIT"):
            continue
        pad_name, index = conv.inputs[0]
        pad = rw.nodes.get(pad_name)
        if pad is None or index or pad.op not in ("Pad", "PadV2") or pad.controls or rw.only_consumer(pad_name) != name:
            continue
        if used_outputs(rw, pad_name) != {0} or len(pad.inputs) < 2:
            continue
        if pad.op == "PadV2" and (len(pad.inputs) < 3 or _const_array(rw, pad.inputs[2]) is None):
            continue
        if pad.op == "PadV2" and np.any(_const_array(rw, pad.inputs[2]) != 0):
            continue
        paddings = rw.weights.get(pad.inputs[1][0]) if rw.is_const(pad.inputs[1][0]) else None
        if paddings is None or paddings.shape != (4, 2) or pad.inputs[1][1]:
            continue
        p = paddings.numpy().astype(np.int64)
        if np.any(p[0] != 0) or np.any(p[3] != 0) or np.any(p < 0):
            continue
        old = conv.ints("explicit_paddings", [0] * 8) if padding == "EXPLICIT" else [0] * 8
        if len(old) != 8:
            continue
        new = [int(a + b) for a, b in zip(old, p.reshape(-1).tolist(), strict=True)]
        attr = dict(conv.attr)
        attr["padding"] = {"s": "RVhQTElDSVQ="}  # base64 of "EXPLICIT"
        attr["explicit_paddings"] = {"list": {"i": [str(v) for v in new]}}
        rw.value(pad.inputs[1][0])
        inputs = [pad.inputs[0], *conv.inputs[1:]]
        rw.replace(name, Node(name, conv.op, inputs, list(conv.controls), attr, conv.device))
        rw.remove(pad_name)
        rw.stats.add("pads moved into convolutions")
