"""TensorArray (TF v1 ``TensorArrayV3`` ops): a fixed or growable array of tensors, written once each.

As TF.js's ``tensor_array.ts``: an array is known by its id tensor (a kept scalar) that flows through
the graph as the ``handle``; written tensors are kept until the array is closed or the run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...core.globals import keep, tidy
from ...core.tensor import Tensor

Shape = list[int] | None  # None: unknown rank


def shapes_match(a: Shape, b: Shape) -> bool:
    """Shapes agree where both are known (-1 or an unknown rank match anything)."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x < 0 or y < 0 or x == y for x, y in zip(a, b, strict=True))


def assert_shapes_match(a: Shape, b: Shape, prefix: str) -> None:
    """ValueError unless :func:`shapes_match`."""
    if not shapes_match(a, b):
        raise ValueError(f"{prefix} Shapes {list(a or [])} and {list(b or [])} must match")


def _empty(element_shape: Shape, dtype: str) -> Tensor:
    """A tensor of shape ``[0, *element_shape]`` (unknown dims as 0)."""
    return ops.tensor(np.zeros([0, *[max(int(d), 0) for d in element_shape or []]]), None, dtype)


@dataclass
class _Entry:
    tensor: Tensor | None = None
    written: bool = False
    read: bool = False
    cleared: bool = False


