"""Op fusion at load: a product, the per-channel affine ops after it and one activation become one node.

A chain starts at ``Conv2D``, ``DepthwiseConv2dNative`` or ``MatMul`` with a constant filter (or at an
already fused node whose only extra is a constant bias), and takes, while each node is the only
consumer of the one before and is not a model output:

- ``BiasAdd``/``Add``/``AddV2``/``Sub`` of a constant, ``Mul``/``RealDiv`` by a constant, where the
  constant is a scalar or varies along the output channels only (NHWC, or a MatMul's columns);
- ``FusedBatchNorm``/``V2``/``V3`` in inference form (constant scale, offset, mean and variance, only
  ``y`` used);
- then one activation: ``Relu``, ``Relu6``, ``Elu``, ``LeakyRelu``, ``Sigmoid``, ``Tanh`` or ``Prelu``
  (constant slopes along the channels).

The scales multiply into the filter and everything else adds up into one bias, computed in float64 and
rounded once to float32 (``y = conv(x, W) * s + b`` becomes ``conv(x, W * s) + b``: the same function,
rounded differently). The chain becomes ``_FusedConv2D``/``FusedDepthwiseConv2dNative``/``_FusedMatMul``
(the ops and mappers TF.js's converter produces) named after the chain's last node, so outputs keep their
names.

Residual adds (:func:`fuse_residual_adds`, after the chains): a fused (depthwise) convolution whose
only fused op is its bias (or none) and whose only consumer is an ``Add``/``AddV2`` (or an ``AddN`` of two
inputs, which TF's grappler writes for ``conv + residual``) takes the Add's
other operand as a residual input, an add of a per-channel constant after it into its bias (``(conv + r) + c``
runs as ``(conv + c) + r``), and the activation after that when there is one, becoming
``_NdflowResidualConv2D``/``_NdflowResidualDepthwiseConv2d`` (ndflow-internal ops; the kernels are
TF.js's FusedConv2D/FusedDepthwiseConv2D with ndflow's ``residual`` input). Their mapper, here, adds
the residual inside the kernel when it has the output's exact shape, and falls back to the unfused
``Add`` (then the activation) when it broadcasts.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import ops
from ..load.graph import Node
from ..mappers._util import attr_num
from .rewrite import Rewriter, used_outputs

FUSED = {
    "Conv2D": "_FusedConv2D",
    "DepthwiseConv2dNative": "FusedDepthwiseConv2dNative",
    "DepthwiseConv2d": "FusedDepthwiseConv2dNative",
    "MatMul": "_FusedMatMul",
    "_FusedConv2D": "_FusedConv2D",
    "FusedDepthwiseConv2dNative": "FusedDepthwiseConv2dNative",
    "_FusedMatMul": "_FusedMatMul",
}
ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh", "Prelu"})
ADDS = frozenset({"BiasAdd", "Add", "AddV2"})
BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})


@dataclass
class Chain:
    """A product node and what folds into it."""

    head: Node
    x: tuple[str, int]
    filter: str
    bias: str | None  # the producer's own constant bias
    channels: int
    rank: int  # rank of the product's output
    members: list[str] = field(default_factory=list)  # the nodes after the head, in order
    scale: np.ndarray | None = None  # float64, per output channel
    shift: np.ndarray | None = None  # float64, per output channel (bias added after the scale)
    activation: str | None = None
    alpha: str | None = None  # Prelu slopes (a Const node)
    leaky: float = 0.2
    baked: list[str] = field(default_factory=list)  # constants read into the new filter/bias
    shift_srcs: list[str] = field(default_factory=list)  # constants added (baked unless reused as the bias)

    @property
    def last(self) -> str:
        return self.members[-1] if self.members else self.head.name


def _strs(values: list[str]) -> dict:
    return {"list": {"s": [base64.b64encode(v.encode()).decode() for v in values]}}


def _fused_ops(node: Node) -> list[str]:
    return [s.lower() for s in node.strs("fused_ops", []) or []]


def _start(rw: Rewriter, node: Node) -> Chain | None:
    """The chain's head: a product with a constant float filter, channels-last, nothing fused after its bias."""
    if node.op not in FUSED or len(node.inputs) < 2 or not rw.is_const(node.inputs[1][0]):
        return None
    if node.inputs[1][1] != 0 or used_outputs(rw, node.name) - {0}:
        return None
    f = rw.weights[node.inputs[1][0]]
    if f.dtype != "float32":
        return None
    bias = None
    if node.op.startswith("_Fused") or node.op.startswith("Fused"):
        fused = _fused_ops(node)
        n_args = int(attr_num(node, "num_args", len(node.inputs) - 2))
        if fused != ["biasadd"] or n_args != 1 or len(node.inputs) != 3 or not rw.is_const(node.inputs[2][0]):
            return None
        bias = node.inputs[2][0]
    if node.op in ("MatMul", "_FusedMatMul"):
        if f.rank != 2:
            return None
        channels = f.shape[0] if node.bool("transpose_b", False) else f.shape[1]
        rank = 2
    else:
        if (node.str("data_format") or "NHWC").upper() != "NHWC" or f.rank != 4:
            return None
        channels = f.shape[3] if "Depthwise" not in node.op else f.shape[2] * f.shape[3]
        rank = 4
    return Chain(node, node.inputs[0], node.inputs[1][0], bias, channels, rank)


