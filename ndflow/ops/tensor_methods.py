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
    Tensor.as_scalar = lambda self: shape.reshape(self, [])
    Tensor.as1d = lambda self: shape.reshape(self, [-1])
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
