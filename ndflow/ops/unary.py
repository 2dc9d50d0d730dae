"""Element-wise unary math: exp/log family, trigonometry, rounding, predicates and clipping."""

from __future__ import annotations

import math

import numpy as np

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import to_tensor

REAL = ("float32", "int32", "bool")  # dtypes TF.js's cpu kernels accept (no complex64, no string)
FLOAT = ("float32",)


def run_unary(kernel: str, op: str, x: TensorLike, float_only: bool = False) -> Tensor:
    """Convert ``x``, check its dtype, run ``kernel``; a temporary input is disposed.

    ``float_only``: TF.js accepts only float32 here (``log``, ``sqrt``, ``tanh``...).
    """
    if x.__class__ is Tensor:
        if x.dtype == "float32":
            return ENGINE.run_unary_float(kernel, x)
        if not float_only and x.dtype != "string":
            return ENGINE.run_kernel(kernel, (x,), None)
    t = to_tensor(x, "x", op)
    try:
        if not ENGINE.prod:
            if t.dtype == "string":
                raise TypeError(f"{op}: argument 'x' must be numeric, got a string tensor")
            if float_only and t.dtype not in ("float32", "complex64"):
                raise TypeError(f"{op}: argument 'x' must be a float32 tensor, got {t.dtype}")
        return ENGINE.run_kernel(kernel, (t,), None)
    finally:
        if t is not x:
            t.dispose()


def dtype_error(op: str, arg: str, dtypes: tuple[str, ...], got: str) -> TypeError:
    if dtypes == FLOAT:
        want = "a float32 tensor"
    elif dtypes == REAL:
        want = "a real numeric (float32, int32 or bool) tensor"
    else:
        want = ("an " if dtypes[0][0] == "i" else "a ") + " or ".join(dtypes) + " tensor"
    return TypeError(f"{op}: argument '{arg}' must be {want}, got {got}")


def run_typed_unary(
    kernel: str, op: str, x: TensorLike, dtypes: tuple[str, ...] = REAL, attrs: dict | None = None, arg: str = "x"
) -> Tensor:
    """Like :func:`run_unary`, for ops whose input must have one of ``dtypes``.

    Values that are not tensors are read as TF.js's ``convertToTensor`` reads them: as float32
    when the op takes only float32, as bool when it takes only bool.
    """
    if x.__class__ is Tensor and x.dtype in dtypes:
        return ENGINE.run_kernel(kernel, (x,), attrs)
    t = to_tensor(x, arg, op, dtypes[0] if len(dtypes) == 1 else None)
    try:
        if not ENGINE.prod and t.dtype not in dtypes:
            raise dtype_error(op, arg, dtypes, f"a {t.dtype} tensor")
        return ENGINE.run_kernel(kernel, (t,), attrs)
    finally:
        if t is not x:
            t.dispose()


