"""The types of ndflow's public signatures, in one place: what an op accepts as a tensor, a shape, a dtype, a seed.

``TensorLike`` is what every op converts to a tensor on entry: a ``Tensor``, a numpy array or scalar, a Python
number, bool or string, or nested lists and tuples of those (TF.js's ``TensorLike``, plus numpy). Users annotate
their own functions with these names (``from ndflow.core.types import TensorLike``, also ``nf.types.TensorLike``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .tensor import Tensor

#: A single value an op turns into a rank-0 tensor.
Scalar: TypeAlias = int | float | bool | str | bytes | complex | np.generic

#: Anything an op converts to a tensor: a tensor, a numpy array, a scalar, or nested sequences of these.
TensorLike: TypeAlias = Union["Tensor", npt.NDArray[np.generic], Scalar, Sequence["TensorLike"]]  # noqa: UP007

#: A model's inputs or targets: one tensor-like, a list of them (one per input/output), or a dict by name.
ModelData: TypeAlias = Union[TensorLike, Sequence[TensorLike], Mapping[str, TensorLike]]  # noqa: UP007

#: What a model gives back: one tensor, a list of tensors (one per output or metric), or a dict by name.
ModelOutput: TypeAlias = Union["Tensor", list["Tensor"], dict[str, "Tensor"]]  # noqa: UP007

#: A tensor's shape: one int per dimension (``-1`` where an op infers one).
Shape: TypeAlias = Sequence[int]

#: The names of the dtypes (TF.js's ``DataType``).
DType: TypeAlias = Literal["float32", "int32", "bool", "complex64", "string"]

#: A seed of the random ops and initializers: the same seed gives the same values (None: a fresh stream).
Seed: TypeAlias = int | float | str | None


class SupportsDLPack(Protocol):
    """An array that exports its memory through the DLPack protocol (a torch tensor, a numpy array, ...)."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...


__all__ = ["DType", "ModelData", "ModelOutput", "Scalar", "Seed", "Shape", "SupportsDLPack", "TensorLike"]
