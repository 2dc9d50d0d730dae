"""Ragged tensors: RaggedGather, RaggedRange, RaggedTensorToTensor.

A ragged tensor is stored, as in TF.js, as flat ``values`` plus one row partition per ragged
dimension: ``row_splits`` (row ``r`` holds the entries ``splits[r]:splits[r + 1]`` of the next
level) or ``value_rowids`` (the row of each entry, sorted). The ops check ranks and dtypes; these
kernels check the values and work level by level with whole-array numpy operations (a Python loop
runs over the few ragged dimensions only, never over elements).
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.dtypes import NUMPY_DTYPE
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

INT32_MAX = 2**31 - 1


def _expand_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + n)`` for each pair ``(s, n)``, without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


# ----------------------------------------------------------------------------- RaggedGather


def _check_nested_splits(op: str, splits: list[np.ndarray], num_values: int) -> None:
    """Each splits vector non-negative, sorted, and pointing inside the next level (or the values)."""
    for d, s in enumerate(splits):
        arg = f"params_nested_splits[{d}]"
        if s.size == 0:
            raise ValueError(f"{op}: {arg} must not be empty")
        if s[0] < 0:
            raise ValueError(f"{op}: {arg} must be non-negative, got {arg}[0] = {int(s[0])}")
        down = np.diff(s) < 0
        if down.any():
            i = _first_bad(down)
            raise ValueError(f"{op}: {arg} must be sorted in ascending order, got {int(s[i])} before {int(s[i + 1])}")
        if d + 1 < len(splits):
            limit, what = splits[d + 1].size - 1, f"the {splits[d + 1].size - 1} rows of params_nested_splits[{d + 1}]"
        else:
            limit, what = num_values, f"the {num_values} rows of params_dense_values"
        if s[-1] > limit:
            raise ValueError(f"{op}: {arg} must not point past {what}, got {arg}[-1] = {int(s[-1])}")


@cpu_kernel(kn.RaggedGather)
def ragged_gather(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> list[Output]:
    """Gather rows of a ragged tensor: inputs are the nested splits, the dense values and the
    indices; outputs the nested splits of the result (uniform ones for the dims of ``indices``
    first) and its dense values."""
    op = "ragged_gather"
    *split_ts, values_t, indices_t = inputs
    splits = [values_of(backend, t).astype(np.int64).reshape(-1) for t in split_ts]
    values = values_of(backend, values_t)
    indices = values_of(backend, indices_t).astype(np.int64)
    num_params = splits[0].size - 1
    flat = indices.reshape(-1)
    bad = (flat < 0) | (flat >= num_params)
    if bad.any():
        i = _first_bad(bad)
        loc = ",".join(str(int(k)) for k in np.unravel_index(i, indices.shape)) if indices.ndim else ""
        raise IndexError(f"{op}: indices[{loc}] = {int(flat[i])} is not in [0, {num_params})")
    _check_nested_splits(op, splits, values.shape[0])

    out_splits: list[np.ndarray] = []
    nrows = 1
    for dim in range(indices.ndim - 1):  # uniform splits for the outer dims of indices
        nrows *= indices.shape[dim]
        out_splits.append(np.arange(nrows + 1, dtype=np.int64) * indices.shape[dim + 1])
    rows = flat
    for d, s in enumerate(splits):  # follow the selected rows down the ragged levels
        lengths = s[rows + 1] - s[rows]
        if d + indices.ndim - 1 >= 0:
            out_splits.append(np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)]))
        rows = _expand_ranges(s[rows], lengths)
    dense = values[rows]
    return [out(backend, s, "int32") for s in out_splits] + [out(backend, dense, values_t.dtype)]


# ----------------------------------------------------------------------------- RaggedRange


@cpu_kernel(kn.RaggedRange)
def ragged_range(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> list[Output]:
    """Row ``i`` is ``range(starts[i], limits[i], deltas[i])``; scalars broadcast over the rows.
    Outputs the row splits (int32) and the concatenated values (the dtype of ``starts``)."""
    op = "ragged_range"
    starts_t, limits_t, deltas_t = inputs
    dtype = starts_t.dtype
    arrays = [values_of(backend, t) for t in inputs]
    nrows = next((a.size for a in arrays if a.ndim == 1), 1)
    wide = np.int64 if dtype == "int32" else np.float64
    starts, limits, deltas = (np.broadcast_to(a.reshape(-1), (nrows,)).astype(wide) for a in arrays)
    zero = deltas == 0
    if zero.any():
        i = _first_bad(zero)
        raise ValueError(f"{op}: deltas must be non-zero, got deltas[{i}] = 0")
    empty = ((deltas > 0) & (limits < starts)) | ((deltas < 0) & (limits > starts))
    # TF.js computes the sizes in double precision; NaN bounds or deltas give empty rows.
    sizes = np.ceil(np.abs((limits - starts).astype(np.float64) / deltas))
    sizes = np.where(empty | np.isnan(sizes), 0.0, sizes)
    too_big = sizes > INT32_MAX
    if too_big.any():
        i = _first_bad(too_big)
        raise ValueError(
            f"{op}: row {i} would have more than {INT32_MAX} values: (limit - start) / delta = "
            f"({limits[i]} - {starts[i]}) / {deltas[i]}"
        )
    sizes = sizes.astype(np.int64)
    splits = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)])
    if splits[-1] > INT32_MAX:
        raise ValueError(f"{op}: the result would have {int(splits[-1])} values, more than {INT32_MAX}")
    row = np.repeat(np.arange(nrows), sizes)
    step = np.arange(int(splits[-1]), dtype=np.int64) - splits[:-1][row]
    dense = starts[row] + step * deltas[row]
    return [out(backend, splits, "int32"), out(backend, dense, dtype)]


# ----------------------------------------------------------------------------- RaggedTensorToTensor


def _max_width(kind: str, partition: np.ndarray) -> int:
    """The longest row of a partition (the natural size of the dimension it splits)."""
    if partition.size == 0:
        return 0
    if kind == "ROW_SPLITS":
        return int(np.diff(partition).max(initial=0))
    _, counts = np.unique(partition, return_counts=True)
    return int(counts.max())


def _output_shape(
    op: str,
    requested: np.ndarray,
    ragged_rank: int,
    first_dim: int,
    kinds: list[str],
    parts: list[np.ndarray],
    value_shape: tuple[int, ...],
) -> list[int]:
    """The output shape: the requested dims, -1 (or no shape at all) meaning the natural size."""
    rank = ragged_rank + len(value_shape)
    if requested.ndim == 0:
        if int(requested) != -1:
            raise ValueError(f"{op}: a scalar 'shape' must be -1 (the natural shape), got {int(requested)}")
        shape = [-1] * rank
    elif requested.size == 0:
        shape = [-1] * rank
    else:
        shape = [int(d) for d in requested.reshape(-1)]
    if len(shape) != rank:
        raise ValueError(
            f"{op}: 'shape' {shape} is incompatible with the ragged tensor: it has rank {rank} "
            f"({ragged_rank} ragged dims + values of rank {len(value_shape)}), but shape has rank {len(shape)}"
        )
    for i, d in enumerate(shape):
        if d < -1:
            raise ValueError(f"{op}: shape[{i}] = {d} must be >= -1")
    for i in range(1, len(value_shape)):  # the dense (uniform) dims come from the values
        k = ragged_rank + i
        if shape[k] == -1:
            shape[k] = value_shape[i]
        elif shape[k] != value_shape[i]:
            raise ValueError(
                f"{op}: 'shape' {shape} is incompatible with values of shape {list(value_shape)}: "
                f"shape[{k}] = {shape[k]} but the values have {value_shape[i]} (dense dims cannot be resized)"
            )
    if shape[0] == -1:
        shape[0] = first_dim
    for i in range(1, ragged_rank + 1):
        if shape[i] == -1:
            shape[i] = _max_width(kinds[i - 1], parts[i - 1])
    return shape


def _child_positions(
    op: str, kind: str, k: int, partition: np.ndarray, num_parents: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each entry of the next level: its parent row and its position in that row."""
    arg = f"row_partition_tensors[{k}]"
    if kind == "ROW_SPLITS":
        if partition.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if partition.size - 1 > num_parents:
            raise ValueError(
                f"{op}: row splits {arg} has {partition.size - 1} rows, more than the {num_parents} of its parent"
            )
        if partition[0] != 0:
            raise ValueError(f"{op}: row splits {arg} must start at 0, got {int(partition[0])}")
        lengths = np.diff(partition)
        if (lengths < 0).any():
            i = _first_bad(lengths < 0)
            raise ValueError(
                f"{op}: row splits {arg} must be sorted, got {int(partition[i])} before {int(partition[i + 1])}"
            )
        parent = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
        return parent, np.arange(parent.size, dtype=np.int64) - partition[:-1][parent]
    # VALUE_ROWIDS
    bad = (partition < 0) | (partition >= num_parents)
    if bad.any():
        i = _first_bad(bad)
        raise IndexError(f"{op}: {arg}[{i}] = {int(partition[i])} is not a row id in [0, {num_parents})")
    down = np.diff(partition) < 0
    if down.any():
        i = _first_bad(down)
        raise ValueError(
            f"{op}: value row ids {arg} must be sorted, got {int(partition[i])} before {int(partition[i + 1])}"
        )
    first = np.searchsorted(partition, partition, side="left")
    return partition, np.arange(partition.size, dtype=np.int64) - first