def number_arg(value: TensorLike, op: str, arg: str) -> float:
    """A plain real number argument (not a tensor, not a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {type(value).__name__}")
    return float(value)


@compiled.unary_op(kn.Neg)
def neg(x: TensorLike) -> Tensor:
    """-x."""
    return run_unary(kn.Neg, "neg", x)


@compiled.unary_op(kn.Abs)  # float32: Abs (complex64 goes to the function)
def abs(x: TensorLike) -> Tensor:  # noqa: A001 - TF.js's name
    """|x|; the magnitude (float32) for complex64, through ``ComplexAbs`` as in TF.js."""
    if isinstance(x, Tensor) and x.dtype == "complex64":
        return ENGINE.run_kernel(kn.ComplexAbs, (x,), None)
    return run_unary(kn.Abs, "abs", x)


@compiled.unary_op(kn.Exp)
def exp(x: TensorLike) -> Tensor:
    """e ** x."""
    return run_unary(kn.Exp, "exp", x)


@compiled.unary_op(kn.Log)
def log(x: TensorLike) -> Tensor:
    """Natural logarithm; -Infinity at 0, NaN below."""
    return run_unary(kn.Log, "log", x, float_only=True)


@compiled.unary_op(kn.Sqrt)
def sqrt(x: TensorLike) -> Tensor:
    """Square root; NaN below 0."""
    return run_unary(kn.Sqrt, "sqrt", x, float_only=True)


@compiled.unary_op(kn.Rsqrt)
def rsqrt(x: TensorLike) -> Tensor:
    """1 / sqrt(x)."""
    return run_unary(kn.Rsqrt, "rsqrt", x, float_only=True)


@compiled.unary_op(kn.Square)
def square(x: TensorLike) -> Tensor:
    """x * x."""
    return run_unary(kn.Square, "square", x)


@compiled.unary_op(kn.Tanh)
def tanh(x: TensorLike) -> Tensor:
    """Hyperbolic tangent."""
    return run_unary(kn.Tanh, "tanh", x, float_only=True)


# Trigonometry. As in TF.js, cos/sin/tan/cosh take float32 only; the others keep the input dtype
# (an int32 input gives truncated int32 results).


def acos(x: TensorLike) -> Tensor:
    """Inverse cosine; NaN outside [-1, 1]."""
    return run_typed_unary(kn.Acos, "acos", x)


def acosh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic cosine; NaN below 1."""
    return run_typed_unary(kn.Acosh, "acosh", x)


def asin(x: TensorLike) -> Tensor:
    """Inverse sine; NaN outside [-1, 1]."""
    return run_typed_unary(kn.Asin, "asin", x)


def asinh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic sine."""
    return run_typed_unary(kn.Asinh, "asinh", x)


def atan(x: TensorLike) -> Tensor:
    """Inverse tangent."""
    return run_typed_unary(kn.Atan, "atan", x)


def atanh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic tangent; +-Infinity at +-1, NaN beyond."""
    return run_typed_unary(kn.Atanh, "atanh", x)


def cos(x: TensorLike) -> Tensor:
    """Cosine (float32)."""
    return run_typed_unary(kn.Cos, "cos", x, FLOAT)


def cosh(x: TensorLike) -> Tensor:
    """Hyperbolic cosine (float32)."""
    return run_typed_unary(kn.Cosh, "cosh", x, FLOAT)


def sin(x: TensorLike) -> Tensor:
    """Sine (float32)."""
    return run_typed_unary(kn.Sin, "sin", x, FLOAT)


def sinh(x: TensorLike) -> Tensor:
    """Hyperbolic sine."""
    return run_typed_unary(kn.Sinh, "sinh", x)


def tan(x: TensorLike) -> Tensor:
    """Tangent (float32)."""
    return run_typed_unary(kn.Tan, "tan", x, FLOAT)


def ceil(x: TensorLike) -> Tensor:
    """Smallest integer >= x (float32)."""
    return run_typed_unary(kn.Ceil, "ceil", x, FLOAT)


def floor(x: TensorLike) -> Tensor:
    """Largest integer <= x (float32)."""
    return run_typed_unary(kn.Floor, "floor", x, FLOAT)


def round(x: TensorLike) -> Tensor:  # noqa: A001 - TF.js's name
    """Nearest integer, halves to even (banker's rounding, as TF.js)."""
    return run_typed_unary(kn.Round, "round", x)


def sign(x: TensorLike) -> Tensor:
    """-1, 0 or 1 by the sign of x; 0 for NaN (as TF.js)."""
    return run_typed_unary(kn.Sign, "sign", x)


def reciprocal(x: TensorLike) -> Tensor:
    """1 / x."""
    return run_typed_unary(kn.Reciprocal, "reciprocal", x)


def expm1(x: TensorLike) -> Tensor:
    """e ** x - 1, accurate near 0."""
    return run_typed_unary(kn.Expm1, "expm1", x)


def log1p(x: TensorLike) -> Tensor:
    """log(1 + x), accurate near 0."""
    return run_typed_unary(kn.Log1p, "log1p", x)


