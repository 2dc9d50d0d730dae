"""numpy's advanced indexing on tensors: ``t[t > 2]`` (a boolean mask) and ``t[[0, 2]]`` (integer arrays).

One array index per indexing, anywhere among ints, slices, ``None`` and ``...``: the basic part runs as a
strided slice, then a boolean mask becomes a gather of the positions of its true values (read synchronously,
as numpy does; TF.js's ``booleanMaskAsync`` reads them asynchronously), and an integer array a gather. Both
are differentiable as gather and reshape are. Lists and numpy arrays of ints may be negative (counted from the
end) and are checked against the dimension; an int32 tensor goes to ``gather`` as it is (TF.js's rules).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor


def is_array_index(k: Any) -> bool:
    """Whether an index entry is an array index (mask or integers) rather than basic indexing."""
    if isinstance(k, Tensor):
        return k.rank > 0 or k.dtype == "bool"
    if isinstance(k, np.ndarray):
        return k.ndim > 0 or k.dtype.kind == "b"
    return isinstance(k, list)


def array_getitem(x: Tensor, key: tuple, basic: Callable[[Tensor, tuple], Tensor]) -> Tensor:
    """``x[key]`` where ``key`` holds one array index; ``basic`` runs the rest (a strided slice)."""
    positions = [i for i, k in enumerate(key) if is_array_index(k)]
    if len(positions) > 1:
        raise IndexError(
            f"getitem: only one array index per indexing is supported, got {len(positions)}; "
            "use nf.gather_nd for several"
        )
    at = positions[0]
    index, is_mask = _index_values(key[at])
    mask_rank = index.ndim if is_mask else 1
    if is_mask and index.ndim == 0:
        raise IndexError("getitem: a rank-0 boolean index is not supported")
    rest = key[:at] + (builtins.slice(None),) * mask_rank + key[at + 1 :]
    consumed = sum(1 for k in rest if k is not None and k is not Ellipsis)
    if consumed > x.rank:
        raise IndexError(f"getitem: too many indices ({consumed}) for a tensor of rank {x.rank}")
    axis = _output_axis(key[:at], x.rank - consumed)
    temps: list[Tensor] = []
    try:
        y = x if all(isinstance(k, builtins.slice) and k == builtins.slice(None) for k in rest) else basic(x, rest)
        if y is not x:
            temps.append(y)
        if is_mask:
            span = y.shape[axis : axis + mask_rank]
            if span != index.shape:
                raise IndexError(
                    f"getitem: the boolean index of shape {list(index.shape)} does not match the indexed dims "
                    f"{list(span)} of the tensor of shape {list(x.shape)}"
                )
            merged = (*y.shape[:axis], math.prod(span), *y.shape[axis + mask_rank :])
            y = ENGINE.run_kernel(kn.Reshape, (y,), {"shape": merged})
            temps.append(y)
            index = np.flatnonzero(index).astype(np.int32)
        if isinstance(index, Tensor):
            idx = index
        else:
            index = _checked(index, y.shape[axis], axis)
            idx = ENGINE.make_tensor(index, index.shape, "int32")
            temps.append(idx)
        out = ENGINE.run_kernel(kn.GatherV2, (y, idx), {"axis": axis, "batch_dims": 0})
        if axis == 0 or _adjacent(key, at):
            return out
        temps.append(out)  # numpy: array indices apart from each other go first
        dims = list(range(axis, axis + idx.rank))
        perm = dims + [d for d in range(out.rank) if d not in dims]
        return ENGINE.run_kernel(kn.Transpose, (out,), {"perm": perm})
    finally:
        ENGINE.dispose(temps)


def _index_values(k: Any) -> tuple[Any, bool]:
    """The index as a numpy array (a bool mask or ints) or an int32 tensor, and whether it is a mask."""
    if isinstance(k, Tensor):
        if k.dtype == "bool":
            return np.asarray(k._values()).reshape(k.shape), True
        if k.dtype != "int32":
            raise IndexError(f"getitem: a tensor index must be int32 or bool, got {k.dtype}")
        return k, False
    try:
        array = np.asarray(k)
    except ValueError as exc:
        raise IndexError(f"getitem: the index list is ragged: {exc}") from None
    if array.dtype.kind == "b":
        return array, True
    if array.size == 0:
        return array.astype(np.int64), False
    if array.dtype.kind not in "iu":
        raise IndexError(f"getitem: an array index must hold ints or bools, got {array.dtype} ({k!r:.60})")
    return array, False


def _checked(index: np.ndarray, dim: int, axis: int) -> np.ndarray:
    """Ints counted from the end where negative, checked against ``dim``, as int32."""
    if index.size and (index.min() < -dim or index.max() >= dim):
        bad = index[(index < -dim) | (index >= dim)].reshape(-1)[0]
        raise IndexError(f"getitem: index {int(bad)} is out of bounds for axis {axis} with size {dim}")
    return np.where(index < 0, index + dim, index).astype(np.int32)


def _adjacent(key: tuple, at: int) -> bool:
    """Whether the ints of ``key`` (numpy counts them as array indices next to one) sit next to the array index:
    then its dimensions stay in place, else they go first."""
    positions = [
        i for i, k in enumerate(key) if i == at or (isinstance(k, int | np.integer) and not isinstance(k, bool))
    ]
    return positions[-1] - positions[0] + 1 == len(positions)


def _output_axis(before: tuple, ellipsis_dims: int) -> int:
    """Where the array index's dimension sits in the basic part's output."""
    axis = 0
    for k in before:
        if k is None or isinstance(k, builtins.slice):
            axis += 1
        elif k is Ellipsis:
            axis += ellipsis_dims
    return axis
