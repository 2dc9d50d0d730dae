"""Element-wise binary arithmetic with TF.js broadcasting and dtype matching."""

from __future__ import annotations

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import binary_inputs, broadcast_shape, converted_list, dispose_temps

_EXACT = 1 << 24  # integers float32 holds exactly


def run_binary(kernel: str, op: str, a: TensorLike, b: TensorLike, numeric: bool = True) -> Tensor:
    """Convert, match dtypes, check broadcasting, run ``kernel``; temporaries are disposed."""
    if a.__class__ is Tensor:
        if b.__class__ is Tensor:
            if a.dtype == b.dtype and a.dtype != "string":
                if a.shape == b.shape:
                    if a.dtype == "float32":
                        return ENGINE.run_binary_float(kernel, a, b)
                elif not ENGINE.prod:
                    broadcast_shape(a.shape, b.shape, op)
                return ENGINE.run_kernel(kernel, (a, b), None)
        elif a.dtype == "float32" and (b.__class__ is float or (b.__class__ is int and -_EXACT <= b <= _EXACT)):
            t = ENGINE.run_scalar_float(kernel, a, b)
            if t is not None:
                return t
    a, b, temps = binary_inputs(a, b, op)
    try:
        if not ENGINE.prod:
            if numeric and a.dtype == "string":
                raise TypeError(f"{op}: string tensors are not supported")
            broadcast_shape(a.shape, b.shape, op)
        return ENGINE.run_kernel(kernel, (a, b), None)
    finally:
        dispose_temps(temps)


@compiled.binary_op(kn.Add)
def add(a: TensorLike, b: TensorLike) -> Tensor:
    """a + b, element-wise with broadcasting."""
    return run_binary(kn.Add, "add", a, b)


@compiled.binary_op(kn.Sub)
def sub(a: TensorLike, b: TensorLike) -> Tensor:
    """a - b, element-wise with broadcasting."""
    return run_binary(kn.Sub, "sub", a, b)


@compiled.binary_op(kn.Multiply)
def mul(a: TensorLike, b: TensorLike) -> Tensor:
    """a * b, element-wise with broadcasting."""
    return run_binary(kn.Multiply, "mul", a, b)


@compiled.binary_op(kn.RealDiv)
def div(a: TensorLike, b: TensorLike) -> Tensor:
    """a / b; two int32 tensors divide with flooring, as in TF.js."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype == b.dtype:  # Variables too
        if a.dtype == "int32":
            return run_binary(kn.FloorDiv, "div", a, b)
        if a.dtype == "bool":  # TF.js stores a / b in a bool tensor: true only for true / true
            return run_binary(kn.LogicalAnd, "div", a, b)
    elif _is_bool(a) and _is_bool(b):
        return run_binary(kn.LogicalAnd, "div", a, b)
    return run_binary(kn.RealDiv, "div", a, b)


def _is_bool(x: TensorLike) -> bool:
    return x.dtype == "bool" if isinstance(x, Tensor) else isinstance(x, bool)


@compiled.binary_op(kn.RealDiv)
def real_div(a: TensorLike, b: TensorLike) -> Tensor:
    """a / b as real division whatever the dtypes (floats out for int inputs)."""
    return run_binary(kn.RealDiv, "real_div", a, b)


@compiled.binary_op(kn.FloorDiv)
def floor_div(a: TensorLike, b: TensorLike) -> Tensor:
    """floor(a / b), element-wise with broadcasting."""
    return run_binary(kn.FloorDiv, "floor_div", a, b)


@compiled.binary_op(kn.Mod)
def mod(a: TensorLike, b: TensorLike) -> Tensor:
    """Remainder of floor division: the result has the sign of ``b``."""
    return run_binary(kn.Mod, "mod", a, b)


@compiled.binary_op(kn.Pow)
def pow(base: TensorLike, exp: TensorLike) -> Tensor:  # noqa: A001 - TF.js's name
    """base ** exp, element-wise with broadcasting."""
    return run_binary(kn.Pow, "pow", base, exp)


@compiled.binary_op(kn.Maximum)
def maximum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise maximum; NaN wins."""
    return run_binary(kn.Maximum, "maximum", a, b)


