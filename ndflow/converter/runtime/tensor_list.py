"""TensorList (TF v2 ``TensorList*`` ops): a list of tensors of one dtype, known by a kept id tensor.

As TF.js's ``tensor_list.ts``, with TF's semantics where TF.js differs: ``TensorListReserve(n)`` makes a
list of ``n`` empty slots (TF.js starts empty and grows on ``SetItem``), an empty slot reads as zeros
when the element shape is fully known, ``TensorListSplit`` pieces keep their own row count (TF.js
reshapes each to the element shape), and tensors taken out of a list (``PopBack``, a replaced
``SetItem``) are freed with the list instead of leaking.
"""

from __future__ import annotations

from collections.abc import Sequence

from ... import ops
from ...core.globals import keep, tidy
from ...core.tensor import Tensor
from .tensor_array import Shape, _empty, assert_shapes_match


def merge_element_shape(a: Shape, b: Shape) -> Shape:
    """The more specific of two partially known shapes; ValueError when they disagree."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ValueError(f"Incompatible ranks during merge: {a} vs. {b}")
    out = []
    for x, y in zip(a, b, strict=True):
        if x >= 0 and y >= 0 and x != y:
            raise ValueError(f"Incompatible shape during merge: {a} vs. {b}")
        out.append(x if x >= 0 else y)
    return out


def _fully_defined(shape: Shape) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


class TensorList:
    """A list of tensors with a partially known ``element_shape`` (None: unknown rank)."""

    def __init__(
        self, tensors: Sequence[Tensor | None], element_shape: Shape, element_dtype: str, max_num_elements: int = -1
    ) -> None:
        self.tensors: list[Tensor | None] = list(tensors)
        self.element_shape = element_shape
        self.element_dtype = element_dtype
        self.max_num_elements = max_num_elements
        self.released: list[Tensor] = []  # taken out of the list; freed with it (other nodes may still read them)
        for t in self.tensors:
            if t is None:
                continue
            self._check_dtype(t.dtype)
            assert_shapes_match(element_shape, list(t.shape), "TensorList shape mismatch: ")
            keep(t)
        self.id_tensor = keep(ops.scalar(0))

    @property
    def id(self) -> int:
        """The id of the handle tensor."""
        return self.id_tensor.id

    def _check_dtype(self, dtype: str | None) -> None:
        if dtype and dtype != self.element_dtype:
            raise ValueError(f"Invalid data types; op elements {dtype}, but list elements {self.element_dtype}")

    def size(self) -> int:
        """Number of slots."""
        return len(self.tensors)

    def clear_and_close(self, keep_ids: set[int] | None = None) -> None:
        """Free the stored tensors (except ``keep_ids``) and the handle."""
        for t in [*self.tensors, *self.released]:
            if t is not None and (keep_ids is None or t.id not in keep_ids):
                t.dispose()
        self.tensors = []
        self.released = []
        self.id_tensor.dispose()

    def _infer(self, element_shape: Shape) -> list[int]:
        """The element shape to return: the list's, the op's and the stored tensors' merged."""
        shape = merge_element_shape(self.element_shape, element_shape)
        present = [t for t in self.tensors if t is not None]
        if not _fully_defined(shape):
            if not present:
                raise ValueError(
                    f"Tried to calculate elements of an empty list with non-fully-defined elementShape: {shape}"
                )
            for t in present:
                shape = merge_element_shape(list(t.shape), shape)
        if not _fully_defined(shape):
            raise ValueError(f"Non-fully-defined elementShape: {shape}")
        return list(shape or [])

    def _element(self, index: int, shape: list[int]) -> Tensor:
        t = self.tensors[index]
        if t is None:
            return ops.zeros(shape, self.element_dtype)
        return ops.reshape(t, shape)

    def stack(self, element_shape: Shape, element_dtype: str, num_elements: int = -1) -> Tensor:
        """All elements stacked along a new first axis."""
        self._check_dtype(element_dtype)
        if num_elements != -1 and self.size() != num_elements:
            raise ValueError(
                f"Operation expected a list with {num_elements} elements but got a list with {self.size()} elements."
            )
        assert_shapes_match(element_shape, self.element_shape, "TensorList shape mismatch: ")
        shape = self._infer(element_shape)
        if self.size() == 0:
            return _empty(shape, self.element_dtype)
        return tidy(lambda: ops.stack([self._element(i, shape) for i in range(self.size())], 0))

    def pop_back(self, element_shape: Shape, element_dtype: str) -> Tensor:
        """Remove and return the last element."""
        self._check_dtype(element_dtype)
        if self.size() == 0:
            raise ValueError("Trying to pop from an empty list.")
        shape = self._infer(element_shape)
        t = self.tensors.pop()
        if t is None:
            return ops.zeros(shape, self.element_dtype)
        assert_shapes_match(list(t.shape), element_shape, "TensorList shape mismatch: ")
        self.released.append(t)
        return ops.reshape(t, shape)

    def push_back(self, tensor: Tensor) -> None:
        """Append an element (kept)."""
        self._check_dtype(tensor.dtype)
        assert_shapes_match(list(tensor.shape), self.element_shape, "TensorList shape mismatch: ")
        if self.max_num_elements == self.size():
            raise ValueError("Trying to push element into a full list.")
        self.tensors.append(keep(tensor))

    def resize(self, size: int) -> TensorList:
        """A new list of ``size`` slots holding this list's first elements."""
        if size < 0:
            raise ValueError(f"TensorListResize expects size to be non-negative. Got: {size}")
        if self.max_num_elements != -1 and size > self.max_num_elements:
            raise ValueError(f"TensorListResize input size {size} is greater maxNumElement {self.max_num_elements}.")
        kept = [ops.clone(t) if t is not None else None for t in self.tensors[:size]]
        kept += [None] * (size - len(kept))
        return TensorList(kept, self.element_shape, self.element_dtype, self.max_num_elements)

    def get_item(self, index: int, element_shape: Shape, element_dtype: str) -> Tensor:
        """The element at ``index``."""
        self._check_dtype(element_dtype)
        if index < 0 or index >= self.size():
            raise ValueError(f"Trying to access element {index} in a list with {self.size()} elements.")
        t = self.tensors[index]
        if t is None and not _fully_defined(merge_element_shape(self.element_shape, element_shape)):
            raise ValueError(f"element at index {index} is null.")
        if t is not None:
            assert_shapes_match(list(t.shape), element_shape, "TensorList shape mismatch: ")
        return self._element(index, self._infer(element_shape))

    def set_item(self, index: int, tensor: Tensor) -> None:
        """Store ``tensor`` at ``index`` (the list grows when needed); the tensor it replaces is freed."""
        self._check_dtype(tensor.dtype)
        if index < 0 or (self.max_num_elements != -1 and index >= self.max_num_elements):
            raise ValueError(f"Trying to set element {index} in a list with max {self.max_num_elements} elements.")
        assert_shapes_match(self.element_shape, list(tensor.shape), "TensorList shape mismatch: ")
        while len(self.tensors) <= index:
            self.tensors.append(None)
        old = self.tensors[index]
        self.tensors[index] = keep(tensor)
        if old is not None and old is not tensor:
            self.released.append(old)

    def gather(self, indices: Sequence[int], element_dtype: str, element_shape: Shape) -> Tensor:
        """The elements at ``indices`` (those past the end are ignored) stacked along a new first axis."""
        self._check_dtype(element_dtype)
        assert_shapes_match(self.element_shape, element_shape, "TensorList shape mismatch: ")
        idx = [int(i) for i in indices][: self.size()]
        shape = self._infer(element_shape)
        if not idx:
            return _empty(shape, self.element_dtype)
        return tidy(lambda: ops.stack([self._element(i, shape) for i in idx], 0))

    def concat(self, element_dtype: str, element_shape: Shape) -> Tensor:
        """All elements concatenated along their first axis."""
        self._check_dtype(element_dtype)
        assert_shapes_match(self.element_shape, element_shape, "TensorList shape mismatch: ")
        shape = self._infer(element_shape)
        if self.size() == 0:
            return _empty(shape, self.element_dtype)
        return tidy(lambda: ops.concat([self._element(i, shape) for i in range(self.size())], 0))


