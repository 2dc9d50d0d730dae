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
    """``(new_value, new_m, new_v)`` with array operations (``sqrt`` the backend's, taking ``out=``): each product,
    quotient and sum rounded as the op-by-op update rounds it, into as few new arrays as that allows. The scalars
    are Python floats: numpy (NEP 50) and torch round them to the arrays' float32, as the float32 scalars of the
    op-by-op update (a numpy scalar operand sends torch through a slower path)."""
    b1, c1, b2, c2, d1, d2, eps, neg_lr = (float(x) for x in scalars(attrs))
    new_m = m * b1
    new_m += g * c1
    scaled = g * g
    scaled *= c2
    new_v = v * b2
    new_v += scaled
    step = new_m / d1
    denominator = new_v / d2
    sqrt(denominator, out=denominator)
    denominator += eps
    step /= denominator
    step *= neg_lr
    step += value
    return step, new_m, new_v