def erf(x: TensorLike) -> Tensor:
    """The Gauss error function (float32; an int32 input is cast first), as TF.js approximates it."""
    if x.__class__ is Tensor and x.dtype == "float32":
        return ENGINE.run_kernel(kn.Erf, (x,), None)
    t = to_tensor(x, "x", "erf")
    temps = [t] if t is not x else []
    try:
        if t.dtype == "int32":
            t = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": "float32"})
            temps.append(t)
        elif t.dtype != "float32" and not ENGINE.prod:
            raise dtype_error("erf", "x", ("int32", "float32"), f"a {t.dtype} tensor")
        return ENGINE.run_kernel(kn.Erf, (t,), None)
    finally:
        for temp in temps:
            temp.dispose()


def step(x: TensorLike, alpha: float = 0.0) -> Tensor:
    """1 where x > 0, ``alpha`` elsewhere; NaN stays NaN."""
    attrs = {"alpha": number_arg(alpha, "step", "alpha")}
    return run_typed_unary(kn.Step, "step", x, attrs=attrs)


def clip_by_value(x: TensorLike, clip_value_min: float, clip_value_max: float) -> Tensor:
    """x clamped to [clip_value_min, clip_value_max]; NaN stays NaN."""
    lo = number_arg(clip_value_min, "clip_by_value", "clip_value_min")
    hi = number_arg(clip_value_max, "clip_by_value", "clip_value_max")
    if not lo <= hi:
        raise ValueError(
            f"clip_by_value: argument 'clip_value_min' ({clip_value_min}) must be less than or equal to "
            f"'clip_value_max' ({clip_value_max})"
        )
    if lo == hi:  # as TF.js: a tensor filled with the bound (NaN included), no kernel
        t = to_tensor(x, "x", "clip_by_value")
        try:
            t.throw_if_disposed("'x' of clip_by_value")
            if not ENGINE.prod and t.dtype not in REAL:
                raise dtype_error("clip_by_value", "x", REAL, f"a {t.dtype} tensor")
            value = _stored(lo, t.dtype)
            return ENGINE.run_kernel(kn.Fill, (), {"shape": t.shape, "value": value, "dtype": t.dtype})
        finally:
            if t is not x:
                t.dispose()
    attrs = {"clip_value_min": lo, "clip_value_max": hi}
    return run_typed_unary(kn.ClipByValue, "clip_by_value", x, attrs=attrs)


def _stored(value: float, dtype: str) -> float | int | bool:
    """A number as TF.js's typed array of ``dtype`` stores it (Int32Array, Uint8Array for bool)."""
    if dtype == "float32":
        return value
    n = int(math.fmod(math.trunc(value), 2**32)) if math.isfinite(value) else 0
    if dtype == "bool":
        return n % 256 != 0
    return (n + 2**31) % 2**32 - 2**31


def is_nan(x: TensorLike) -> Tensor:
    """True where x is NaN."""
    return run_typed_unary(kn.IsNan, "is_nan", x)


def is_inf(x: TensorLike) -> Tensor:
    """True where x is +-Infinity."""
    return run_typed_unary(kn.IsInf, "is_inf", x)


def is_finite(x: TensorLike) -> Tensor:
    """True where x is neither NaN nor +-Infinity."""
    return run_typed_unary(kn.IsFinite, "is_finite", x)


__all__ = [
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "square", "tanh",
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
    "ceil", "floor", "round", "sign", "reciprocal", "expm1", "log1p", "erf", "step", "clip_by_value",
    "is_nan", "is_inf", "is_finite",
]  # fmt: skip

CHAINED = [
    neg, abs, exp, log, sqrt, rsqrt, square, tanh,
    acos, acosh, asin, asinh, atan, atanh, cos, cosh, sin, sinh, tan,
    ceil, floor, round, sign, reciprocal, expm1, log1p, erf, step, clip_by_value,
    is_nan, is_inf, is_finite,
]  # fmt: skip  # also Tensor methods: x.neg(...)
