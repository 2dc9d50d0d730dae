"""Hard swish at load: ``x * relu6(x + 3) * c`` (MobileNetV3's activation, ``c`` about 1/6) as one node.

TF's converter writes it as four element-wise nodes: ``AddV2(x, 3)``, ``Relu6``, and two ``Mul``s, either
``(x * c) * relu6(...)`` or ``(x * relu6(...)) * c``. Each is a pass over the activation (memory-bound on the
large early layers of selfie, meet, centernet, rvm). The chain becomes ``_NdflowHardSwish(x, three, c)`` with
attribute ``order`` (``"scale_first"`` or ``"scale_last"``: which product comes first, as the graph had it),
named after the chain's last node. Its mapper runs the backend's one-pass kernel where the backend registers
``_NdflowHardSwish`` (the cpu backend does, computing the same float32 operations in the same order, so the
same bits), and the four ops otherwise.

Only scalar float32 constants qualify (``3`` and ``c`` are constants of one value), and the inner nodes must
have no other consumer.
"""

from __future__ import annotations

import base64

from ..load.graph import Node
from .rewrite import Rewriter

HARD_SWISH = "_NdflowHardSwish"


def _scalar(rw: Rewriter, ref: tuple[str, int]) -> bool:
    """Whether ``ref`` is a one-value float32 constant of rank 0 or 1."""
    if ref[1] != 0 or not rw.is_const(ref[0]):
        return False
    t = rw.weights[ref[0]]
    return t.dtype == "float32" and t.size == 1 and t.rank <= 1


def _split(rw: Rewriter, node: Node) -> tuple[tuple[str, int], str] | None:
    """A binary node's (variable input, scalar constant) or None."""
    if len(node.inputs) != 2 or node.controls:
        return None
    a, b = node.inputs
    if _scalar(rw, b) and not _scalar(rw, a):
        return a, b[0]
    if _scalar(rw, a) and not _scalar(rw, b):
        return b, a[0]
    return None


def _match(rw: Rewriter, relu6: Node) -> tuple[tuple[str, int], str, str, str, list[str]] | None:
    """``(x, three, c, order, inner nodes)`` of the hard swish ending after ``relu6``, or None. The last node
    of the chain is the one after the inner nodes' last."""
    if len(relu6.inputs) != 1 or relu6.controls or relu6.inputs[0][1] != 0:
        return None
    add = rw.nodes.get(relu6.inputs[0][0])
    if add is None or add.op not in ("Add", "AddV2") or rw.only_consumer(add.name) != relu6.name:
        return None
    split = _split(rw, add)
    if split is None or float(rw.weights[split[1]].numpy().reshape(-1)[0]) != 3.0:
        return None
    x, three = split
    mul_name = rw.only_consumer(relu6.name)
    mul = rw.nodes.get(mul_name) if mul_name else None
    if mul is None or mul.op != "Mul" or len(mul.inputs) != 2 or mul.controls:
        return None
    other = next((ref for ref in mul.inputs if ref != (relu6.name, 0)), None)
    if other is None:
        return None
    if other == x:  # (x * relu6) * c
        last_name = rw.only_consumer(mul.name)
        last = rw.nodes.get(last_name) if last_name else None
        if last is None or last.op != "Mul":
            return None
        scaled = _split(rw, last)
        if scaled is None or scaled[0] != (mul.name, 0):
            return None
        return x, three, scaled[1], "scale_last", [add.name, relu6.name, mul.name, last.name]
    scale_node = rw.nodes.get(other[0])  # (x * c) * relu6
    if scale_node is None or scale_node.op != "Mul" or other[1] != 0 or rw.only_consumer(scale_node.name) != mul.name:
        return None
    scaled = _split(rw, scale_node)
    if scaled is None or scaled[0] != x:
        return None
    return x, three, scaled[1], "scale_first", [add.name, relu6.name, scale_node.name, mul.name]


def fuse_hard_swish(rw: Rewriter) -> None:
    """Replace each hard swish chain (see the module docstring) by one ``_NdflowHardSwish`` node."""
    for node in rw.nodes_of("Relu6"):
        found = _match(rw, node)
        if found is None:
            continue
        x, three, scale, order, members = found
        if rw.fuse_chain(members, HARD_SWISH, [x, (three, 0), (scale, 0)], {"order": {"s": _b64(order)}}):
            rw.stats.add("hard swish fused")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
