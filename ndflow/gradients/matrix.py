"""Gradients of matrix products: BatchMatMul (batch dims broadcast, so their gradients are summed back), Einsum."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import broadcast_to, einsum, mat_mul, reshape
from ._util import unbroadcast


def _batch_mat_mul(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved
    ta, tb = attrs.get("transpose_a", False), attrs.get("transpose_b", False)

    def da() -> Tensor:
        if not ta:
            g = mat_mul(dy, b, False, not tb)
        else:
            g = mat_mul(b, dy, tb, True)
        return unbroadcast(g, a.shape)

    def db() -> Tensor:
        if not tb:
            g = mat_mul(a, dy, not ta, False)
        else:
            g = mat_mul(dy, a, True, ta)
        return unbroadcast(g, b.shape)

    return [da, db]


def _einsum(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Each operand's gradient is an einsum of dy with the other operands, onto the operand's labels.

    Labels of an operand found nowhere else (summed away by the forward pass) cannot be an einsum
    output: the gradient is computed without them and broadcast along them. Beyond TF.js (no gradient).
    """
    inputs, output = attrs["equation"].split("->")
    terms = inputs.split(",")

    def grad_of(k: int) -> Tensor:
        x, term = saved[k], terms[k]
        others = [t for i, t in enumerate(terms) if i != k]
        known = set(output).union(*others)
        kept = "".join(label for label in term if label in known)
        equation = ",".join([output, *others]) + "->" + kept
        g = einsum(equation, dy, *[t for i, t in enumerate(saved) if i != k])
        if kept != term:
            kept_shape = [d if label in known else 1 for label, d in zip(term, x.shape, strict=True)]
            g = broadcast_to(reshape(g, kept_shape), list(x.shape))
        return g

    return [lambda k=k: grad_of(k) for k in range(len(terms))]


register_gradient(kn.BatchMatMul, _batch_mat_mul, inputs_to_save=[0, 1])
register_gradient(kn.Einsum, _einsum, save_all_inputs=True)
