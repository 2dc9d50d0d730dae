"""``sparse_to_dense`` (top level in TF.js, unlike the ``tf.sparse`` namespace).

Also the argument conversion shared by the sparse, string, losses and random families:
TF.js's ``convertToTensor(x, name, op, parseAsDtype)``, where a tensor argument must already have
the expected dtype and plain values are parsed as that dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import check_shape, dispose_temps, infer_dtype, to_tensor

NUMERIC = "numeric"  # any dtype but string
ANY = "string_or_numeric"


def _convert(x: Any, arg: str, op: str, dtype: str = NUMERIC) -> Tensor:
    """``x`` as a tensor whose dtype is ``dtype`` (or any numeric / any dtype); TypeError otherwise."""
    if isinstance(x, Tensor):
        actual = x.dtype
    elif x is None:
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor or values, got None")
    else:
        actual = infer_dtype(x)
        if actual != "string" and dtype in ("bool", "int32", "float32"):
            actual = dtype
    if (dtype == NUMERIC and actual == "string") or (dtype not in (NUMERIC, ANY) and actual != dtype):
        want = "a numeric" if dtype == NUMERIC else f"a {dtype}"
        raise TypeError(f"{op}: argument '{arg}' must be {want} tensor, got a {actual} tensor")
    return x if isinstance(x, Tensor) else to_tensor(x, arg, op, actual)


class _Args:
    """Converts an op's arguments (:func:`_convert`); tensors made here are disposed on exit."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.temps: list[Tensor] = []

    def __call__(self, x: Any, arg: str, dtype: str = NUMERIC) -> Tensor:
        t = _convert(x, arg, self.op, dtype)
        if t is not x:
            self.temps.append(t)
        return t

    def __enter__(self) -> _Args:
        return self

    def __exit__(self, *exc: object) -> None:
        dispose_temps(self.temps)


def sparse_to_dense(
    sparse_indices: TensorLike, sparse_values: TensorLike, output_shape: Sequence[int], default_value: TensorLike = 0
) -> Tensor:
    """A dense tensor of ``output_shape`` holding ``sparse_values`` at ``sparse_indices`` and
    ``default_value`` elsewhere; of duplicate indices the last wins."""
    op = "sparse_to_dense"
    shape = check_shape(output_shape, op, "output_shape")
    with _Args(op) as arg:
        indices = arg(sparse_indices, "sparse_indices", "int32")
        values = arg(sparse_values, "sparse_values", ANY)
        if values.dtype == "complex64":
            raise TypeError(f"{op}: argument 'sparse_values' must be float32, int32, bool or string, got complex64")
        default = arg(default_value, "default_value", values.dtype)
        if indices.rank > 2:
            raise ValueError(
                f"{op}: argument 'sparse_indices' must be a scalar, vector or matrix, got shape {list(indices.shape)}"
            )
        num_elems = indices.shape[0] if indices.rank > 0 else 1
        num_dims = indices.shape[1] if indices.rank > 1 else 1
        if len(shape) != num_dims:
            raise ValueError(
                f"{op}: argument 'output_shape' {list(shape)} must have {num_dims} dimensions "
                f"(sparse_indices has shape {list(indices.shape)})"
            )
        if not (values.rank == 0 or (values.rank == 1 and values.size == num_elems)):
            raise ValueError(
                f"{op}: argument 'sparse_values' must have shape [] or [{num_elems}], got {list(values.shape)}"
            )
        if default.rank != 0:
            raise ValueError(f"{op}: argument 'default_value' must be a scalar, got shape {list(default.shape)}")
        return ENGINE.run_kernel(kn.SparseToDense, (indices, values, default), {"output_shape": shape})


__all__ = ["sparse_to_dense"]
