"""Ragged tensors: ``ragged_gather``, ``ragged_range``, ``ragged_tensor_to_tensor`` (TF.js's
"Ragged" operations).

As in TF.js a ragged tensor is passed as its parts: flat (dense) values plus one int32 row
partition per ragged dimension (``row_splits``, or ``value_rowids`` after a ``FIRST_DIM_SIZE``).
The ops check dtypes, ranks and counts; the kernels check the partitions' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .sparse_dense import _Args

_PARTITION_TYPES = ("FIRST_DIM_SIZE", "VALUE_ROWIDS", "ROW_LENGTHS", "ROW_SPLITS", "ROW_LIMITS", "ROW_STARTS")
_SUPPORTED = ("FIRST_DIM_SIZE", "VALUE_ROWIDS", "ROW_SPLITS")


class RaggedGatherResult(NamedTuple):
    output_nested_splits: tuple[Tensor, ...]
    output_dense_values: Tensor


class RaggedRangeResult(NamedTuple):
    rt_nested_splits: Tensor
    rt_dense_values: Tensor


def _tensor_list(xs: Any, op: str, arg: str) -> list[Any]:
    if isinstance(xs, Tensor) or not isinstance(xs, list | tuple):
        raise TypeError(f"{op}: argument '{arg}' must be a list of tensors, got {type(xs).__name__}")
    return list(xs)


def _values_dtype(op: str, arg: str, t: Tensor) -> None:
    if t.dtype not in ("float32", "int32", "bool"):
        raise TypeError(f"{op}: argument '{arg}' must be a float32, int32 or bool tensor, got {t.dtype}")


def _check_int(op: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {type(value).__name__}")
    return int(value.__index__())


def ragged_gather(
    params_nested_splits: Sequence[TensorLike],
    params_dense_values: TensorLike,
    indices: TensorLike,
    output_ragged_rank: int,
) -> RaggedGatherResult:
    """Gather rows (along the outermost dimension) of a ragged tensor given by its nested row
    splits and dense values; returns ``(output_nested_splits, output_dense_values)``.

    ``output_ragged_rank`` must be ``indices.rank + len(params_nested_splits) - 1``.
    """
    op = "ragged_gather"
    splits = _tensor_list(params_nested_splits, op, "params_nested_splits")
    if not splits:
        raise ValueError(f"{op}: argument 'params_nested_splits' must hold at least one splits tensor")
    output_ragged_rank = _check_int(op, "output_ragged_rank", output_ragged_rank)
    with _Args(op) as arg:
        split_ts = [arg(s, f"params_nested_splits[{i}]", "int32") for i, s in enumerate(splits)]
        values = arg(params_dense_values, "params_dense_values")
        idx = arg(indices, "indices", "int32")
        for i, s in enumerate(split_ts):
            if s.rank != 1:
                raise ValueError(f"{op}: params_nested_splits[{i}] must be a vector, got shape {list(s.shape)}")
            if s.size == 0:
                raise ValueError(f"{op}: params_nested_splits[{i}] must not be empty")
        _values_dtype(op, "params_dense_values", values)
        if values.rank == 0:
            raise ValueError(f"{op}: argument 'params_dense_values' must have rank >= 1, got a scalar")
        expected = idx.rank + len(split_ts) - 1
        if output_ragged_rank != expected:
            raise ValueError(
                f"{op}: output_ragged_rank must be indices.rank + len(params_nested_splits) - 1 = {expected}, "
                f"got {output_ragged_rank}"
            )
        result = ENGINE.run_kernel(kn.RaggedGather, (*split_ts, values, idx), {"output_ragged_rank": expected})
        return RaggedGatherResult(tuple(result[:-1]), result[-1])


def ragged_range(starts: TensorLike, limits: TensorLike, deltas: TensorLike) -> RaggedRangeResult:
    """A ragged tensor whose row ``i`` is ``range(starts[i], limits[i], deltas[i])`` (scalars
    broadcast); returns ``(rt_nested_splits, rt_dense_values)``."""
    op = "ragged_range"
    with _Args(op) as arg:
        s = arg(starts, "starts")
        if s.dtype not in ("float32", "int32"):
            raise TypeError(f"{op}: argument 'starts' must be a float32 or int32 tensor, got {s.dtype}")
        lim = arg(limits, "limits", s.dtype)
        d = arg(deltas, "deltas", s.dtype)
        sizes = {}
        for name, t in (("starts", s), ("limits", lim), ("deltas", d)):
            if t.rank > 1:
                raise ValueError(f"{op}: argument '{name}' must be a scalar or a vector, got shape {list(t.shape)}")
            if t.rank == 1:
                sizes[name] = t.shape[0]
        if len(set(sizes.values())) > 1:
            raise ValueError(f"{op}: starts, limits and deltas must have the same length, got {sizes}")
        return RaggedRangeResult(*ENGINE.run_kernel(kn.RaggedRange, (s, lim, d)))


def _check_partition_types(op: str, types: Any, count: int) -> tuple[str, ...]:
    if isinstance(types, str) or not isinstance(types, list | tuple):
        raise TypeError(f"{op}: argument 'row_partition_types' must be a list of strings, got {type(types).__name__}")
    types = tuple(types)
    if not types:
        raise ValueError(f"{op}: argument 'row_partition_types' must not be empty")
    for i, kind in enumerate(types):
        if kind not in _PARTITION_TYPES:
            raise ValueError(f"{op}: row_partition_types[{i}] = {kind!r} is not one of {', '.join(_PARTITION_TYPES)}")
        if kind not in _SUPPORTED:
            raise ValueError(f"{op}: row partition type {kind} is not supported (use ROW_SPLITS or VALUE_ROWIDS)")
        if kind == "FIRST_DIM_SIZE" and i > 0:
            raise ValueError(f"{op}: FIRST_DIM_SIZE can only be the first row partition type, got it at {i}")
    if types[0] == "VALUE_ROWIDS":
        raise ValueError(f"{op}: VALUE_ROWIDS cannot partition the first dimension: precede it by FIRST_DIM_SIZE")
    if len(types) != count:
        raise ValueError(
            f"{op}: got {count} row_partition_tensors but {len(types)} row_partition_types; they must pair up"
        )
    return types


def ragged_tensor_to_tensor(
    shape: TensorLike,
    values: TensorLike,
    default_value: TensorLike,
    row_partition_tensors: Sequence[TensorLike],
    row_partition_types: Sequence[str],
) -> Tensor:
    """A dense tensor from a ragged one (``values`` + row partitions), padded with
    ``default_value`` and cut to ``shape`` (-1 entries, or a scalar -1, take the natural size).

    ``row_partition_types`` name each partition: ``"ROW_SPLITS"``, ``"VALUE_ROWIDS"``, or a
    leading ``"FIRST_DIM_SIZE"`` (a scalar: the number of rows) before ``"VALUE_ROWIDS"``.
    """
    op = "ragged_tensor_to_tensor"
    partitions = _tensor_list(row_partition_tensors, op, "row_partition_tensors")
    types = _check_partition_types(op, row_partition_types, len(partitions))
    with _Args(op) as arg:
        shape_t = arg(shape, "shape", "int32")
        vals = arg(values, "values")
        _values_dtype(op, "values", vals)
        default = arg(default_value, "default_value", vals.dtype)
        parts = [arg(p, f"row_partition_tensors[{i}]", "int32") for i, p in enumerate(partitions)]
        if vals.rank == 0:
            raise ValueError(f"{op}: argument 'values' must have rank >= 1, got a scalar")
        if default.rank >= vals.rank:
            raise ValueError(
                f"{op}: default_value (shape {list(default.shape)}) must have a lower rank than values "
                f"(shape {list(vals.shape)})"
            )
        for i, (kind, p) in enumerate(zip(types, parts, strict=True)):
            if kind == "FIRST_DIM_SIZE":
                if p.size != 1:
                    raise ValueError(f"{op}: the FIRST_DIM_SIZE partition must be a scalar, got shape {list(p.shape)}")
            elif p.rank != 1:
                raise ValueError(
                    f"{op}: row_partition_tensors[{i}] ({kind}) must be a vector, got shape {list(p.shape)}"
                )
        if parts[0].size == 0:
            raise ValueError(f"{op}: row_partition_tensors[0] must hold at least one element")
        return ENGINE.run_kernel(
            kn.RaggedTensorToTensor, (shape_t, vals, default, *parts), {"row_partition_types": types}
        )


__all__ = ["ragged_gather", "ragged_range", "ragged_tensor_to_tensor"]
