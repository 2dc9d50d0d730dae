"""Gradients of the activation kernels: Elu, Selu, LeakyRelu, Prelu, Relu6, Softplus.

Each is written with public ops (Elu too, where TF.js runs its ``EluGrad`` kernel), so each
gradient is itself differentiable: ``grad(grad(elu))`` works, where TF.js throws.
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import add, cast, exp, greater, less, less_equal, logical_and, mul, sigmoid, where, zeros_like
from ._util import unbroadcast

# The SELU constants (Klambauer et al. 2017), as TF.js: scale * alpha, and scale.
SELU_SCALEALPHA = 1.7580993408473768599402175208123
SELU_SCALE = 1.0507009873554804934193349852946


def _float(t: Tensor) -> Tensor:
    return t if t.dtype == "float32" else cast(t, "float32")


def _elu(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """From the output y: dy where y >= 0, else dy * (y + 1) (= dy * e^x), as TF.js's EluGrad."""
    (y,) = saved
    return [lambda: where(less(y, 0.0), mul(dy, add(y, 1.0)), dy)]


def _selu(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy * scale where x > 0, else dy * scale * alpha * e^x."""
    (x,) = saved

    def dx() -> Tensor:
        fx = _float(x)
        return where(greater(fx, 0.0), mul(dy, SELU_SCALE), mul(mul(dy, SELU_SCALEALPHA), exp(fx)))

    return [dx]


def _leaky_relu(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy where x > 0, else alpha * dy."""
    (x,) = saved
    return [lambda: where(greater(x, 0.0), dy, mul(dy, attrs["alpha"]))]


def _prelu(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Like leaky_relu for x, and dy * x where x <= 0 for alpha; both summed back to their shapes.

    The x gradient is summed too (beyond TF.js, which fails when alpha has more elements than x).
    """
    x, alpha = saved

    def dx() -> Tensor:
        return unbroadcast(where(greater(x, 0.0), dy, mul(dy, _float(alpha))), x.shape)

    def dalpha() -> Tensor:
        fx = _float(x)
        return unbroadcast(where(greater(fx, 0.0), zeros_like(dy), mul(dy, fx)), alpha.shape)

    return [dx, dalpha]


def _relu6(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """dy where 0 < x <= 6, else 0 (TF.js's mask)."""
    (x,) = saved
    return [lambda: mul(dy, cast(logical_and(greater(x, 0.0), less_equal(x, 6.0)), "float32"))]


def _softplus(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: mul(dy, sigmoid(_float(x)))]


register_gradient(kn.Elu, _elu, outputs_to_save=[True])
register_gradient(kn.Selu, _selu, inputs_to_save=[0])
register_gradient(kn.LeakyRelu, _leaky_relu, inputs_to_save=[0])
register_gradient(kn.Prelu, _prelu, inputs_to_save=[0, 1])
register_gradient(kn.Relu6, _relu6, inputs_to_save=[0])
register_gradient(kn.Softplus, _softplus, inputs_to_save=[0])
