"""Gradients of element-wise math: trigonometry, Atan2, the exp/log family, Erf, the piecewise
constant kernels (zero gradient), ClipByValue, the NaN/Inf predicates, AddN and ComplexAbs."""

from __future__ import annotations

import math
from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import (
    add,
    cast,
    clone,
    cos,
    cosh,
    div,
    div_no_nan,
    equal,
    exp,
    imag,
    mul,
    neg,
    real,
    sin,
    sinh,
    sqrt,
    square,
    sub,
    where,
    zeros_like,
)
from ._util import unbroadcast

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _float(t: Tensor) -> Tensor:
    return t if t.dtype == "float32" else cast(t, "float32")


def _unary(derivative: Any) -> Any:
    """The gradient ``dy * derivative(x)`` of a unary kernel whose input is saved."""

    def grad(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        (x,) = saved
        return [lambda: mul(dy, derivative(_float(x)))]

    return grad


def _over(denominator: Any) -> Any:
    """The gradient ``dy / denominator(x)`` of a unary kernel whose input is saved."""

    def grad(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        (x,) = saved
        return [lambda: div(dy, denominator(_float(x)))]

    return grad


def _zero(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Piecewise constant kernels (and predicates): zero gradient, float32, in the input's shape."""
    return [lambda: zeros_like(cast(dy, "float32"))]


# d/dx acos = -1 / sqrt(1 - x^2); acosh: 1 / sqrt(x^2 - 1); asin: 1 / sqrt(1 - x^2);
# asinh: 1 / sqrt(1 + x^2); atan: 1 / (1 + x^2); atanh: 1 / (1 - x^2).
register_gradient(kn.Acos, _over(lambda x: neg(sqrt(sub(1.0, square(x))))), inputs_to_save=[0])
register_gradient(kn.Acosh, _over(lambda x: sqrt(sub(square(x), 1.0))), inputs_to_save=[0])
register_gradient(kn.Asin, _over(lambda x: sqrt(sub(1.0, square(x)))), inputs_to_save=[0])
register_gradient(kn.Asinh, _over(lambda x: sqrt(add(square(x), 1.0))), inputs_to_save=[0])
register_gradient(kn.Atan, _over(lambda x: add(square(x), 1.0)), inputs_to_save=[0])
register_gradient(kn.Atanh, _over(lambda x: sub(1.0, square(x))), inputs_to_save=[0])
register_gradient(kn.Cos, _unary(lambda x: neg(sin(x))), inputs_to_save=[0])
register_gradient(kn.Cosh, _unary(sinh), inputs_to_save=[0])
register_gradient(kn.Sin, _unary(cos), inputs_to_save=[0])
register_gradient(kn.Sinh, _unary(cosh), inputs_to_save=[0])
register_gradient(kn.Tan, _over(lambda x: square(cos(x))), inputs_to_save=[0])

register_gradient(kn.Reciprocal, _over(lambda x: neg(square(x))), inputs_to_save=[0])
register_gradient(kn.Expm1, _unary(exp), inputs_to_save=[0])
register_gradient(kn.Log1p, _over(lambda x: add(x, 1.0)), inputs_to_save=[0])
register_gradient(kn.Erf, _unary(lambda x: mul(exp(neg(square(x))), _TWO_OVER_SQRT_PI)), inputs_to_save=[0])

for _name in (kn.Ceil, kn.Floor, kn.Round, kn.Sign, kn.Step, kn.IsNan, kn.IsInf, kn.IsFinite):
    register_gradient(_name, _zero)


def _atan2(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """d atan2(a, b) = (b da - a db) / (a^2 + b^2); each summed back to its input's shape."""
    a, b = saved

    def da() -> Tensor:
        fa, fb = _float(a), _float(b)
        return unbroadcast(mul(dy, div(fb, add(square(fa), square(fb)))), a.shape)

    def db() -> Tensor:
        fa, fb = _float(a), _float(b)
        return unbroadcast(neg(mul(dy, div(fa, add(square(fa), square(fb))))), b.shape)

    return [da, db]


def _clip_by_value(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy where ``clip_value_min <= x <= clip_value_max`` (bounds included, as TF.js), else 0.

    Read off the saved output: x is inside the bounds exactly where clipping left it unchanged
    (``y == x``; NaN, which clipping keeps, is never equal). Two kernels instead of TF.js's five.
    """
    x, y = saved
    return [lambda: where(equal(x, y), dy, 0.0)]


def _add_n(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: clone(dy) for _ in saved]


def _complex_abs(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """The derivative of |z| along the real axis, dy * re(z) / |z| (0 at z = 0).

    A gradient is float32, so that of a complex input can only carry one real derivative: the one
    with respect to its real part. TF.js gives dy * (re(z) > 0 ? 1 : -1) here (its real Abs
    gradient), which finite differences refute wherever im(z) != 0.
    """
    (z,) = saved

    def dx() -> Tensor:
        re = real(z)
        magnitude = sqrt(add(square(re), square(imag(z))))
        return mul(dy, div_no_nan(re, magnitude))

    return [dx]


register_gradient(kn.Atan2, _atan2, inputs_to_save=[0, 1])
register_gradient(kn.ClipByValue, _clip_by_value, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.AddN, _add_n, save_all_inputs=True)
register_gradient(kn.ComplexAbs, _complex_abs, inputs_to_save=[0])
