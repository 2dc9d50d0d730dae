"""Gradients of matrix products (batch dims broadcast, so their gradients are summed back)."""

from __future__ import annotations

from typing import Any

from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import mat_mul
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


register_gradient("BatchMatMul", _batch_mat_mul, inputs_to_save=[0, 1])
