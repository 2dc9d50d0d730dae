"""Creating tensors: from values, filled, ranges, identity matrices, clones and variables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dtypes import NUMPY_DTYPE, check_dtype
from ..core.engine import ENGINE
from ..core.tensor import Tensor, Variable
from ..core.types import TensorLike
from .convert import check_shape, converted, infer_dtype, make_tensor, to_array

Shape = Sequence[int]


def tensor(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    """A tensor from a Python scalar, nested lists or a numpy array (dtype inferred as TF.js does)."""
    return make_tensor(values, shape, dtype, "tensor")


def scalar(value: TensorLike, dtype: str | None = None) -> Tensor:
    """A rank-0 tensor."""
    if isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim > 0):
        raise ValueError("scalar: argument 'value' must be a single value; use nf.tensor for lists")
    return make_tensor(value, (), dtype, "scalar")


def _ranked(rank: int, values: Any, shape: Shape | None, dtype: str | None) -> Tensor:
    op = f"tensor{rank}d"
    if shape is not None and len(shape) != rank:
        raise ValueError(f"{op}: argument 'shape' must have {rank} dimensions, got {list(shape)}")
    if shape is None:
        if rank == 1 and not isinstance(values, list | tuple | np.ndarray):
            raise ValueError("tensor1d: argument 'values' must be a list or a 1-D array")
        inferred = np.shape(values) if not isinstance(values, list | tuple) else None
        t = make_tensor(values, None, dtype, op)
        if t.rank != rank:
            got = t.shape if inferred is None else inferred
            t.dispose()
            raise ValueError(f"{op}: values must have rank {rank}, got shape {list(got)}; pass 'shape' for flat values")
        return t
    return make_tensor(values, shape, dtype, op)


def tensor1d(values: TensorLike, dtype: str | None = None) -> Tensor:
    return _ranked(1, values, None, dtype)


def tensor2d(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    return _ranked(2, values, shape, dtype)


def tensor3d(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    return _ranked(3, values, shape, dtype)


def tensor4d(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    return _ranked(4, values, shape, dtype)


def tensor5d(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    return _ranked(5, values, shape, dtype)


def tensor6d(values: TensorLike, shape: Shape | None = None, dtype: str | None = None) -> Tensor:
    return _ranked(6, values, shape, dtype)


def _filled(op: str, shape: Any, dtype: str, value: Any) -> Tensor:
    shape = check_shape(shape, op)
    dtype = check_dtype(dtype, op)
    return ENGINE.make_tensor(np.full(shape, value, dtype=NUMPY_DTYPE[dtype]), shape, dtype)


def zeros(shape: Shape, dtype: str = "float32") -> Tensor:
    """A tensor of zeros (empty strings for dtype string)."""
    return _filled("zeros", shape, dtype, "" if dtype == "string" else 0)


def ones(shape: Shape, dtype: str = "float32") -> Tensor:
    """A tensor of ones."""
    if dtype == "string":
        raise TypeError("ones: dtype string has no 'one'")
    return _filled("ones", shape, dtype, 1)


def fill(shape: Shape, value: TensorLike, dtype: str | None = None) -> Tensor:
    """A tensor of ``shape`` with every element ``value``."""
    shape = check_shape(shape, "fill")
    dtype = infer_dtype(value) if dtype is None else check_dtype(dtype, "fill")
    if isinstance(value, list | tuple | np.ndarray | Tensor):
        raise TypeError("fill: argument 'value' must be a single value")
    value = to_array(value, dtype, "fill").item() if dtype != "string" else str(value)
    return ENGINE.run_kernel(kn.Fill, (), {"shape": shape, "value": value, "dtype": dtype})


def zeros_like(x: TensorLike) -> Tensor:
    """Zeros of ``x``'s shape and dtype."""
    with converted(x, "x", "zeros_like") as t:
        if t.dtype == "string":  # as TF.js: numeric tensors only
            raise TypeError("zeros_like: argument 'x' must be a numeric tensor, got a string tensor")
        return ENGINE.run_kernel(kn.ZerosLike, (t,), None)


