"""Index bookkeeping shared by the gather/scatter kernels of every backend (on the host, in numpy)."""

from __future__ import annotations

import math

import numpy as np


def flat_indices(idx: np.ndarray, shape: tuple[int, ...], slice_rank: int, op: str) -> np.ndarray:
    """Row-major positions of the index tuples ``idx`` (``[n, slice_rank]``) among the slices of
    ``shape[:slice_rank]``; every coordinate must be within its dimension."""
    if slice_rank and idx.dtype.kind in "iu":
        try:  # numpy's checked row-major positions: 3-4x faster than the checks and product below
            return np.ravel_multi_index(idx.T, shape[:slice_rank])
        except ValueError:
            pass  # an index out of range (or a shape numpy refuses): the checks below name it
    dims = np.asarray(shape[:slice_rank], dtype=np.int64)
    bad = (idx < 0) | (idx >= dims)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise IndexError(f"{op}: index {idx[row].tolist()} does not index into shape {list(shape)}")
    strides = np.ones(slice_rank, dtype=np.int64)
    if slice_rank > 1:
        strides[:-1] = np.cumprod(dims[:0:-1])[::-1]
    return idx.astype(np.int64) @ strides if slice_rank else np.zeros(len(idx), dtype=np.int64)


def scatter_layout(indices: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Index tuples as ``[num_updates, slice_rank]`` and the size of one slice (TF.js's calculateShapes)."""
    slice_rank = indices.shape[-1] if indices.ndim > 1 else 1
    num_updates = indices.size // slice_rank if slice_rank else math.prod(indices.shape[:-1])
    return indices.reshape(num_updates, slice_rank), math.prod(shape[slice_rank:])


def first_bad(mask: np.ndarray) -> int:
    """The flat position of the first true value of ``mask``."""
    return int(np.flatnonzero(mask.reshape(-1))[0])


def check_coordinates(op: str, arg: str, coords: np.ndarray, shape: tuple[int, ...]) -> None:
    """Every row of ``coords`` (n, rank) must address an element of ``shape``: IndexError otherwise."""
    if coords.size == 0:
        return
    bad = ((coords < 0) | (coords >= np.asarray(shape, dtype=np.int64))).any(axis=1)
    if bad.any():
        i = first_bad(bad)
        raise IndexError(f"{op}: {arg}[{i}] = {coords[i].tolist()} is out of bounds for shape {list(shape)}")


def sparse_update_coordinates(indices: np.ndarray, shape: tuple[int, ...], op: str) -> np.ndarray:
    """SparseToDense's ``sparse_indices`` as int64 ``[num_updates, slice_rank]`` rows, each checked to be
    within ``shape``."""
    idx = indices.astype(np.int64)
    slice_rank = idx.shape[-1] if idx.ndim > 1 else 1
    idx = idx.reshape(idx.size // max(slice_rank, 1), slice_rank)
    check_coordinates(op, "sparse_indices", idx, shape)
    return idx


def last_updates(idx: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(flat, keep)`` for ``[num_updates, slice_rank]`` coordinates ``idx`` (at least one row): the row-major
    position of each, and the rows whose update is kept (the last one of each position, as TF.js writes them in
    order)."""
    num_updates, slice_rank = idx.shape
    flat = np.ravel_multi_index(tuple(idx.T), shape) if slice_rank else np.zeros(num_updates, np.int64)
    _, first_from_end = np.unique(flat[::-1], return_index=True)
    return flat, num_updates - 1 - first_from_end