def from_tensor(tensor: Tensor, element_shape: Shape, element_dtype: str) -> TensorList:
    """A list whose elements are the slices of ``tensor`` along its first axis."""
    if tensor.rank < 1:
        raise ValueError(f"Tensor must be at least a vector, but saw shape: {list(tensor.shape)}")
    if tensor.dtype != element_dtype:
        raise ValueError(f"Invalid data types; op elements {tensor.dtype}, but list elements {element_dtype}")
    assert_shapes_match(list(tensor.shape[1:]), element_shape, "TensorList shape mismatch: ")
    return TensorList(list(ops.unstack(tensor, 0)), element_shape, tensor.dtype)


def reserve(element_shape: Shape, element_dtype: str, num_elements: int, max_num_elements: int) -> TensorList:
    """A list of ``num_elements`` empty slots."""
    return TensorList([None] * max(int(num_elements), 0), element_shape, element_dtype, max_num_elements)


def scatter(tensor: Tensor, indices: Sequence[int], element_shape: Shape, num_elements: int | None) -> TensorList:
    """A list with the slices of ``tensor`` at ``indices``."""
    if len(indices) != tensor.shape[0]:
        raise ValueError(f"Expected len(indices) == tensor.shape[0], but saw: {len(indices)} vs. {tensor.shape[0]}")
    if indices and num_elements is not None and num_elements != -1 and max(indices) >= num_elements:
        raise ValueError(f"Max index must be < array size ({max(indices)}  vs. {num_elements})")
    limit = -1 if num_elements is None else num_elements
    out = TensorList([], element_shape, tensor.dtype, limit)
    for i, t in zip(indices, ops.unstack(tensor, 0), strict=True):
        out.set_item(int(i), t)
    return out


def split(tensor: Tensor, lengths: Sequence[int], element_shape: Shape) -> TensorList:
    """A list of consecutive pieces of ``tensor`` (``lengths`` rows each)."""
    total = int(sum(lengths))
    if total != tensor.shape[0]:
        raise ValueError(
            f"Expected sum of lengths to be equal to tensor.shape[0], but sum of lengths is {total}, and tensor's "
            f"shape is: {list(tensor.shape)}"
        )
    per_row = 0 if total == 0 else tensor.size // total

    def pieces() -> list[Tensor]:
        flat = ops.reshape(tensor, [1, total, per_row])
        out, start = [], 0
        for n in lengths:
            piece = ops.slice(flat, [0, start, 0], [1, int(n), per_row])
            out.append(ops.reshape(piece, [int(n), *tensor.shape[1:]]))
            start += int(n)
        return out

    out = TensorList([], element_shape, tensor.dtype, len(lengths))
    for i, t in enumerate(tidy(pieces)):
        out.set_item(i, t)
    return out
