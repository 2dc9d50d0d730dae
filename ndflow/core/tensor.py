"""``Tensor`` (immutable) and ``Variable`` (mutable through ``assign``).

Chainable methods and Python operators are attached by ``ndflow.ops`` (core knows no op).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dlpack, numpy_protocol
from .tensor_format import tensor_to_string

if TYPE_CHECKING:
    from .engine import DataInfo, Engine
    from .tensor_buffer import TensorBuffer

# Tensors of more values than this have a one-line repr (numpy summarizes from 1000 values too).
REPR_FULL_LIMIT = 1000

# Set by the engine when it is created; the tensor module itself holds no state.
ENGINE: Engine = None  # type: ignore[assignment]


class DisposedTensorError(RuntimeError):
    """A tensor was used after ``dispose()``."""


if TYPE_CHECKING:  # the methods and operators ndflow.ops attaches (generated: tools/gen_typing.py)
    from ._tensor_methods import TensorMethods as _AttachedMethods
else:
    _AttachedMethods = object


class Tensor(_AttachedMethods):
    """An immutable n-dimensional array whose values live in a backend's data store."""

    __slots__ = ("shape", "dtype", "size", "id", "data_id", "_info", "kept", "scope_id", "_disposed", "__weakref__")

    # numpy defers to the tensor's operators (`ndarray + tensor` is a Tensor, not an ndarray): numpy's rule for
    # objects without `__array_ufunc__` whose priority is higher. numpy's functions and ufuncs called on a tensor
    # (`np.sum(t)`, `np.sqrt(t)`) compute in numpy and return numpy values (docs/interop.md).
    __array_priority__ = 1000

    def __init__(self, shape: tuple[int, ...], dtype: str, data_id: int, tensor_id: int, info: DataInfo) -> None:
        self.shape = shape
        self.dtype = dtype
        self.size = math.prod(shape)
        self.id = tensor_id
        self.data_id = data_id
        self._info = info
        self.kept = False
        self.scope_id = 0
        self._disposed = False

    # -- attributes ------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def ndim(self) -> int:
        """The rank (numpy's name)."""
        return len(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        strides, acc = [], 1
        for dim in reversed(self.shape[1:]):
            acc *= dim
            strides.append(acc)
        return tuple(reversed(strides))

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    @property
    def backend_name(self) -> str:
        return self._info.backend.name

    def throw_if_disposed(self, where: str = "") -> None:
        if self._disposed:
            use = f" as {where}" if where else ""
            raise DisposedTensorError(
                f"Tensor is disposed: tensor id {self.id} (shape {self.shape}, {self.dtype}) was used{use} "
                "after dispose()"
            )

    # -- reads -----------------------------------------------------------------------------------
    def _values(self) -> np.ndarray:
        """The backend's array for this tensor (never written to)."""
        if self._disposed:
            self.throw_if_disposed()
        return ENGINE.read_sync(self)

    def data_sync(self) -> np.ndarray:
        """The values as a flat, read-only numpy array (blocks until they are ready)."""
        flat = self._values().reshape(-1).view()
        flat.flags.writeable = False
        return flat

    async def data(self) -> np.ndarray:
        """The values as a flat, read-only numpy array, without blocking the event loop."""
        self.throw_if_disposed()
        values = await ENGINE.read(self)
        flat = values.reshape(-1).view()
        flat.flags.writeable = False
        return flat

    def array_sync(self) -> Any:
        """The values as nested Python lists (a Python scalar for rank 0)."""
        return self._values().reshape(self.shape).tolist()

    async def array(self) -> Any:
        self.throw_if_disposed()
        values = await ENGINE.read(self)
        return values.reshape(self.shape).tolist()

    def numpy(self) -> np.ndarray:
        """A writable numpy copy of the values, in the tensor's shape."""
        return np.array(self._values(), copy=True).reshape(self.shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """numpy's conversion: a read-only view of the values (a writable copy with ``copy=True``)."""
        return numpy_protocol.as_array(self, dtype, copy)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy functions on tensors (``np.sum(t)``, ``np.concatenate([t, u])``) run on the values and return
        numpy values: nothing to dispose."""
        return numpy_protocol.array_function(func, args, kwargs)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of the values: zero-copy and read-only where possible (see ``ndflow/core/dlpack.py``)."""
        return dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device type, device id)`` of the values: ``(1, 0)`` for host memory, ``(2, i)`` CUDA."""
        return dlpack.dlpack_device(self)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar (float, int, bool, complex or str)."""
        if self.size != 1:
            raise ValueError(f"item: only a tensor of one element has a Python value, got shape {list(self.shape)}")
        return self._values().reshape(()).item()

    def tolist(self) -> Any:
        """The values as nested Python lists (a Python scalar for rank 0), as numpy's ``tolist``."""
        return self.array_sync()

    def buffer_sync(self) -> TensorBuffer:
        """A mutable ``TensorBuffer`` holding a copy of the values."""
        from .tensor_buffer import TensorBuffer

        return TensorBuffer(self.shape, self.dtype, np.array(self._values(), copy=True))

    async def buffer(self) -> TensorBuffer:
        from .tensor_buffer import TensorBuffer

        self.throw_if_disposed()
        values = await ENGINE.read(self)
        return TensorBuffer(self.shape, self.dtype, np.array(values, copy=True))

    def bytes_sync(self) -> list[bytes]:
        """The raw UTF-8 bytes of a string tensor's values."""
        if self.dtype != "string":
            raise TypeError(f"bytes_sync: tensor of dtype {self.dtype} is not a string tensor")
        return [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in self._values().flat]

    # -- memory ----------------------------------------------------------------------------------
    def dispose(self) -> None:
        if not self._disposed:
            ENGINE.dispose_tensor(self)

    # -- printing --------------------------------------------------------------------------------
    def to_string(self, verbose: bool = False) -> str:
        return tensor_to_string(self._values(), self.shape, self.dtype, verbose)

    def print(self, verbose: bool = False) -> None:  # noqa: A003 - TF.js's name
        print(self.to_string(verbose))

    def __str__(self) -> str:
        if self._disposed:
            return f"Tensor (disposed, shape {list(self.shape)}, {self.dtype})"
        return self.to_string()

    def __repr__(self) -> str:
        """TF.js's verbose text up to ``REPR_FULL_LIMIT`` values; a one-line summary above it.

        Python builds reprs where nobody reads them (Python 3.11's ``asyncio.run`` formats the finished task,
        result included, on every run): TF.js's text sizes its columns from every value, which takes a second
        for a few million values. ``print(t)`` and ``t.to_string()`` always give TF.js's text."""
        if self._disposed:
            return f"<ndflow.Tensor id={self.id} disposed shape={list(self.shape)} dtype={self.dtype}>"
        if self.size > REPR_FULL_LIMIT:
            shown = f"shape={list(self.shape)} dtype={self.dtype}"
            return f"<ndflow.Tensor id={self.id} {shown} (print() shows the values)>"
        return self.to_string(verbose=True)

    def __format__(self, format_spec: str) -> str:
        """``f"{t:.2f}"`` formats the value of a rank-0 tensor; ``f"{t}"`` is ``str(t)`` (as torch does)."""
        return numpy_protocol.format_tensor(self, format_spec)

    def _repr_html_(self) -> str:
        """The tensor in notebooks: its repr (TF.js's print layout) in a ``<pre>`` block."""
        return numpy_protocol.html(self)

    # -- Python protocol -------------------------------------------------------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a rank-0 tensor")
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"The truth value of a tensor with {self.size} elements is ambiguous; use nf.any() or nf.all()"
            )
        return bool(self._values().reshape(()))

    def __float__(self) -> float:
        return float(self._scalar_value("float"))

    def __int__(self) -> int:
        return int(self._scalar_value("int"))

    def __index__(self) -> int:
        if self.dtype != "int32":
            raise TypeError(f"only int32 tensors can be used as an index, got {self.dtype}")
        return int(self._scalar_value("index"))

    def _scalar_value(self, what: str) -> Any:
        if self.size != 1:
            raise TypeError(f"only tensors with one element can be converted to {what}, got shape {self.shape}")
        return self._values().reshape(()).item()

    __hash__ = object.__hash__

    def __await__(self) -> Generator[Any, None, Tensor]:
        """``await t`` gives ``t`` at once (a finished result; ported ``await model.predict(x)`` works)."""
        return self
        yield  # pragma: no cover - a generator that finishes on its first step


