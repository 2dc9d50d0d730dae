"""``LayerVariable``: a layer's weight, a named ``nf.Variable`` with an optional constraint.

``name`` is unique in the process (``dense_Dense1/kernel``, then ``..._1``); ``original_name``
is the name asked for under the layer's name scope: the key of the weight in saved models.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.globals import tidy
from ..core.tensor import Tensor, Variable
from ..ops import tensor as make_tensor
from ..ops import variable
from .naming import get_scoped_tensor_name, get_unique_tensor_name

_next_id = itertools.count().__next__


class LayerVariable:
    """A layer weight: ``read()`` gives the ``nf.Variable``, ``write(value)`` assigns (then constrains)."""

    def __init__(
        self,
        val: Tensor,
        dtype: str | None = "float32",
        name: str | None = "Variable",
        trainable: bool = True,
        constraint: Any = None,
    ) -> None:
        self.dtype = dtype or "float32"
        self.shape = tuple(val.shape)
        self.id = _next_id()
        self.original_name = get_scoped_tensor_name(name or "Variable")
        self.name = get_unique_tensor_name(self.original_name)
        self._trainable = bool(trainable)
        self.constraint = constraint
        self.val: Variable = variable(val, self._trainable, self.name, self.dtype)

    def read(self) -> Variable:
        """The underlying variable (not a copy: do not dispose it)."""
        self.assert_not_disposed()
        return self.val

    def write(self, new_val: Any) -> LayerVariable:
        """Assign a new value of the same shape (tensor, array or nested list), then apply the constraint."""
        self.assert_not_disposed()
        if isinstance(new_val, Tensor):
            value = new_val
        else:
            value = make_tensor(np.asarray(new_val), dtype=self.dtype)
        try:
            if tuple(value.shape) != self.shape:
                raise ValueError(
                    f"shape mismatch for weight {self.name}: expected {list(self.shape)}, got {list(value.shape)}"
                )
            if value.id != self.val.id:
                if value.dtype != self.dtype:
                    raise TypeError(f"dtype mismatch for weight {self.name}: expected {self.dtype}, got {value.dtype}")
                self.val.assign(value)
                if self.constraint is not None:
                    tidy(lambda: self.val.assign(self.constraint.apply(self.val)))
        finally:
            if value is not new_val:
                value.dispose()
        return self

    def dispose(self) -> None:
        """Free the variable."""
        self.assert_not_disposed()
        self.val.dispose()

    @property
    def is_disposed(self) -> bool:
        """Whether the variable was freed."""
        return self.val.is_disposed

    def assert_not_disposed(self) -> None:
        """Raise if the variable was freed."""
        if self.val.is_disposed:
            raise RuntimeError(f"LayerVariable {self.name} is already disposed.")

    @property
    def trainable(self) -> bool:
        """Whether optimizers update this weight."""
        return self._trainable

    @trainable.setter
    def trainable(self, trainable: bool) -> None:
        self._trainable = bool(trainable)
        self.val.trainable = bool(trainable)

    @property
    def size(self) -> int:
        """The number of scalars."""
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        return f"<LayerVariable {self.name!r} shape={list(self.shape)} dtype={self.dtype} trainable={self.trainable}>"


def batch_get_value(xs: Sequence[LayerVariable]) -> list[Variable]:
    """The variables of several layer variables."""
    return [x.read() for x in xs]


def batch_set_value(variables_and_values: Sequence[tuple[LayerVariable, Any]]) -> None:
    """Write each value into its layer variable."""
    for var, value in variables_and_values:
        var.write(value)


__all__ = ["LayerVariable", "batch_get_value", "batch_set_value"]