def _per_channel(rw: Rewriter, name: str, chain: Chain) -> np.ndarray | None:
    """A constant that is a scalar or varies along the last axis only (as float64 [channels]), else None."""
    if not rw.is_const(name):
        return None
    t = rw.weights[name]
    if t.dtype != "float32" or t.rank > chain.rank or any(d != 1 for d in t.shape[:-1]):
        return None
    if t.rank and t.shape[-1] not in (1, chain.channels):
        return None
    values = t.numpy().astype(np.float64).reshape(-1)
    return np.broadcast_to(values, (chain.channels,)).copy()


def _other(node: Node, cur: str) -> tuple[str, int] | None:
    """For a binary node reading ``cur`` once: the other input and ``cur``'s position."""
    if len(node.inputs) != 2:
        return None
    (a, ia), (b, ib) = node.inputs
    if a == cur and b != cur:
        return (b, 0) if ib == 0 else None
    if b == cur and a != cur:
        return (a, 1) if ia == 0 else None
    return None


def _affine(rw: Rewriter, node: Node, chain: Chain) -> tuple[np.ndarray | None, np.ndarray | None] | None:
    """``(scale, shift)`` of an affine node after the chain's last node, or None when it does not fold."""
    cur = chain.last
    if node.op in BATCH_NORMS:
        if len(node.inputs) < 5 or node.inputs[0] != (cur, 0) or used_outputs(rw, node.name) - {0}:
            return None
        if (node.str("data_format") or "NHWC").upper() != "NHWC" or node.bool("is_training", False):
            return None
        params = [_per_channel(rw, src, chain) for src, _ in node.inputs[1:5]]
        sizes = [rw.weights[src].size for src, _ in node.inputs[1:5]]
        if any(p is None for p in params) or any(n != chain.channels for n in sizes):
            return None
        scale, offset, mean, variance = params
        eps = float(np.float32(attr_num(node, "epsilon", 1e-4)))
        mult = scale / np.sqrt(variance + eps)
        chain.baked += [src for src, _ in node.inputs[1:5]]
        return mult, offset - mean * mult
    pair = _other(node, cur)
    if pair is None:
        return None
    other, position = pair
    c = _per_channel(rw, other, chain)
    if c is None:
        return None
    if node.op in ADDS:
        if node.op == "BiasAdd" and (position != 0 or (node.str("data_format") or "NHWC").upper() != "NHWC"):
            return None
        chain.shift_srcs.append(other)
        return None, c
    if node.op == "Sub":
        scale, shift = (None, -c) if position == 0 else (-np.ones_like(c), c)
    elif node.op == "Mul":
        scale, shift = c, None
    elif node.op in ("RealDiv", "Div") and position == 0 and np.all(c != 0):
        scale, shift = 1.0 / c, None
    else:
        return None
    chain.baked.append(other)
    return scale, shift


def _apply(chain: Chain, scale: np.ndarray | None, shift: np.ndarray | None) -> None:
    """Compose ``y -> y * scale + shift`` after the chain's affine map so far."""
    if scale is not None:
        chain.scale = scale if chain.scale is None else chain.scale * scale
        if chain.shift is not None:
            chain.shift = chain.shift * scale
    if shift is not None:
        chain.shift = shift if chain.shift is None else chain.shift + shift


def _activation(rw: Rewriter, node: Node, chain: Chain) -> bool:
    """Take ``node`` as the chain's activation when it is one that folds."""
    if node.op not in ACTIVATIONS or not node.inputs or node.inputs[0] != (chain.last, 0):
        return False
    if node.op == "Prelu":
        if len(node.inputs) != 2 or not rw.is_const(node.inputs[1][0]) or node.inputs[1][1] != 0:
            return False
        alpha = rw.weights[node.inputs[1][0]]
        allowed = (0, 1, 3) if chain.rank == 4 else (0, 1, 2)
        if alpha.dtype != "float32" or alpha.rank not in allowed or any(d != 1 for d in alpha.shape[:-1]):
            return False
        if alpha.rank and alpha.shape[-1] not in (1, chain.channels):
            return False
        chain.alpha = node.inputs[1][0]
    elif len(node.inputs) != 1:
        return False
    if node.op == "LeakyRelu":
        chain.leaky = float(attr_num(node, "alpha", 0.2))
    chain.activation = node.op
    return True


