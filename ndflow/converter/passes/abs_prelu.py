"""A PReLU written with ``Abs`` at load: ``x + (x - |x|) * c`` as one node.

MobileFaceNet's converted graph writes the PReLU after each depthwise convolution as four element-wise nodes:
``Abs(x)``, ``Sub(x, abs)``, ``Mul(sub, c)`` (``c`` a constant: half the slope less one, per channel) and
``Add(x, mul)``. Each is a pass over the activation. The chain becomes ``_NdflowAbsPrelu(x, c)``, named after
its ``Add``. Its mapper runs the backend's one-pass kernel where the backend registers ``_NdflowAbsPrelu``
(the cpu backend does, computing the same float32 operations in the same order, so the same bits; the
products and sums are commutative, so the operands' order in the graph does not matter), and the four ops
otherwise.

Only a float32 constant ``c`` qualifies, and ``Abs``, ``Sub`` and ``Mul`` must have no other consumer.
"""

from __future__ import annotations

from ..load.graph import Node
from .rewrite import Rewriter

ABS_PRELU = "_NdflowAbsPrelu"


def _match(rw: Rewriter, abs_node: Node) -> tuple[tuple[str, int], str, list[str]] | None:
    """``(x, c, members)`` of the chain from ``abs_node``, its ``Add`` last; or None."""
    if abs_node.op != "Abs" or len(abs_node.inputs) != 1 or abs_node.controls:
        return None
    x = abs_node.inputs[0]
    sub = rw.nodes.get(rw.only_consumer(abs_node.name) or "")
    if sub is None or sub.op != "Sub" or sub.controls or sub.inputs != [x, (abs_node.name, 0)]:
        return None
    mul = rw.nodes.get(rw.only_consumer(sub.name) or "")
    if mul is None or mul.op != "Mul" or mul.controls or len(mul.inputs) != 2:
        return None
    (c,) = [ref for ref in mul.inputs if ref != (sub.name, 0)] or [None]
    if c is None or c[1] != 0 or not rw.is_const(c[0]) or rw.weights[c[0]].dtype != "float32":
        return None
    add = rw.nodes.get(rw.only_consumer(mul.name) or "")
    if add is None or add.op not in ("Add", "AddV2") or add.controls or len(add.inputs) != 2:
        return None
    if sorted(add.inputs) != sorted([x, (mul.name, 0)]):
        return None
    return x, c[0], [abs_node.name, sub.name, mul.name, add.name]


def fuse_abs_prelu(rw: Rewriter) -> None:
    """Replace each chain (see the module docstring) by one ``_NdflowAbsPrelu`` node."""
    for node in rw.nodes_of("Abs"):
        found = _match(rw, node)
        if found is not None and rw.fuse_chain(found[2], ABS_PRELU, [found[0], (found[1], 0)]):
            rw.stats.add("abs prelu fused")
