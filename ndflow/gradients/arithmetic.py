"""Gradients of element-wise binary arithmetic (broadcasting inputs get their summed gradient)."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import (
    cast,
    div,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    mul,
    neg,
    pow,
    square,
    sub,
    where,
    zeros_like,
)
from ._util import unbroadcast


def _add(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved
    return [lambda: unbroadcast(dy, a.shape), lambda: unbroadcast(dy, b.shape)]


def _sub(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved
    return [lambda: unbroadcast(dy, a.shape), lambda: neg(unbroadcast(dy, b.shape))]


def _mul(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved
    return [
        lambda: unbroadcast(mul(dy, cast(b, "float32")), a.shape),
        lambda: unbroadcast(mul(dy, cast(a, "float32")), b.shape),
    ]


def _div(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved

    def db() -> Tensor:
        fa, fb = cast(a, "float32"), cast(b, "float32")
        return unbroadcast(neg(div(mul(dy, fa), square(fb))), b.shape)

    return [lambda: unbroadcast(div(dy, cast(b, "float32")), a.shape), db]


def _floor_div(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """floor(a / b) is piecewise constant: its gradient is zero (where defined).

    Beyond TF.js, which gives the real-division gradient here, one that finite differences refute
    (and that disagrees with its own zero gradient of ``floor``).
    """
    a, b = saved
    return [lambda: zeros_like(cast(a, "float32")), lambda: zeros_like(cast(b, "float32"))]


def _mod(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    from ..ops import floor  # element-wise family; looked up when the gradient runs

    a, b = saved
    return [
        lambda: unbroadcast(dy, a.shape),
        lambda: unbroadcast(mul(dy, neg(floor(div(cast(a, "float32"), cast(b, "float32"))))), b.shape),
    ]


def _pow(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    base, exp, y = saved

    def dbase() -> Tensor:
        fexp = cast(exp, "float32")
        return unbroadcast(mul(dy, mul(fexp, pow(base, sub(fexp, 1.0)))), base.shape)

    def dexp() -> Tensor:
        fbase = cast(base, "float32")
        safe_log = where(greater(fbase, 0.0), log(fbase), zeros_like(fbase))
        return unbroadcast(mul(dy, mul(y, safe_log)), exp.shape)

    return [dbase, dexp]


def _extremum(a_wins: Any, b_wins: Any) -> Any:
    """The gradient goes to whichever input was picked (``a`` on ties, as TF.js)."""

    def grad(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        a, b = saved
        return [
            lambda: unbroadcast(mul(dy, cast(a_wins(a, b), "float32")), a.shape),
            lambda: unbroadcast(mul(dy, cast(b_wins(a, b), "float32")), b.shape),
        ]

    return grad


def _squared_difference(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = saved

    def da() -> Tensor:
        return unbroadcast(mul(dy, mul(sub(a, b), 2.0)), a.shape)

    def db() -> Tensor:
        return unbroadcast(mul(dy, mul(sub(b, a), 2.0)), b.shape)

    return [da, db]


register_gradient(kn.Add, _add, inputs_to_save=[0, 1])
register_gradient(kn.Sub, _sub, inputs_to_save=[0, 1])
register_gradient(kn.Multiply, _mul, inputs_to_save=[0, 1])
register_gradient(kn.RealDiv, _div, inputs_to_save=[0, 1])
register_gradient(kn.FloorDiv, _floor_div, inputs_to_save=[0, 1])
register_gradient(kn.Mod, _mod, inputs_to_save=[0, 1])
register_gradient(kn.Pow, _pow, inputs_to_save=[0, 1], outputs_to_save=[True])
register_gradient(kn.Maximum, _extremum(greater_equal, less), inputs_to_save=[0, 1])
register_gradient(kn.Minimum, _extremum(less_equal, greater), inputs_to_save=[0, 1])
register_gradient(kn.SquaredDifference, _squared_difference, inputs_to_save=[0, 1])
