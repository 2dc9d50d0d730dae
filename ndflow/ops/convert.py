"""Turning op arguments into tensors, with clear errors; shared by every op family."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dtypes import NUMPY_DTYPE, Int32RangeError, check_dtype, from_numpy, upcast_type
from ..core.engine import ENGINE
from ..core.flags import env
from ..core.tensor import Tensor

# INT64_WRAP: integers outside int32's range wrap modulo 2**32 as TF.js's Int32Array stores them; off (the
# default), they are an error naming the op.
env().register_flag("INT64_WRAP", lambda: False)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

_SCALARS = (bool, int, float, complex, np.generic)
_PLAIN = (np.ndarray, Tensor, list, tuple, str, bytes, *_SCALARS)


def host_values(values: Any) -> Any:
    """A torch tensor (or another framework's array with ``__dlpack__``) as a numpy array on the host; anything
    else unchanged. A torch tensor that requires grad is detached (ndflow has its own gradients)."""
    if values is None or isinstance(values, _PLAIN):
        return values
    if type(values).__module__.startswith("torch") and hasattr(values, "detach"):
        values = values.detach()
        if values.dtype.is_floating_point and values.element_size() == 2:  # numpy has no bfloat16
            values = values.float()
        return values.cpu().resolve_conj().resolve_neg().numpy()
    if hasattr(values, "__dlpack__") and not hasattr(values, "__array__"):
        try:
            return np.from_dlpack(values, device="cpu")
        except (BufferError, TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"cannot read a {type(values).__name__} through DLPack: {exc}") from None
    return values


def infer_dtype(values: Any) -> str:
    """TF.js's dtype inference: numbers -> float32, bools -> bool, strings -> string;
    numpy arrays by their dtype (float64 -> float32, int64 -> int32)."""
    values = host_values(values)
    if isinstance(values, np.ndarray | np.generic):
        return from_numpy(values.dtype)
    while isinstance(values, list | tuple) and values:
        values = values[0]
    if isinstance(values, bool | np.bool_):
        return "bool"
    if isinstance(values, str | bytes):
        return "string"
    if isinstance(values, complex):
        return "complex64"
    if isinstance(values, np.ndarray | np.generic):
        return from_numpy(values.dtype)
    return "float32"


def _nested_shape(values: Any, op: str) -> tuple[int, ...]:
    """Shape of nested lists, raising on ragged input."""
    shape: list[int] = []
    level = values
    while isinstance(level, list | tuple):
        shape.append(len(level))
        if not level:
            break
        level = level[0]
    _check_regular(values, shape, 0, op)
    return tuple(shape)


def _check_regular(values: Any, shape: list[int], depth: int, op: str) -> None:
    if depth == len(shape):
        if isinstance(values, list | tuple):
            raise ValueError(f"{op}: values are ragged: a list where a number was expected at depth {depth}")
        return
    if not isinstance(values, list | tuple) or len(values) != shape[depth]:
        got = len(values) if isinstance(values, list | tuple) else "a scalar"
        raise ValueError(
            f"{op}: values are ragged: expected {shape[depth]} elements at depth {depth} "
            f"(inferred shape {shape}), got {got}"
        )
    for item in values:
        _check_regular(item, shape, depth + 1, op)


def to_array(values: Any, dtype: str, op: str) -> np.ndarray:
    """Values as a numpy array of ``dtype`` (copied, so callers never share memory with the user)."""
    if isinstance(values, Tensor):
        raise TypeError(f"{op}: expected values, got a Tensor (use nf.clone or nf.cast)")
    if isinstance(values, list | tuple):
        _nested_shape(values, op)
    if dtype == "string":
        array = np.array(values, dtype=object)
        flat = array.reshape(-1)
        for i, v in enumerate(flat):
            if isinstance(v, bytes):
                flat[i] = v.decode("utf-8")
            elif not isinstance(v, str):
                raise TypeError(f"{op}: a string tensor needs str or bytes values, got {type(v).__name__}")
        return array
    try:
        source = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: cannot make a tensor from {type(values).__name__}: {exc}") from None
    if source.dtype.kind == "O" and _has_big_int(source):
        raise Int32RangeError(
            f"{op}: an integer value is outside int64's range, and int32's ({_INT32_MIN}..{_INT32_MAX})"
        )
    if source.dtype.kind in "USO":
        raise TypeError(f"{op}: values of dtype {dtype} cannot be made from strings or objects ({source.dtype})")
    if dtype == "bool" and source.dtype.kind != "b":
        return source != 0
    if dtype == "int32" and source.dtype.kind in "iuf":
        return to_int32(source, op)
    return np.array(source, dtype=NUMPY_DTYPE[dtype], copy=True)


def _has_big_int(array: np.ndarray) -> bool:
    return any(isinstance(v, int) and not isinstance(v, bool) for v in array.reshape(-1))


def to_int32(source: np.ndarray, op: str) -> np.ndarray:
    """Integer or float values as a new int32 array (floats truncated, as TF.js's Int32Array stores them).

    Values outside int32's range raise an ``Int32RangeError`` (an OverflowError and a ValueError) naming ``op``,
    unless the flag ``INT64_WRAP`` is on: then they wrap modulo 2**32 as in TF.js. Never silently wrong: numpy
    alone would wrap without a word."""
    if source.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            source = np.trunc(source)
        finite = source[np.isfinite(source)] if source.size else source
        bad = finite.size > 0 and (finite.min() < _INT32_MIN or finite.max() > _INT32_MAX)
    else:
        bad = source.dtype.itemsize >= 4 and source.size > 0 and _int_out_of_range(source)
    if bad:
        if not env().get_bool("INT64_WRAP"):
            outside = source[(source < _INT32_MIN) | (source > _INT32_MAX)].reshape(-1)[0]
            raise Int32RangeError(
                f"{op}: value {int(outside)} is outside int32's range ({_INT32_MIN}..{_INT32_MAX}); ndflow stores "
                "integers as int32, as TF.js does. Set the flag INT64_WRAP=true to wrap them modulo 2**32 as TF.js's "
                "Int32Array does"
            )
        if source.dtype.kind == "f":
            source = np.where(np.isfinite(source), np.mod(source, 2.0**32), 0.0).astype(np.int64)
        return source.astype(np.int32)  # numpy's integer cast wraps modulo 2**32
    with np.errstate(invalid="ignore"):
        return np.array(source, dtype=np.int32, copy=True)


def _int_out_of_range(source: np.ndarray) -> bool:
    if source.dtype == np.int32:
        return False
    return bool(source.min() < _INT32_MIN or source.max() > _INT32_MAX)


def make_tensor(values: Any, shape: Sequence[int] | None, dtype: str | None, op: str = "tensor") -> Tensor:
    """Create a tensor from Python, numpy or torch values (TF.js's ``makeTensor``); the values are copied."""
    values = host_values(values)
    dtype = infer_dtype(values) if dtype is None else check_dtype(dtype, op)
    array = to_array(values, dtype, op)
    if shape is not None:
        shape = check_shape(shape, op)
        size = math.prod(shape)  # Python ints: exact, and far cheaper than np.prod on a tuple
        if array.size != size:
            if array.ndim == 0 and array.size == 1:  # a scalar fills the shape, as TF.js does
                array = np.full(shape, array, dtype=array.dtype)
            else:
                raise ValueError(
                    f"{op}: based on the provided shape {list(shape)}, the tensor should have {size} values "
                    f"but has {array.size}"
                )
        elif array.ndim > 1 and array.shape != shape and array.size > 0:
            raise ValueError(
                f"{op}: the shape of the nested values {list(array.shape)} does not match the shape {list(shape)}"
            )
        array = array.reshape(shape)
    return ENGINE.make_tensor(array, array.shape, dtype)


def check_shape(shape: Any, op: str, arg: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    if isinstance(shape, Tensor) or not isinstance(shape, list | tuple | np.ndarray):
        raise TypeError(f"{op}: argument '{arg}' must be a list of ints, got {type(shape).__name__}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise ValueError(f"{op}: argument '{arg}' must hold non-negative ints, got {list(shape)}")
        out.append(int(d))
    return tuple(out)


def to_tensor(x: Any, arg: str, op: str, dtype: str | None = None) -> Tensor:
    """``convertToTensor``: tensors pass through; anything else becomes a new tensor."""
    if isinstance(x, Tensor):
        return x
    if x is None:
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor or values, got None")
    try:
        return make_tensor(x, None, dtype if dtype is not None else infer_dtype(x), op)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{op}: argument '{arg}': {exc}") from None


def scalar_like(x: Any, other: Tensor) -> Tensor:
    """A Python scalar next to a tensor takes the tensor's dtype when it fits (``i + 1`` stays int32)."""
    dtype = other.dtype
    if isinstance(x, bool | np.bool_):
        d = "bool"
    elif isinstance(x, int | np.integer):
        d = dtype if dtype in ("int32", "float32", "complex64") else "int32"
    elif isinstance(x, float | np.floating):
        d = dtype if dtype in ("float32", "complex64") else "float32"
    elif isinstance(x, complex | np.complexfloating):
        d = "complex64"
    else:
        raise TypeError(f"cannot combine a {type(x).__name__} with a {dtype} tensor")
    if d == "int32" and not _INT32_MIN <= x <= _INT32_MAX:  # an error, or wrapped under INT64_WRAP
        wrapped = to_int32(np.array(int(x), dtype=np.int64), f"combining {x} with a {dtype} tensor")
        return ENGINE.make_tensor(wrapped, (), d)
    return ENGINE.make_tensor(np.array(x, dtype=NUMPY_DTYPE[d]), (), d)


def binary_inputs(a: Any, b: Any, op: str) -> tuple[Tensor, Tensor, list[Tensor]]:
    """Both operands as tensors of one dtype; also the temporaries made here (to dispose after)."""
    temps: list[Tensor] = []
    try:
        if not isinstance(a, Tensor):
            a = scalar_like(a, b) if isinstance(a, _SCALARS) and isinstance(b, Tensor) else to_tensor(a, "a", op)
            temps.append(a)
        if not isinstance(b, Tensor):
            b = scalar_like(b, a) if isinstance(b, _SCALARS) else to_tensor(b, "b", op)
            temps.append(b)
        if a.dtype != b.dtype:
            try:
                dtype = upcast_type(a.dtype, b.dtype)
            except TypeError:
                raise TypeError(f"{op}: cannot combine dtypes {a.dtype} and {b.dtype}") from None
            if a.dtype != dtype:
                a = ENGINE.run_kernel(kn.Cast, (a,), {"dtype": dtype})
                temps.append(a)
            if b.dtype != dtype:
                b = ENGINE.run_kernel(kn.Cast, (b,), {"dtype": dtype})
                temps.append(b)
    except BaseException:
        ENGINE.dispose(temps)
        raise
    return a, b, temps


@lru_cache(maxsize=4096)
def _broadcast(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(sa, sb))
    except ValueError:
        return None


def broadcast_shape(sa: tuple[int, ...], sb: tuple[int, ...], op: str) -> tuple[int, ...]:
    if sa == sb:
        return sa
    out = _broadcast(sa, sb)
    if out is None:
        raise ValueError(f"{op}: operands could not be broadcast together with shapes {list(sa)} and {list(sb)}")
    return out


def normalize_axis(axis: Any, rank: int, op: str, arg: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {type(axis).__name__}")
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: argument '{arg}' {axis} is out of range for a tensor of rank {rank}")
    return int(axis) % rank


def int_list(value: Any, op: str, arg: str, scalar_ok: bool = False) -> list[int]:
    """A list (or tuple or 1-D array) of ints, or a TypeError naming op and argument; never iterates a Tensor
    (iterating one makes a tensor per element, which would leak when the op then raises)."""
    if scalar_ok and isinstance(value, int | np.integer) and not isinstance(value, bool):
        return [int(value)]
    if isinstance(value, Tensor) or not isinstance(value, list | tuple | np.ndarray):
        raise TypeError(f"{op}: argument '{arg}' must be a list of ints, got {type(value).__name__}")
    items = list(value)
    for v in items:
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise TypeError(f"{op}: argument '{arg}' must hold ints, got {items!r}")
    return [int(v) for v in items]


def normalize_axes(axis: Any, rank: int, op: str) -> tuple[int, ...]:
    """``None`` -> every axis; an int or a list -> sorted, unique, non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    axes = int_list(axis, op, "axis", scalar_ok=True)
    out = sorted({normalize_axis(a, rank, op) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"{op}: argument 'axis' {list(axes)} has duplicate axes")
    return tuple(out)


def dispose_temps(temps: list[Tensor]) -> None:
    for t in temps:
        ENGINE.dispose_tensor(t)


class converted:  # noqa: N801 - used like a function: `with converted(x, "x", "sum") as t:`
    """Context manager: ``x`` as a tensor; a tensor made here is disposed on exit."""

    __slots__ = ("x", "t", "arg", "op", "dtype")

    def __init__(self, x: Any, arg: str, op: str, dtype: str | None = None) -> None:
        self.x, self.arg, self.op, self.dtype = x, arg, op, dtype

    def __enter__(self) -> Tensor:
        self.t = to_tensor(self.x, self.arg, self.op, self.dtype)
        return self.t

    def __exit__(self, *exc: object) -> None:
        if self.t is not self.x:
            self.t.dispose()


class converted_list:  # noqa: N801
    """Context manager: a list of tensor-likes as tensors of one dtype (upcast), temporaries disposed."""

    def __init__(self, xs: Any, arg: str, op: str, same_dtype: bool = False) -> None:
        if isinstance(xs, Tensor) or not isinstance(xs, list | tuple):
            raise TypeError(f"{op}: argument '{arg}' must be a list of tensors, got {type(xs).__name__}")
        if not xs:
            raise ValueError(f"{op}: argument '{arg}' must be a non-empty list of tensors")
        self.xs, self.arg, self.op, self.same_dtype = xs, arg, op, same_dtype
        self.temps: list[Tensor] = []

    def __enter__(self) -> list[Tensor]:
        try:
            tensors = []
            for i, x in enumerate(self.xs):
                t = to_tensor(x, f"{self.arg}[{i}]", self.op)
                if t is not x:
                    self.temps.append(t)
                tensors.append(t)
            dtype = tensors[0].dtype
            for i, t in enumerate(tensors[1:], 1):
                if self.same_dtype and t.dtype != dtype:
                    raise TypeError(
                        f"{self.op}: all tensors must have one dtype: {self.arg}[{i}] is {t.dtype}, "
                        f"{self.arg}[0] is {dtype}"
                    )
                dtype = upcast_type(dtype, t.dtype)
            for i, t in enumerate(tensors):
                if t.dtype != dtype:
                    tensors[i] = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": dtype})
                    self.temps.append(tensors[i])
            return tensors
        except BaseException:
            dispose_temps(self.temps)
            raise

    def __exit__(self, *exc: object) -> None:
        dispose_temps(self.temps)
