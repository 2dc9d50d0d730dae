"""Shape and dtype transforms: cast, reshape, transpose, expand_dims, squeeze."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.dtypes import check_dtype
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, int_list, normalize_axes, normalize_axis


def cast(x: TensorLike, dtype: str) -> Tensor:
    """``x`` converted to ``dtype`` (floats to int32 truncate; numbers to bool test != 0)."""
    dtype = check_dtype(dtype, "cast")
    with converted(x, "x", "cast") as t:
        if (t.dtype == "string") != (dtype == "string"):
            raise TypeError(f"cast: cannot cast a {t.dtype} tensor to {dtype}")
        return ENGINE.run_kernel(kn.Cast, (t,), {"dtype": dtype})


def infer_shape(shape: Sequence[int], size: int, op: str = "reshape") -> tuple[int, ...]:
    """Resolve one -1 in ``shape`` so that it holds ``size`` elements."""
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, list | tuple):
        raise TypeError(f"{op}: argument 'shape' must be a list of ints, got {type(shape).__name__}")
    shape = [int(d) for d in shape]
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ValueError(f"{op}: argument 'shape' {shape} may hold one -1 and otherwise non-negative ints")
    known = math.prod(d for d in shape if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"{op}: cannot reshape a tensor of {size} elements into shape {shape}")
        shape[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"{op}: cannot reshape a tensor of {size} elements into shape {shape}")
    return tuple(shape)


@compiled.reshape_op(kn.Reshape)
def reshape(x: TensorLike, shape: Sequence[int]) -> Tensor:
    """The same values in a new shape (one dimension may be -1); shares the data."""
    if x.__class__ is Tensor:  # the common case, without a conversion scope
        return ENGINE.run_kernel(kn.Reshape, (x,), {"shape": infer_shape(shape, x.size)})
    with converted(x, "x", "reshape") as t:
        return ENGINE.run_kernel(kn.Reshape, (t,), {"shape": infer_shape(shape, t.size)})


def transpose(x: TensorLike, perm: Sequence[int] | None = None) -> Tensor:
    """Permute the axes (reversed by default)."""
    with converted(x, "x", "transpose") as t:
        if perm is None:
            perm = tuple(reversed(range(t.rank)))
        else:
            perm = int_list(perm, "transpose", "perm")
            if len(perm) != t.rank:
                raise ValueError(f"transpose: argument 'perm' {list(perm)} must have length {t.rank} (the rank)")
            perm = tuple(normalize_axis(p, t.rank, "transpose", "perm") for p in perm)
            if len(set(perm)) != t.rank:
                raise ValueError(f"transpose: argument 'perm' {list(perm)} must be a permutation of 0..{t.rank - 1}")
        return ENGINE.run_kernel(kn.Transpose, (t,), {"perm": perm})


def expand_dims(x: TensorLike, axis: int = 0) -> Tensor:
    """Insert an axis of size 1 at ``axis`` (negative counts from the end of the result)."""
    with converted(x, "x", "expand_dims") as t:
        dim = normalize_axis(axis, t.rank + 1, "expand_dims")
        return ENGINE.run_kernel(kn.ExpandDims, (t,), {"dim": dim})


def squeeze(x: TensorLike, axis: int | Sequence[int] | None = None) -> Tensor:
    """Remove axes of size 1 (all of them, or those listed, which must have size 1)."""
    with converted(x, "x", "squeeze") as t:
        if axis is None:
            axes = tuple(i for i, d in enumerate(t.shape) if d == 1)
        else:
            axes = normalize_axes(axis, t.rank, "squeeze")
            for a in axes:
                if t.shape[a] != 1:
                    raise ValueError(f"squeeze: cannot squeeze axis {a} of size {t.shape[a]} (shape {list(t.shape)})")
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
        return ENGINE.run_kernel(kn.Reshape, (t,), {"shape": shape})


__all__ = ["cast", "reshape", "transpose", "expand_dims", "squeeze"]

CHAINED = [cast, reshape, transpose, expand_dims, squeeze]  # also Tensor methods: x.cast(...)