@compiled.binary_op(kn.Minimum)
def minimum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise minimum; NaN wins."""
    return run_binary(kn.Minimum, "minimum", a, b)


@compiled.binary_op(kn.SquaredDifference)
def squared_difference(a: TensorLike, b: TensorLike) -> Tensor:
    """(a - b) ** 2, element-wise with broadcasting."""
    return run_binary(kn.SquaredDifference, "squared_difference", a, b)


_REAL = ("float32", "int32", "bool")


def _check_real(op: str, a: Tensor, b: Tensor) -> None:
    """TF.js's cpu kernels for these ops take no complex64 (nor string) tensors."""
    if a.dtype not in _REAL:
        raise TypeError(
            f"{op}: arguments 'a' and 'b' must be real numeric (float32, int32 or bool) tensors, got {a.dtype}"
        )


def atan2(a: TensorLike, b: TensorLike) -> Tensor:
    """The angle of the point (b, a): arctan(a / b) in the right quadrant, with broadcasting."""
    if a.__class__ is Tensor and b.__class__ is Tensor and a.dtype == b.dtype and a.dtype in _REAL:
        if a.shape != b.shape and not ENGINE.prod:
            broadcast_shape(a.shape, b.shape, "atan2")
        return ENGINE.run_kernel(kn.Atan2, (a, b), None)
    a, b, temps = binary_inputs(a, b, "atan2")
    try:
        if not ENGINE.prod:
            _check_real("atan2", a, b)
            broadcast_shape(a.shape, b.shape, "atan2")
        return ENGINE.run_kernel(kn.Atan2, (a, b), None)
    finally:
        dispose_temps(temps)


def div_no_nan(a: TensorLike, b: TensorLike) -> Tensor:
    """a / b, but 0 where b is 0 (as :func:`div` otherwise: int32 divides with flooring)."""
    from .logical import equal, where  # composed as TF.js composes it

    a, b, temps = binary_inputs(a, b, "div_no_nan")
    try:
        if not ENGINE.prod:
            _check_real("div_no_nan", a, b)
            broadcast_shape(a.shape, b.shape, "div_no_nan")
        q = div(a, b)
        zero = ENGINE.run_kernel(kn.Fill, (), {"shape": (), "value": 0, "dtype": q.dtype})
        temps += [q, zero]
        b_is_zero = equal(b, zero)
        temps.append(b_is_zero)
        return where(b_is_zero, zero, q)
    finally:
        dispose_temps(temps)


def add_n(tensors: list[TensorLike]) -> Tensor:
    """The element-wise sum of a list of tensors of one dtype and one shape."""
    with converted_list(tensors, "tensors", "add_n", same_dtype=True) as ts:
        first = ts[0]
        for i, t in enumerate(ts):
            if t.dtype not in _REAL:
                raise TypeError(
                    f"add_n: argument 'tensors[{i}]' must be a real numeric (float32, int32 or bool) tensor, "
                    f"got {t.dtype}"
                )
            if t.shape != first.shape:
                raise ValueError(
                    f"add_n: all tensors must have the same shape: tensors[{i}].shape={list(t.shape)}, "
                    f"tensors[0].shape={list(first.shape)}"
                )
        return ENGINE.run_kernel(kn.AddN, tuple(ts), None)


__all__ = [
    "add", "sub", "mul", "div", "real_div", "floor_div", "mod", "pow", "maximum", "minimum", "squared_difference",
    "atan2", "div_no_nan", "add_n",
]  # fmt: skip

CHAINED = [
    add, sub, mul, div, real_div, floor_div, mod, pow, maximum, minimum, squared_difference, atan2, div_no_nan,
]  # fmt: skip  # also Tensor methods: x.add(...)