class TensorArray:
    """An array of tensors of one dtype and (partially known) element shape."""

    def __init__(
        self,
        name: str,
        dtype: str,
        max_size: int,
        element_shape: Shape,
        identical_element_shapes: bool = False,
        dynamic_size: bool = False,
        clear_after_read: bool = False,
    ) -> None:
        self.name = name
        self.dtype = dtype
        self.max_size = max_size
        self.element_shape = element_shape
        self.identical_element_shapes = identical_element_shapes
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.entries: list[_Entry] = []
        self.closed = False
        self.id_tensor = keep(ops.scalar(0))

    @property
    def id(self) -> int:
        """The id of the handle tensor."""
        return self.id_tensor.id

    def size(self) -> int:
        """Number of slots written or reserved so far."""
        return len(self.entries)

    def clear_and_close(self, keep_ids: set[int] | None = None) -> None:
        """Free the stored tensors (except ``keep_ids``) and the handle; the array is closed."""
        for e in self.entries:
            if e.tensor is not None and (keep_ids is None or e.tensor.id not in keep_ids):
                e.tensor.dispose()
        self.entries = []
        self.closed = True
        self.id_tensor.dispose()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"TensorArray {self.name} has already been closed.")

    def read(self, index: int) -> Tensor:
        """The tensor at ``index`` (once only with ``clear_after_read``)."""
        self._check_open()
        if index < 0 or index >= self.size():
            raise ValueError(f"Tried to read from index {index}, but array size is: {self.size()}")
        e = self.entries[index]
        if e.cleared:
            raise ValueError(
                f"TensorArray {self.name}: Could not read index {index} twice because it was cleared after a "
                "previous read (perhaps try setting clear_after_read = false?)."
            )
        if e.tensor is None:
            raise ValueError(f"TensorArray {self.name}: index {index} was never written")
        if self.clear_after_read:
            e.cleared = True
        e.read = True
        return e.tensor

    def write(self, index: int, tensor: Tensor) -> None:
        """Store ``tensor`` at ``index`` (each index once; the tensor is kept)."""
        self._check_open()
        if index < 0 or (not self.dynamic_size and index >= self.max_size):
            raise ValueError(
                f"Tried to write to index {index}, but array is not resizeable and size is: {self.max_size}"
            )
        if tensor.dtype != self.dtype:
            raise ValueError(
                f"TensorArray {self.name}: Could not write to TensorArray index {index}, because the value dtype "
                f"is {tensor.dtype}, but TensorArray dtype is {self.dtype}."
            )
        if self.size() == 0 and not self.element_shape:
            self.element_shape = list(tensor.shape)
        assert_shapes_match(
            self.element_shape, list(tensor.shape), f"TensorArray {self.name}: Could not write to index {index}."
        )
        while len(self.entries) <= index:
            self.entries.append(_Entry())
        e = self.entries[index]
        if e.read:
            raise ValueError(f"TensorArray {self.name}: Could not write to index {index}, it has already been read.")
        if e.written:
            raise ValueError(f"TensorArray {self.name}: Could not write to index {index}, it has already been written.")
        e.tensor = keep(tensor)
        e.written = True

    def gather(self, indices: Sequence[int] | None = None, dtype: str | None = None) -> Tensor:
        """The tensors at ``indices`` (all by default) stacked along a new first axis."""
        if dtype and dtype != self.dtype:
            raise ValueError(f"TensorArray dtype is {self.dtype} but gather requested dtype {dtype}")
        idx = list(range(self.size())) if indices is None else list(indices)[: self.size()]
        if not idx:
            return _empty(self.element_shape, self.dtype)
        tensors = [self.read(i) for i in idx]
        assert_shapes_match(self.element_shape, list(tensors[0].shape), "TensorArray shape mismatch: ")
        return ops.stack(tensors, 0)

    def concat(self, dtype: str | None = None) -> Tensor:
        """All tensors concatenated along their first axis."""
        if dtype and dtype != self.dtype:
            raise ValueError(f"TensorArray dtype is {self.dtype} but concat requested dtype {dtype}")
        if self.size() == 0:
            return _empty(self.element_shape, self.dtype)
        tensors = [self.read(i) for i in range(self.size())]
        assert_shapes_match(
            self.element_shape,
            list(tensors[0].shape),
            f"TensorArray shape mismatch: tensor array shape ({self.element_shape}) vs first tensor shape "
            f"({list(tensors[0].shape)})",
        )
        return ops.concat(tensors, 0)

    def scatter(self, indices: Sequence[int], tensor: Tensor) -> None:
        """Write the slices of ``tensor`` along its first axis to ``indices``."""
        if tensor.dtype != self.dtype:
            raise ValueError(f"TensorArray dtype is {self.dtype} but tensor has dtype {tensor.dtype}")
        if len(indices) != tensor.shape[0]:
            raise ValueError(f"Expected len(indices) == tensor.shape[0], but saw: {len(indices)} vs. {tensor.shape[0]}")
        if indices and not self.dynamic_size and max(indices) >= self.max_size:
            raise ValueError(f"Max index must be < array size ({max(indices)}  vs. {self.max_size})")
        for i, t in zip(indices, ops.unstack(tensor, 0), strict=True):
            self.write(int(i), t)

    def split(self, lengths: Sequence[int], tensor: Tensor) -> None:
        """Write consecutive pieces of ``tensor`` (``lengths`` rows each) to indices 0, 1, ..."""
        if tensor.dtype != self.dtype:
            raise ValueError(f"TensorArray dtype is {self.dtype} but tensor has dtype {tensor.dtype}")
        total = int(sum(lengths))
        if total != tensor.shape[0]:
            raise ValueError(
                f"Expected sum of lengths to be equal to tensor.shape[0], but sum of lengths is {total}, and "
                f"tensor's shape is: {list(tensor.shape)}"
            )
        if not self.dynamic_size and len(lengths) != self.max_size:
            raise ValueError(
                f"TensorArray's size is not equal to the size of lengths ({self.max_size} vs. {len(lengths)}), "
                "and the TensorArray is not marked as dynamically resizeable"
            )
        per_row = 0 if total == 0 else tensor.size // total

        def pieces() -> list[Tensor]:
            flat = ops.reshape(tensor, [1, total, per_row])
            out, start = [], 0
            for n in lengths:
                piece = ops.slice(flat, [0, start, 0], [1, int(n), per_row])
                shape = self.element_shape if self.element_shape else [int(n), *tensor.shape[1:]]
                out.append(ops.reshape(piece, shape))
                start += int(n)
            return out

        for i, t in enumerate(tidy(pieces)):
            self.write(i, t)
