"""Chainable methods (``x.square().log()``) and Python operators on ``Tensor``, and ``TensorBuffer.to_tensor``.

TF.js attaches its chain API to the tensor class from the ops package; ndflow does the same,
so that ``core`` stays free of ops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from ..core.tensor import Tensor
from ..core.tensor_buffer import TensorBuffer
from . import arithmetic, creation, logical, matrix, shape, slicing, unary


def _method(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _concat(self: Tensor, x: Any, axis: int = 0) -> Tensor:
    """``nf.concat([self, *x], axis)``."""
    rest = list(x) if isinstance(x, list | tuple) else [x]
    return slicing.concat([self, *rest], axis)


def _stack(self: Tensor, x: Any, axis: int = 0) -> Tensor:
    """``nf.stack([self, *x], axis)``."""
    rest = list(x) if isinstance(x, list | tuple) else [x]
    return slicing.stack([self, *rest], axis)


def _reshape_as(self: Tensor, x: Tensor) -> Tensor:
    return shape.reshape(self, list(x.shape))


def _as_type(self: Tensor, dtype: str) -> Tensor:
    return shape.cast(self, dtype)


def _as_scalar(self: Tensor) -> Tensor:
    """The one value of a size-1 tensor as a scalar (TF.js's ``asScalar``)."""
    if self.size != 1:
        raise ValueError(f"as_scalar: the tensor must have exactly 1 element, got shape {list(self.shape)}")
    return shape.reshape(self, [])


def _as1d(self: Tensor) -> Tensor:
    """The values as a rank-1 tensor (TF.js's ``as1D``)."""
    return shape.reshape(self, [self.size])


def _as2d(self: Tensor, rows: int, columns: int) -> Tensor:
    """``reshape(self, [rows, columns])`` (TF.js's ``as2D``)."""
    return shape.reshape(self, [rows, columns])


def _as3d(self: Tensor, rows: int, columns: int, depth: int) -> Tensor:
    """``reshape(self, [rows, columns, depth])`` (TF.js's ``as3D``)."""
    return shape.reshape(self, [rows, columns, depth])


def _as4d(self: Tensor, rows: int, columns: int, depth: int, depth2: int) -> Tensor:
    """``reshape(self, [rows, columns, depth, depth2])`` (TF.js's ``as4D``)."""
    return shape.reshape(self, [rows, columns, depth, depth2])


def _as5d(self: Tensor, rows: int, columns: int, depth: int, depth2: int, depth3: int) -> Tensor:
    """``reshape(self, [rows, columns, depth, depth2, depth3])`` (TF.js's ``as5D``)."""
    return shape.reshape(self, [rows, columns, depth, depth2, depth3])


async def _bytes(self: Tensor) -> bytes | list[bytes]:
    """The raw bytes of the values (TF.js's ``bytes()``): one ``bytes`` of the little-endian storage for numeric
    dtypes (float32/int32: 4 bytes a value, bool: 1, complex64: 8), the list of UTF-8 encoded values for string
    tensors. A coroutine, as TF.js's returns a Promise."""
    values = await self.data()
    if self.dtype == "string":
        return [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    storage = {"bool": "u1", "int32": "<i4", "float32": "<f4", "complex64": "<c8"}[self.dtype]
    return values.astype(storage).tobytes()


def _where(self: Tensor, condition: Any, x: Any) -> Tensor:
    """``nf.where(condition, self, x)``: ``self``'s values where ``condition`` is true, else ``x``'s."""
    return logical.where(condition, self, x)


def _variable(self: Tensor, trainable: bool = True, name: str | None = None, dtype: str | None = None) -> Any:
    """``nf.variable(self, trainable, name, dtype)``: a new variable holding a copy of the values."""
    return creation.variable(self, trainable, name, dtype)


def _rmatmul(self: Tensor, other: Any) -> Tensor:
    return matrix.mat_mul(other, self)


def _reflected(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return method


def _buffer_to_tensor(self: TensorBuffer) -> Tensor:
    """A tensor of the buffer's values, shape and dtype (``nf.tensor(values, shape, dtype)``)."""
    return creation.tensor(self.values, self.shape, self.dtype)


def attach(families: Iterable[ModuleType]) -> None:
    """Attach each family's ``CHAINED`` ops as methods, plus the operators and ``TensorBuffer.to_tensor``."""
    TensorBuffer.to_tensor = _buffer_to_tensor  # type: ignore[method-assign]
    for family in families:
        for fn in getattr(family, "CHAINED", ()):
            setattr(Tensor, fn.__name__, _method(fn))
    Tensor.concat = _concat
    Tensor.stack = _stack
    Tensor.reshape_as = _reshape_as
    Tensor.as_type = _as_type
    Tensor.flatten = lambda self: shape.reshape(self, [-1])
    Tensor.as_scalar = _as_scalar
    Tensor.as1d, Tensor.as2d, Tensor.as3d, Tensor.as4d, Tensor.as5d = _as1d, _as2d, _as3d, _as4d, _as5d
    Tensor.bytes = _bytes
    Tensor.where = _where
    Tensor.variable = _variable
    Tensor.ones_like = _method(creation.ones_like)
    Tensor.zeros_like = _method(creation.zeros_like)
    Tensor.to_float = lambda self: shape.cast(self, "float32")
    Tensor.to_int = lambda self: shape.cast(self, "int32")
    Tensor.to_bool = lambda self: shape.cast(self, "bool")
    Tensor.T = property(lambda self: shape.transpose(self))

    Tensor.__add__ = arithmetic.add
    Tensor.__radd__ = _reflected(arithmetic.add)
    Tensor.__sub__ = arithmetic.sub
    Tensor.__rsub__ = _reflected(arithmetic.sub)
    Tensor.__mul__ = arithmetic.mul
    Tensor.__rmul__ = _reflected(arithmetic.mul)
    Tensor.__truediv__ = arithmetic.real_div
    Tensor.__rtruediv__ = _reflected(arithmetic.real_div)
    Tensor.__floordiv__ = arithmetic.floor_div
    Tensor.__rfloordiv__ = _reflected(arithmetic.floor_div)
    Tensor.__mod__ = arithmetic.mod
    Tensor.__rmod__ = _reflected(arithmetic.mod)
    Tensor.__pow__ = arithmetic.pow
    Tensor.__rpow__ = _reflected(arithmetic.pow)
    Tensor.__matmul__ = matrix.mat_mul
    Tensor.__rmatmul__ = _rmatmul
    Tensor.__neg__ = unary.neg
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = unary.abs
    Tensor.__eq__ = logical.equal
    Tensor.__ne__ = logical.not_equal
    Tensor.__lt__ = logical.less
    Tensor.__le__ = logical.less_equal
    Tensor.__gt__ = logical.greater
    Tensor.__ge__ = logical.greater_equal
    Tensor.__getitem__ = slicing.getitem
    Tensor.__hash__ = object.__hash__
    Tensor.__iter__ = lambda self: (self[i] for i in range(len(self)))