def _grow(rw: Rewriter, chain: Chain) -> None:
    """Extend the chain through affine nodes, then one activation."""
    while True:
        nxt = rw.only_consumer(chain.last)
        if nxt is None:
            return
        node = rw.nodes[nxt]
        if node.controls:
            return
        if _activation(rw, node, chain):
            chain.members.append(nxt)
            return
        if chain.bias is not None and _per_channel(rw, chain.bias, chain) is None:
            return  # a bias of another shape: only an activation can follow it
        affine = _affine(rw, node, chain)
        if affine is None:
            return
        _apply(chain, *affine)
        chain.members.append(nxt)


def _scaled_filter(rw: Rewriter, chain: Chain) -> str:
    """The filter with the chain's scale multiplied in along the output channels (a new Const)."""
    head, scale = chain.head, chain.scale
    w = rw.value(chain.filter).numpy().astype(np.float64)
    if head.op in ("MatMul", "_FusedMatMul"):
        w = w * (scale[:, None] if head.bool("transpose_b", False) else scale[None, :])
    elif "Depthwise" in head.op:
        w = w * scale.reshape(w.shape[2], w.shape[3])
    else:
        w = w * scale
    return rw.add_const(f"{chain.last}/folded_filter", ops.tensor(w.astype(np.float32)))


def _bias(rw: Rewriter, chain: Chain) -> str | None:
    """The fused node's bias input: the head's own bias when nothing changed it, else a new Const."""
    if chain.scale is None and chain.shift is None:
        return chain.bias
    srcs = chain.shift_srcs
    if chain.scale is None and chain.bias is None and len(srcs) == 1 and len(chain.baked) == 0:
        t = rw.weights[srcs[0]]
        if t.shape == (chain.channels,):
            return srcs[0]  # a plain bias: used as it is
    chain.baked += srcs
    b = np.zeros(chain.channels) if chain.bias is None else _per_channel(rw, chain.bias, chain)
    if b is None:
        raise AssertionError(f"graph optimizer: the bias of '{chain.head.name}' is not per-channel")
    if chain.bias is not None:
        rw.value(chain.bias)
    if chain.scale is not None:
        b = b * chain.scale
    if chain.shift is not None:
        b = b + chain.shift
    return rw.add_const(f"{chain.last}/folded_bias", ops.tensor(b.astype(np.float32)))


