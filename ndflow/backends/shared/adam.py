"""Adam's update of one variable in one kernel (``_NdflowAdamUpdate``, train/adam.py), on any array type: the ops of
the op-by-op update in their order, each rounded to float32 (the scalars are float32 too)."""

from __future__ import annotations

from typing import Any

import numpy as np

#: The kernel's scalar attributes, in the order the compiled form takes them.
SCALARS = ("beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "correction1", "correction2", "epsilon",
           "negative_lr")  # fmt: skip


def scalars(attrs: dict) -> list[np.float32]:
    """The attributes as float32 numbers (as the op-by-op update's scalar operands)."""
    return [np.float32(attrs[k]) for k in SCALARS]


def adam_update(value: Any, m: Any, v: Any, g: Any, attrs: dict, sqrt: Any) -> tuple[Any, Any, Any]:
    """``(new_value, new_m, new_v)`` with array operations (``sqrt`` the backend's)."""
    b1, c1, b2, c2, d1, d2, eps, neg_lr = scalars(attrs)
    new_m = m * b1 + g * c1
    new_v = v * b2 + (g * g) * c2
    step = (new_m / d1) / (sqrt(new_v / d2) + eps) * neg_lr
    return step + value, new_m, new_v
