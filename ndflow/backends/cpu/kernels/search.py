"""Ordering and searching: TopK, Unique, SearchSorted (and LowerBound / UpperBound)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.search import register_search_kernels
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

# Rows at least this long, with k at most a quarter of them, select candidates before sorting.
_PARTITION_FROM = 1024
_CHUNK = 256  # values per chunk of the candidate bound


def _top_order(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values of each last-axis row, in TF.js's order: descending by value,
    ties by ascending index, NaN first. A stable ascending sort of the reversed row, read backwards (NaN sorts
    last ascending, so it comes first here)."""
    n = values.shape[-1]
    ascending = np.argsort(values[..., ::-1], axis=-1, kind="stable")
    return (n - 1 - ascending)[..., ::-1][..., :k]


def _top_k_row(row: np.ndarray, k: int) -> np.ndarray:
    """:func:`_top_order` of one long row without sorting all of it: every value at least a lower bound of the
    k-th largest (NaN counting as the largest; all ties included) is a candidate, and only the candidates are
    sorted (in index order, so ties still go by index).

    The bound is the k-th largest of the maxima of ``_CHUNK``-value chunks (k values of the row are at least
    that large): one pass, where ``np.partition`` takes 20x longer on rows of many equal values (a detector's
    heat map after its max-pool peak test is zeros but for a few thousand peaks)."""
    n = row.size
    chunks = n // _CHUNK
    if chunks >= k:
        maxima = row[: chunks * _CHUNK].reshape(chunks, _CHUNK).max(axis=1)
        if chunks * _CHUNK < n:
            maxima = np.append(maxima, row[chunks * _CHUNK :].max())
        has_nan = row.dtype.kind == "f" and bool(np.isnan(maxima).any())  # max() propagates NaN
        key = np.where(np.isnan(row), np.inf, row) if has_nan else row
        if has_nan:
            maxima = np.where(np.isnan(maxima), np.inf, maxima)
        bound = np.partition(maxima, maxima.size - k)[maxima.size - k]
    else:
        key = np.where(np.isnan(row), np.inf, row) if row.dtype.kind == "f" else row
        bound = np.partition(key, n - k)[n - k]
    candidates = np.flatnonzero(key >= bound)
    return candidates[_top_order(row[candidates], k)]


@cpu_kernel(kn.TopK)
def top_k(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    k, keep_sorted = attrs["k"], attrs["sorted"]
    values = values_of(backend, x)
    n = x.shape[-1]
    if k == 0:
        shape = x.shape[:-1] + (0,)
        return [out(backend, np.empty(shape, values.dtype), x.dtype), out(backend, np.empty(shape, np.int32), "int32")]
    if n >= _PARTITION_FROM and 4 * k <= n:
        order = np.stack([_top_k_row(row, k) for row in values.reshape(-1, n)]).reshape(x.shape[:-1] + (k,))
    else:
        order = _top_order(values, k)
    if not keep_sorted:
        order = np.sort(order, axis=-1)
    top = np.take_along_axis(values, order, axis=-1)
    return [out(backend, top, x.dtype), out(backend, order.astype(np.int32), "int32")]


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One comparable key per row of a 2-D array: equal keys exactly for rows TF.js calls equal
    (its key is the row's values as text: -0 prints as 0, every NaN as NaN)."""
    if rows.dtype == object:  # strings: their rank among the distinct strings
        _, codes = np.unique(rows.reshape(-1), return_inverse=True)
        rows = codes.reshape(rows.shape).astype(np.int64)
    elif rows.dtype.kind == "f":
        rows = np.where(np.isnan(rows), np.nan, rows + 0.0).astype(rows.dtype)  # x + 0.0 turns -0 into 0
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)


@cpu_kernel(kn.Unique)
def unique(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    axis = attrs["axis"]
    values = values_of(backend, x)
    n = x.shape[axis]
    rows = np.moveaxis(values, axis, 0).reshape(n, -1) if n else values.reshape(0, 0)
    if n == 0 or rows.shape[1] == 0:  # no slices, or every slice is empty (all equal)
        first = np.zeros(min(n, 1), dtype=np.int64)
        inverse = np.zeros(n, dtype=np.int64)
    else:
        _, first, inverse = np.unique(_row_keys(rows), return_index=True, return_inverse=True)
        # np.unique orders by key; TF.js by first occurrence.
        by_first = np.argsort(first, kind="stable")
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(len(by_first))
        first, inverse = first[by_first], rank[inverse.reshape(-1)]
    return [
        out(backend, np.take(values, first, axis=axis), x.dtype),
        out(backend, inverse.astype(np.int32), "int32"),
    ]


def _bound(sequence: np.ndarray, values: np.ndarray, right: bool) -> np.ndarray:
    """TF.js's binary search, run on every value at once (one pass per halving of the range).

    Row ``b`` of ``values`` is searched in row ``b`` of ``sequence``. ``'left'`` finds the first entry
    that is not ``< value``, ``'right'`` the first that is not ``<= value``; a NaN value gives 0.
    """
    n = sequence.shape[1]
    left = np.zeros(values.shape, dtype=np.int64)
    right_ = np.full(values.shape, n, dtype=np.int64)
    while True:
        active = left < right_
        if not active.any():
            return right_
        mid = (left + right_) // 2
        probe = np.take_along_axis(sequence, np.minimum(mid, n - 1), axis=1)
        go_right = (probe <= values) if right else (probe < values)
        left = np.where(active & go_right, mid + 1, left)
        right_ = np.where(active & ~go_right, mid, right_)


def _search(backend: CPUBackend, inputs: tuple, right: bool) -> Output:
    sequence, values = inputs
    seq = values_of(backend, sequence)
    vals = values_of(backend, values)
    return out(backend, _bound(seq, vals, right), "int32")


register_search_kernels(cpu_kernel, _search)  # SearchSorted, LowerBound, UpperBound