def ones_like(x: TensorLike) -> Tensor:
    """Ones of ``x``'s shape and dtype."""
    with converted(x, "x", "ones_like") as t:
        if t.dtype == "string":  # as TF.js: numeric tensors only
            raise TypeError("ones_like: argument 'x' must be a numeric tensor, got a string tensor")
        return ENGINE.run_kernel(kn.OnesLike, (t,), None)


def _number(value: Any, op: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {type(value).__name__}")
    return float(value)


def linspace(start: float, stop: float, num: int) -> Tensor:
    """``num`` evenly spaced float32 values from ``start`` to ``stop`` inclusive."""
    start, stop = _number(start, "linspace", "start"), _number(stop, "linspace", "stop")
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or num <= 0:
        raise ValueError(f"linspace: argument 'num' must be a positive int, got {num!r}")
    return ENGINE.run_kernel(kn.LinSpace, (), {"start": start, "stop": stop, "num": int(num)})


def range(start: float, stop: float | None = None, step: float = 1, dtype: str = "float32") -> Tensor:  # noqa: A001
    """Values from ``start`` (inclusive) to ``stop`` (exclusive) by ``step``; ``range(n)`` is 0..n-1."""
    if stop is None:
        start, stop = 0, start
    start, stop = _number(start, "range", "start"), _number(stop, "range", "stop")
    step = _number(step, "range", "step")
    if step == 0:
        raise ValueError("range: argument 'step' must not be 0")
    dtype = check_dtype(dtype, "range")  # numpy's and torch's dtypes name ours
    if dtype not in ("float32", "int32"):
        raise TypeError(f"range: argument 'dtype' must be float32 or int32, got {dtype!r}")
    return ENGINE.run_kernel(kn.Range, (), {"start": start, "stop": stop, "step": step, "dtype": dtype})


def eye(
    num_rows: int, num_columns: int | None = None, batch_shape: Shape | None = None, dtype: str = "float32"
) -> Tensor:
    """An identity matrix (or a batch of them)."""
    for name, value in (("num_rows", num_rows), ("num_columns", num_columns)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"eye: argument '{name}' must be a non-negative int, got {value!r}")
    dtype = check_dtype(dtype, "eye")
    cols = num_rows if num_columns is None else num_columns
    matrix = np.eye(num_rows, cols, dtype=NUMPY_DTYPE[dtype])
    if batch_shape:
        batch = check_shape(batch_shape, "eye", "batch_shape")
        matrix = np.broadcast_to(matrix, batch + matrix.shape).copy()
    return ENGINE.make_tensor(matrix, matrix.shape, dtype)


def clone(x: TensorLike) -> Tensor:
    """A new tensor sharing ``x``'s data (no copy: tensors are immutable)."""
    with converted(x, "x", "clone") as t:
        return ENGINE.run_kernel(kn.Identity, (t,), None)


def variable(
    initial_value: TensorLike, trainable: bool = True, name: str | None = None, dtype: str | None = None
) -> Variable:
    """A mutable ``Variable`` initialised from a tensor (or values); never disposed by ``tidy``."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"variable: argument 'name' must be a string, got {type(name).__name__}")
    with converted(initial_value, "initial_value", "variable") as t:
        if dtype is not None and check_dtype(dtype, "variable") != t.dtype:
            cast_t = ENGINE.run_kernel(kn.Cast, (t,), {"dtype": dtype})
            try:
                return ENGINE.make_variable(cast_t, trainable, name)
            finally:
                cast_t.dispose()
        return ENGINE.make_variable(t, trainable, name)


__all__ = [
    "tensor",
    "scalar",
    "tensor1d",
    "tensor2d",
    "tensor3d",
    "tensor4d",
    "tensor5d",
    "tensor6d",
    "zeros",
    "ones",
    "fill",
    "zeros_like",
    "ones_like",
    "linspace",
    "range",
    "eye",
    "clone",
    "variable",
]

CHAINED = [clone]  # also Tensor methods: x.clone(...)
