"""``TensorBuffer``: a mutable, CPU-side array with ``get``/``set`` by multi-index, as TF.js's.

``to_tensor()`` makes a tensor through the ops (``nf.tensor``): the ops package attaches it
(``ndflow/ops/tensor_methods.py``), as it attaches ``Tensor``'s chainable methods, so that core imports no op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .dtypes import NUMPY_DTYPE, check_dtype

if TYPE_CHECKING:
    from .tensor import Tensor


class TensorBuffer:
    """Values to fill element by element, then turn into a tensor with ``to_tensor()``."""

    # Attached by ndflow/ops/tensor_methods.py: ``nf.tensor(self.values, self.shape, self.dtype)``.
    to_tensor: Callable[[TensorBuffer], Tensor]

    def __init__(self, shape: tuple[int, ...] | list[int], dtype: str = "float32", values: Any = None) -> None:
        self.dtype = check_dtype(dtype, "buffer")
        self.shape = tuple(int(d) for d in shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        if values is None:
            fill = "" if self.dtype == "string" else 0
            self.values = np.full(self.shape, fill, dtype=NUMPY_DTYPE[self.dtype])
        else:
            array = np.asarray(values, dtype=NUMPY_DTYPE[self.dtype])
            if array.size != self.size:
                raise ValueError(
                    f"buffer: length of values ({array.size}) does not match the size of shape {list(self.shape)} "
                    f"({self.size})"
                )
            self.values = array.reshape(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s // self.values.itemsize for s in self.values.strides[:-1]) if self.shape else ()

    def _index(self, locs: tuple[int, ...], op: str) -> tuple[int, ...]:
        if len(locs) != len(self.shape):
            raise ValueError(
                f"TensorBuffer.{op}: the number of indices ({len(locs)}) must match the rank ({len(self.shape)})"
            )
        for axis, (i, dim) in enumerate(zip(locs, self.shape, strict=True)):
            if not 0 <= i < dim:
                raise IndexError(f"TensorBuffer.{op}: index {i} is out of range [0, {dim}) on axis {axis}")
        return tuple(locs)

    def get(self, *locs: int) -> Any:
        return self.values[self._index(locs, "get")].item() if locs or not self.shape else self.values.item()

    def set(self, value: Any, *locs: int) -> None:  # noqa: A003 - TF.js's name
        self.values[self._index(locs, "set")] = value

    def loc_to_index(self, locs: list[int] | tuple[int, ...]) -> int:
        return int(np.ravel_multi_index(self._index(tuple(locs), "loc_to_index"), self.shape)) if self.shape else 0

    def index_to_loc(self, index: int) -> list[int]:
        if not 0 <= index < max(self.size, 1):
            raise IndexError(f"TensorBuffer.index_to_loc: index {index} is out of range [0, {self.size})")
        return [int(i) for i in np.unravel_index(index, self.shape)] if self.shape else []
