"""Matrix ops (TF.js converter category ``matrices``): products, fused products, einsum, transpose."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ...ops.fused import ACTIVATIONS
from ..load.graph import Node
from ._util import attr_num, fail, ints, mapper, num


def _adjoint_operand(x: Tensor, adjoint: bool) -> Tensor:
    """Complex operands of an adjoint product are conjugated (the transpose is the product's job)."""
    if adjoint and x.dtype == "complex64":
        return nf.complex(nf.real(x), nf.neg(nf.imag(x)))
    return x


@mapper("MatMul")
def mat_mul(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``a @ b`` with ``transpose_a``/``transpose_b``."""
    a, b = inputs
    return nf.mat_mul(a, b, bool(node.bool("transpose_a", False)), bool(node.bool("transpose_b", False)))


@mapper("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def batch_mat_mul(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Batched ``a @ b`` with ``adj_x``/``adj_y`` (V2, V3 broadcast the batch; V3 casts to ``Tout``)."""
    a, b = inputs
    adj_x, adj_y = bool(node.bool("adj_x", False)), bool(node.bool("adj_y", False))
    out = node.dtype("Tout")
    if out is not None:
        a, b = (t if t.dtype == out else nf.cast(t, out) for t in (a, b))
    return nf.mat_mul(_adjoint_operand(a, adj_x), _adjoint_operand(b, adj_y), adj_x, adj_y)


@mapper("_FusedMatMul")
def fused_mat_mul(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """MatMul + BiasAdd + activation (``fused_ops``, ``num_args``) in one kernel."""
    a, b, *args = inputs
    args = args[: int(attr_num(node, "num_args", len(args)))]
    fused_ops = [s.lower() for s in node.strs("fused_ops", []) or []]
    kwargs: dict[str, Any] = {"leakyrelu_alpha": attr_num(node, "leakyrelu_alpha", 0.2)}
    if fused_ops and fused_ops[0] == "biasadd":
        if not args:
            raise fail(node, "fused op BiasAdd needs the bias as an extra input")
        kwargs["bias"], args, fused_ops = args[0], args[1:], fused_ops[1:]
    if len(fused_ops) > 1:
        raise fail(node, f"unsupported fused_ops {node.strs('fused_ops')}")
    activation = fused_ops[0] if fused_ops else "linear"
    if activation == "prelu":
        if not args:
            raise fail(node, "fused op Prelu needs its alpha as an extra input")
        kwargs["prelu_activation_weights"] = args[0]
    after = activation == "tanh"
    if not after and activation not in ACTIVATIONS:
        raise fail(node, f"unsupported fused activation {activation!r}")
    y = nf.fused.mat_mul(
        a=a,
        b=b,
        transpose_a=bool(node.bool("transpose_a", False)),
        transpose_b=bool(node.bool("transpose_b", False)),
        activation="linear" if after else activation,
        **kwargs,
    )
    return nf.tanh(y) if after else y


@mapper("Einsum")
def einsum(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Einstein summation over the inputs (``equation`` keeps its case; TF.js lowercases it)."""
    equation = node.str("equation")
    if equation is None:
        raise fail(node, "missing the 'equation' attribute")
    return nf.einsum(equation, *inputs)


@mapper("Transpose")
def transpose(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Axes permuted by ``perm`` (the second input)."""
    x, perm = inputs
    return nf.transpose(x, ints(perm))


@mapper("MatrixBandPart")
def matrix_band_part(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Zero everything outside a band: ``num_lower`` (input 1) and ``num_upper`` (input 2; TF.js
    reads input 1 for both) diagonals, negative meaning all."""
    a, lower, upper = inputs
    return nf.linalg.band_part(a, int(num(lower)), int(num(upper)))
