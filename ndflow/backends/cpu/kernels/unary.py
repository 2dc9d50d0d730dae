"""Element-wise unary math: Neg, Abs, Exp, Log, Sqrt, Rsqrt, Square, Tanh; trigonometry (Acos ...
Tanh); rounding (Ceil, Floor, Round, Sign); Reciprocal, Expm1, Log1p, Erf, Step, ClipByValue;
and the predicates IsNan, IsInf, IsFinite."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ...shared.numbers import erf, store
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

Fn = Callable[[np.ndarray, dict | None], np.ndarray]


def _float_unary(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    """A kernel whose output is float32 whatever the input (as TF.js's cpu unary kernels)."""

    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        values = values_of(backend, x)
        dtype = "complex64" if x.dtype == "complex64" else "float32"
        if values.dtype.kind != "f" and dtype == "float32":
            values = values.astype(np.float32)
        return out(backend, fn(values), dtype)

    cpu_kernel(name)(run)
    register_direct(name, "cpu", fn)


_float_unary("Exp", np.exp)
_float_unary("Log", np.log)
_float_unary("Sqrt", np.sqrt)
_float_unary("Rsqrt", lambda v: np.reciprocal(np.sqrt(v)))
_float_unary("Tanh", np.tanh)


def same_dtype_unary(name: str, fn: Fn, direct: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
    """A kernel whose output has the input's dtype (TF.js's ``unaryKernelFunc``).

    float32 is computed in float32; int32 and bool inputs are computed in float64 (JS numbers) and
    stored back as TF.js's typed arrays store them (truncated; a bool is non-zero after mod 256).
    ``fn(values, attrs)`` gets the kernel's attributes; ``direct``, where given, is ``fn`` without them
    (the float32 form for the engine's fast path).
    """

    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        values = values_of(backend, x)
        if x.dtype == "float32":
            return out(backend, fn(values, attrs), "float32")
        return out(backend, store(fn(values.astype(np.float64), attrs), x.dtype), x.dtype)

    run.__name__ = name
    cpu_kernel(name)(run)
    if direct is not None:
        register_direct(name, "cpu", direct)


for _name, _fn in {
    "Acos": np.arccos,
    "Acosh": np.arccosh,
    "Asin": np.arcsin,
    "Asinh": np.arcsinh,
    "Atan": np.arctan,
    "Atanh": np.arctanh,
    "Cos": np.cos,
    "Cosh": np.cosh,
    "Sin": np.sin,
    "Sinh": np.sinh,
    "Tan": np.tan,
    "Ceil": np.ceil,
    "Floor": np.floor,
    "Round": np.rint,  # round half to even: TF.js's banker's rounding
    "Reciprocal": np.reciprocal,
    "Expm1": np.expm1,
    "Log1p": np.log1p,
}.items():
    same_dtype_unary(_name, lambda v, attrs, f=_fn: f(v), _fn)


def _sign(v: np.ndarray, attrs: dict | None) -> np.ndarray:
    return np.where(np.isnan(v), v.dtype.type(0), np.sign(v))  # TF.js: sign(NaN) is 0


def _step(v: np.ndarray, attrs: dict) -> np.ndarray:
    """1 where x > 0, ``alpha`` elsewhere; NaN stays NaN."""
    return np.where(v > 0, v.dtype.type(1), np.where(np.isnan(v), v, v.dtype.type(attrs["alpha"])))


def _clip(v: np.ndarray, attrs: dict) -> np.ndarray:
    """Clamp to [clip_value_min, clip_value_max]; NaN stays NaN."""
    return np.clip(v, v.dtype.type(attrs["clip_value_min"]), v.dtype.type(attrs["clip_value_max"]))


same_dtype_unary("Sign", _sign)
same_dtype_unary("Erf", erf)
same_dtype_unary("Step", _step)
same_dtype_unary("ClipByValue", _clip)


def _predicate(name: str, fn: Callable[[np.ndarray], np.ndarray], integer_value: bool) -> None:
    """A bool-valued test of each element; int32 and bool values are all finite numbers."""

    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        values = values_of(backend, x)
        if values.dtype.kind == "f":
            return out(backend, fn(values), "bool")
        return out(backend, np.full(values.shape, integer_value), "bool")

    cpu_kernel(name)(run)


_predicate("IsNan", np.isnan, False)
_predicate("IsInf", np.isinf, False)
_predicate("IsFinite", np.isfinite, True)


@cpu_kernel(kn.Neg)
def neg(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    if x.dtype == "bool":  # -1 in a Uint8Array is 255: a bool keeps its value
        return out(backend, values.copy(), "bool")
    return out(backend, np.negative(values), x.dtype)


@cpu_kernel(kn.Abs)
def abs_(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    if x.dtype == "complex64":
        return out(backend, np.abs(values), "float32")
    return out(backend, np.abs(values), x.dtype)


@cpu_kernel(kn.Square)
def square(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, np.multiply(values, values), x.dtype)


def _square(v: np.ndarray) -> np.ndarray:
    return np.multiply(v, v)


register_direct(kn.Neg, "cpu", np.negative)
register_direct(kn.Abs, "cpu", np.abs)
register_direct(kn.Square, "cpu", _square)
