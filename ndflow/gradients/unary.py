"""Gradients of the core element-wise unary kernels and activations."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import cast, div, greater, mul, neg, pow, sqrt, square, step, sub, sum, where


def _float(t: Tensor) -> Tensor:
    return t if t.dtype == "float32" else cast(t, "float32")


def _neg(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: neg(dy)]


def _abs(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved  # TF.js: dy * step(x, -1): +1 above zero, -1 at and below it
    return [lambda: mul(dy, where(greater(_float(x), 0.0), 1.0, -1.0))]


def _exp(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (y,) = saved
    return [lambda: mul(dy, y)]


def _log(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: div(dy, _float(x))]


def _sqrt(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: div(dy, mul(sqrt(_float(x)), 2.0))]


def _rsqrt(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: neg(div(dy, mul(pow(_float(x), 1.5), 2.0)))]


def _square(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: mul(dy, mul(_float(x), 2.0))]


def _tanh(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (y,) = saved
    return [lambda: mul(dy, sub(1.0, square(y)))]


def _sigmoid(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (y,) = saved
    return [lambda: mul(dy, mul(y, sub(1.0, y)))]


def _relu(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    # TF.js: dy * step(x) (1 above zero, 0 elsewhere, NaN where x is NaN): two kernels
    return [lambda: mul(dy, step(_float(x)))]


def _softmax(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (y,) = saved

    def dx() -> Tensor:
        dy_y = mul(dy, y)
        return sub(dy_y, mul(sum(dy_y, [attrs["dim"]], True), y))

    return [dx]


register_gradient(kn.Neg, _neg)
register_gradient(kn.Abs, _abs, inputs_to_save=[0])
register_gradient(kn.Exp, _exp, outputs_to_save=[True])
register_gradient(kn.Log, _log, inputs_to_save=[0])
register_gradient(kn.Sqrt, _sqrt, inputs_to_save=[0])
register_gradient(kn.Rsqrt, _rsqrt, inputs_to_save=[0])
register_gradient(kn.Square, _square, inputs_to_save=[0])
register_gradient(kn.Tanh, _tanh, outputs_to_save=[True])
register_gradient(kn.Sigmoid, _sigmoid, outputs_to_save=[True])
register_gradient(kn.Relu, _relu, inputs_to_save=[0])
register_gradient(kn.Softmax, _softmax, outputs_to_save=[True])