def _fused_attr(head: Node, chain: Any, bias: tuple[str, int] | None) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The extra inputs (bias, then the activation's alpha) and the attributes of a fused node replacing
    ``head`` and ``chain``: ``fused_ops``, ``num_args`` and ``leakyrelu_alpha`` as TF's converter writes them."""
    fused_ops: list[str] = []
    args: list[tuple[str, int]] = []
    if bias is not None:
        fused_ops.append("BiasAdd")
        args.append(bias)
    if chain.activation is not None:
        fused_ops.append(chain.activation)
        if chain.alpha is not None:
            args.append((chain.alpha, 0))
    attr = {k: v for k, v in head.attr.items() if k not in ("fused_ops", "num_args", "epsilon", "leakyrelu_alpha")}
    attr["fused_ops"] = _strs(fused_ops)
    attr["num_args"] = {"i": str(len(args))}
    if chain.activation == "LeakyRelu":
        attr["leakyrelu_alpha"] = {"f": chain.leaky}
    return args, attr


def _emit(rw: Rewriter, chain: Chain) -> None:
    """Replace the chain by one fused node named after its last node."""
    head = chain.head
    filt = _scaled_filter(rw, chain) if chain.scale is not None else chain.filter
    bias = _bias(rw, chain)
    for name in chain.baked:
        rw.value(name)
    args, attr = _fused_attr(head, chain, None if bias is None else (bias, 0))
    controls = [c for n in [head.name, *chain.members] for c in rw.nodes[n].controls]
    members = {head.name, *chain.members}
    kept = [c for c in controls if c not in members]
    fused = Node(chain.last, FUSED[head.op], [chain.x, (filt, 0), *args], kept, attr, head.device)
    rw.replace(chain.last, fused)
    for name in reversed([head.name, *chain.members[:-1]]):
        rw.remove(name)
    rw.stats.add("fused", len(chain.members))
    if chain.scale is not None:
        rw.stats.add("scales folded into filters")


def fuse_products(rw: Rewriter) -> None:
    """Fuse every product chain (see the module docstring)."""
    for name in rw.topological():
        node = rw.nodes.get(name)
        if node is None:
            continue
        chain = _start(rw, node)
        if chain is None:
            continue
        _grow(rw, chain)
        if chain.members:
            _emit(rw, chain)
    fuse_residual_adds(rw)


# ----------------------------------------------------------------------------- residual adds

RESIDUAL = {
    "_FusedConv2D": "_NdflowResidualConv2D",
    "Conv2D": "_NdflowResidualConv2D",
    "FusedDepthwiseConv2dNative": "_NdflowResidualDepthwiseConv2d",
    "DepthwiseConv2dNative": "_NdflowResidualDepthwiseConv2d",
    "DepthwiseConv2d": "_NdflowResidualDepthwiseConv2d",
}


def _residual_head(rw: Rewriter, node: Node) -> Chain | None:
    """A convolution that can take a residual: constant float32 NHWC filter, at most a bias fused."""
    if node.op not in RESIDUAL or len(node.inputs) < 2 or not rw.is_const(node.inputs[1][0]):
        return None
    if node.inputs[1][1] != 0 or used_outputs(rw, node.name) - {0} or node.controls:
        return None
    f = rw.weights[node.inputs[1][0]]
    if f.dtype != "float32" or f.rank != 4 or (node.str("data_format") or "NHWC").upper() != "NHWC":
        return None
    bias = None
    if node.op.startswith("_Fused") or node.op.startswith("Fused"):
        fused = _fused_ops(node)
        n_args = int(attr_num(node, "num_args", len(node.inputs) - 2))
        if fused not in ([], ["biasadd"]) or n_args != len(fused) or len(node.inputs) != 2 + n_args:
            return None
        bias = node.inputs[2][0] if fused else None
    elif len(node.inputs) != 2:
        return None
    channels = f.shape[3] if "Depthwise" not in node.op else f.shape[2] * f.shape[3]
    return Chain(node, node.inputs[0], node.inputs[1][0], bias, channels, 4)


def _fuse_residual(rw: Rewriter, chain: Chain) -> bool:
    """Take the Add after ``chain.head`` (and an activation after it) into one residual node."""
    head = chain.head
    name = rw.only_consumer(head.name)
    if name is None:
        return False
    add = rw.nodes[name]
    if add.op not in ("Add", "AddV2", "AddN") or add.controls:  # AddN of two: a + b, as Add
        return False
    if len(add.inputs) != 2 or [src for src, _ in add.inputs].count(head.name) != 1:
        return False
    other = next(ref for ref in add.inputs if ref[0] != head.name)
    if rw.is_const(other[0]):
        return False  # a constant addend broadcasts (one along the channels folded into the bias already)
    chain.members.append(name)
    nxt = rw.only_consumer(name)
    if nxt is not None and not rw.nodes[nxt].controls and _bias_after(rw, rw.nodes[nxt], chain):
        chain.members.append(nxt)
        nxt = rw.only_consumer(nxt)
    if nxt is not None and not rw.nodes[nxt].controls and _activation(rw, rw.nodes[nxt], chain):
        chain.members.append(nxt)
    bias: tuple[str, int] | None = None if chain.bias is None else head.inputs[2]
    if chain.shift is not None:
        bias = (_bias(rw, chain), 0)  # type: ignore[assignment]
        for const in chain.baked:
            rw.value(const)
    args, attr = _fused_attr(head, chain, bias)
    inputs = [chain.x, (chain.filter, 0), *args, other]
    fused = Node(chain.last, RESIDUAL[head.op], inputs, [], attr, head.device)
    rw.replace(chain.last, fused)
    for member in reversed([head.name, *chain.members[:-1]]):
        rw.remove(member)
    rw.stats.add("residual adds fused")
    return True


def _bias_after(rw: Rewriter, node: Node, chain: Chain) -> bool:
    """Take ``node``, an add of a per-channel constant after the residual add, into the chain's bias (TF's
    grappler moves a bias after ``conv + residual``): ``(conv + r) + c`` runs as ``(conv + c) + r``."""
    if node.op not in ADDS:
        return False
    pair = _other(node, chain.last)
    if pair is None or (node.op == "BiasAdd" and (pair[1] != 0 or (node.str("data_format") or "NHWC") != "NHWC")):
        return False
    c = _per_channel(rw, pair[0], chain)
    if c is None or (chain.bias is not None and _per_channel(rw, chain.bias, chain) is None):
        return False
    chain.shift_srcs.append(pair[0])
    chain.shift = c
    return True


def fuse_residual_adds(rw: Rewriter) -> None:
    """Fuse ``conv (+ bias) -> Add(other) [-> activation]`` (Add, AddV2 or AddN of two; see the module
    docstring)."""
    for name in rw.topological():
        node = rw.nodes.get(name)
        if node is None:
            continue
        chain = _residual_head(rw, node)
        if chain is not None:
            _fuse_residual(rw, chain)