class Variable(Tensor):
    """A tensor whose value can be replaced with ``assign``; never disposed by ``tidy``."""

    __slots__ = ("name", "trainable")

    def __init__(self, initial: Tensor, trainable: bool, name: str, tensor_id: int, info: DataInfo) -> None:
        super().__init__(initial.shape, initial.dtype, initial.data_id, tensor_id, info)
        self.trainable = trainable
        self.name = name

    def assign(self, new_value: Tensor) -> Variable:
        """Replace the value; ``new_value`` must have the variable's dtype and shape."""
        self.throw_if_disposed()
        if not isinstance(new_value, Tensor):
            raise TypeError(f"assign: new_value must be a Tensor, got {type(new_value).__name__}")
        new_value.throw_if_disposed()
        if new_value.dtype != self.dtype:
            raise TypeError(
                f"assign: dtype of the new value ({new_value.dtype}) does not match the variable's ({self.dtype})"
            )
        if new_value.shape != self.shape:
            raise ValueError(
                f"assign: shape of the new value {new_value.shape} does not match the variable's {self.shape}"
            )
        ENGINE.assign_variable(self, new_value)
        return self

    def dispose(self) -> None:
        if not self._disposed:
            ENGINE.dispose_variable(self)

    def __repr__(self) -> str:
        return f"Variable {self.name!r} (trainable={self.trainable})\n" + super().__repr__()