@cpu_kernel(kn.RaggedTensorToTensor)
def ragged_tensor_to_tensor(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """A dense tensor from a ragged one: entries past the output's bounds are dropped, missing
    ones are ``default_value`` (broadcast to one value's shape)."""
    op = "ragged_tensor_to_tensor"
    shape_t, values_t, default_t, *partition_ts = inputs
    kinds = list(attrs["row_partition_types"])
    requested = values_of(backend, shape_t)
    values = values_of(backend, values_t)
    default = values_of(backend, default_t)
    partitions = [values_of(backend, t).astype(np.int64).reshape(-1) for t in partition_ts]
    if kinds[0] == "FIRST_DIM_SIZE":
        first_dim = int(partitions[0][0])
        if first_dim < 0:
            raise ValueError(f"{op}: the FIRST_DIM_SIZE must be non-negative, got {first_dim}")
        kinds, parts = kinds[1:], partitions[1:]
    else:
        first_dim = partitions[0].size - 1
        parts = partitions
    ragged_rank = len(parts)
    shape = _output_shape(op, requested, ragged_rank, first_dim, kinds, parts, values.shape)
    dtype = values_t.dtype
    element_shape = tuple(shape[ragged_rank + 1 :])
    try:
        fill = np.broadcast_to(default, element_shape)
    except ValueError:
        raise ValueError(
            f"{op}: default_value of shape {list(default.shape)} cannot be broadcast to the shape of one value "
            f"{list(element_shape)}"
        ) from None

    # Output index (in units of one value) of each entry, level by level; -1 = out of bounds.
    mult = np.ones(ragged_rank + 1, np.int64)
    for i in range(ragged_rank - 1, -1, -1):
        mult[i] = mult[i + 1] * shape[i + 1]
    rows = np.arange(first_dim, dtype=np.int64)
    index = np.where(rows < shape[0], rows * mult[0], -1)
    for level, (kind, partition) in enumerate(zip(kinds, parts, strict=True)):
        k = level + len(partitions) - ragged_rank  # its place in row_partition_tensors
        parent, pos = _child_positions(op, kind, k, partition, index.size)
        base = index[parent]
        index = np.where((base >= 0) & (pos < shape[level + 1]), base + pos * mult[level + 1], -1)
    keep = index >= 0
    missing = keep[values.shape[0] :]
    if missing.any():  # entries cut off by the output shape may point past the values
        i = values.shape[0] + _first_bad(missing)
        raise ValueError(f"{op}: the row partitions address value {i}, but 'values' has only {values.shape[0]} rows")
    n = min(index.size, values.shape[0])  # entries past the values are all cut off (checked above)
    index, keep = index[:n], keep[:n]

    result = np.empty(shape, dtype=NUMPY_DTYPE[dtype])
    cells = result.reshape((int(np.prod(shape[: ragged_rank + 1])), *element_shape))
    cells[...] = fill
    if keep.any():
        cells[index[keep]] = values[:n][keep]
    return out(backend, result, dtype)
