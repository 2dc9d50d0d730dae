"""Element-wise unary math: Neg, Abs, Exp, Log, Sqrt, Rsqrt, Square, Tanh; trigonometry (Acos ...
Tanh); rounding (Ceil, Floor, Round, Sign); Reciprocal, Expm1, Log1p, Erf, Step, ClipByValue;
and the predicates IsNan, IsInf, IsFinite.

``Round`` is torch.round: round half to even, TF.js's banker's rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ..backend import TorchBackend
from .binary import store
from .common import F, Output, keep, out, torch_kernel, values_of

Fn = Callable[[torch.Tensor, dict | None], torch.Tensor]


def _float_unary(name: str, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """A kernel whose output is float32 whatever the input (complex64 stays complex64)."""

    def run(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        v = values_of(backend, x)
        if x.dtype == "complex64":
            return out(backend, fn(v), "complex64", x.shape)
        if x.dtype != "float32":
            return out(backend, fn(v.to(F())), "float32", x.shape)
        return keep(backend, fn(v), x.shape, "float32")

    run.__name__ = name
    torch_kernel(name)(run)
    register_direct(name, "torch", fn)


_float_unary("Exp", torch.exp)
_float_unary("Log", torch.log)
_float_unary("Sqrt", torch.sqrt)
_float_unary("Rsqrt", torch.rsqrt)
_float_unary("Tanh", torch.tanh)


def same_dtype_unary(name: str, fn: Fn, direct: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
    """A kernel whose output has the input's dtype (TF.js's ``unaryKernelFunc``).

    float32 is computed in float32; int32 and bool inputs are computed in float64 (JS numbers) and
    stored back as TF.js's typed arrays store them. ``fn(values, attrs)`` gets the attributes;
    ``direct``, where given, is ``fn`` without them (the float32 form for the engine's fast path).
    """

    def run(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        v = values_of(backend, x)
        if x.dtype == "float32":
            return keep(backend, fn(v, attrs), x.shape, "float32")
        return out(backend, store(fn(v.double(), attrs), x.dtype), x.dtype, x.shape)

    run.__name__ = name
    torch_kernel(name)(run)
    if direct is not None:
        register_direct(name, "torch", direct)


for _name, _fn in {
    "Acos": torch.acos,
    "Acosh": torch.acosh,
    "Asin": torch.asin,
    "Asinh": torch.asinh,
    "Atan": torch.atan,
    "Atanh": torch.atanh,
    "Cos": torch.cos,
    "Cosh": torch.cosh,
    "Sin": torch.sin,
    "Sinh": torch.sinh,
    "Tan": torch.tan,
    "Ceil": torch.ceil,
    "Floor": torch.floor,
    "Round": torch.round,  # half to even
    "Reciprocal": torch.reciprocal,
    "Expm1": torch.expm1,
    "Log1p": torch.log1p,
}.items():
    same_dtype_unary(_name, lambda v, attrs, f=_fn: f(v), _fn)


def _sign(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    return torch.sign(v)  # torch.sign(NaN) is 0, as TF.js's


# Abramowitz & Stegun 7.1.26, the approximation TF.js uses (|error| < 1.5e-7).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    x = v.double()
    a = x.abs()
    t = 1.0 / (1.0 + _ERF_P * a)
    a1, a2, a3, a4, a5 = _ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return (torch.sign(x) * (1.0 - poly * torch.exp(-a * a))).to(v.dtype)


def _step(v: torch.Tensor, attrs: dict) -> torch.Tensor:
    """1 where x > 0, ``alpha`` elsewhere; NaN stays NaN.

    The common case (alpha 0, no NaN: the sum of the input is a number) is one comparison written straight
    into a float tensor; ``torch.where`` with Python numbers and a bool-to-float cast take 5-40x longer."""
    alpha = float(attrs["alpha"])
    if alpha == 0.0 and v.is_floating_point() and not v.is_cuda:
        total = float(v.sum())
        if total == total:
            return torch.gt(v, 0, out=torch.empty_like(v))
    return torch.where(v > 0, 1.0, torch.where(torch.isnan(v), v, alpha)).to(v.dtype)


def _clip(v: torch.Tensor, attrs: dict) -> torch.Tensor:
    """Clamp to [clip_value_min, clip_value_max]; NaN stays NaN."""
    lo, hi = attrs["clip_value_min"], attrs["clip_value_max"]
    if v.dtype is torch.float32:  # the bounds as float32 numbers, as np.clip with float32 bounds
        lo, hi = float(np.float32(lo)), float(np.float32(hi))
    return torch.clamp(v, lo, hi)


same_dtype_unary("Sign", _sign, torch.sign)
same_dtype_unary("Erf", _erf)
same_dtype_unary("Step", _step)
same_dtype_unary("ClipByValue", _clip)


def _predicate(name: str, fn: Callable[[torch.Tensor], torch.Tensor], integer_value: bool) -> None:
    """A bool-valued test of each element; int32, bool (and complex) values count as finite numbers."""

    def run(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        v = values_of(backend, x)
        if v.is_floating_point():
            return out(backend, fn(v), "bool", x.shape)
        return out(backend, torch.full(x.shape, integer_value, dtype=torch.bool, device=backend.device), "bool")

    run.__name__ = name
    torch_kernel(name)(run)


_predicate("IsNan", torch.isnan, False)
_predicate("IsInf", torch.isinf, False)
_predicate("IsFinite", torch.isfinite, True)


@torch_kernel(kn.Neg)
def neg(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    if x.dtype == "bool":  # -1 in a Uint8Array is 255: a bool keeps its value
        return out(backend, v.clone(), "bool", x.shape)
    return out(backend, torch.neg(v), x.dtype, x.shape)


@torch_kernel(kn.Abs)
def abs_(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    if x.dtype == "complex64":
        return out(backend, torch.abs(v), "float32", x.shape)
    if x.dtype == "bool":
        return out(backend, v.clone(), "bool", x.shape)
    return out(backend, torch.abs(v), x.dtype, x.shape)


@torch_kernel(kn.Square)
def square(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    return out(backend, torch.mul(v, v), x.dtype, x.shape)


def _square(v: torch.Tensor) -> torch.Tensor:
    return torch.mul(v, v)


register_direct(kn.Neg, "torch", torch.neg)
register_direct(kn.Abs, "torch", torch.abs)
register_direct(kn.Square, "torch", _square)
