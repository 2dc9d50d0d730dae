"""Ordering and searching: TopK, Unique, SearchSorted (and LowerBound / UpperBound)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ...shared.search import register_search_kernels
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


@torch_kernel(kn.TopK)
def top_k(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """The ``k`` largest values of each row; ties (NaN first, as the largest) by ascending index."""
    (x,) = inputs
    k, keep_sorted = attrs["k"], attrs["sorted"]
    v = values_of(backend, x)
    shape = x.shape[:-1] + (k,)
    if k == 0:
        empty = v.new_empty(shape)
        return [out(backend, empty, x.dtype, shape), out(backend, empty.to(torch.int32), "int32", shape)]
    keys = v.to(torch.uint8) if v.dtype is torch.bool else v
    # a stable descending sort keeps equal values (NaNs too) in index order
    order = torch.sort(keys, dim=-1, descending=True, stable=True).indices[..., :k]
    if not keep_sorted:
        order = torch.sort(order, dim=-1).values
    return [out(backend, torch.gather(v, -1, order), x.dtype, shape), out(backend, order, "int32", shape)]


def _row_keys(rows: torch.Tensor) -> torch.Tensor:
    """Integer keys per element, equal exactly where TF.js calls values equal (its key is the
    value as text: -0 prints as 0, every NaN as NaN)."""
    if rows.is_complex():
        rows = torch.view_as_real(rows).reshape(rows.shape[0], -1)
    if rows.is_floating_point():
        rows = torch.where(torch.isnan(rows), torch.nan, rows + 0.0)  # x + 0.0 turns -0 into 0
        return rows.view(torch.int64 if rows.dtype is torch.float64 else torch.int32)
    return rows.to(torch.int32) if rows.dtype is torch.bool else rows


@torch_kernel(kn.Unique, strings=True)
def unique(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """The distinct slices along ``axis`` in order of first occurrence, and each slice's index among them."""
    (x,) = inputs
    axis = attrs["axis"]
    v = values_of(backend, x)
    n = x.shape[axis]
    device = v.device
    rows = v.movedim(axis, 0).reshape(n, -1) if n else v.reshape(0, 0)
    if n == 0 or rows.shape[1] == 0:  # no slices, or every slice is empty (all equal)
        first = torch.zeros(min(n, 1), dtype=torch.int64, device=device)
        inverse = torch.zeros(n, dtype=torch.int64, device=device)
    else:
        distinct, inverse = torch.unique(_row_keys(rows), dim=0, return_inverse=True)
        m = distinct.shape[0]
        positions = torch.arange(n, device=device)
        first = torch.full((m,), n, dtype=torch.int64, device=device)
        first.scatter_reduce_(0, inverse, positions, reduce="amin")
        # torch.unique orders by key; TF.js by first occurrence.
        by_first = torch.argsort(first)
        rank = torch.empty_like(by_first)
        rank[by_first] = torch.arange(m, device=device)
        first, inverse = first[by_first], rank[inverse]
    return [out(backend, v.index_select(axis, first), x.dtype), out(backend, inverse, "int32", (n,))]


def bound(sequence: torch.Tensor, values: torch.Tensor, right: bool) -> torch.Tensor:
    """TF.js's binary search, run on every value at once (a fixed number of halvings, no sync).

    Row ``b`` of ``values`` is searched in row ``b`` of ``sequence``. ``'left'`` finds the first entry
    that is not ``< value``, ``'right'`` the first that is not ``<= value``; a NaN value gives 0.
    """
    n = sequence.shape[1]
    left = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    if n == 0:
        return left
    right_ = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length() + 1):
        active = left < right_
        mid = torch.div(left + right_, 2, rounding_mode="floor")
        probe = torch.gather(sequence, 1, mid.clamp(max=n - 1))
        go_right = (probe <= values) if right else (probe < values)
        left = torch.where(active & go_right, mid + 1, left)
        right_ = torch.where(active & ~go_right, mid, right_)
    return right_


def _search(backend: TorchBackend, inputs: tuple, right: bool) -> Output:
    sequence, values = inputs
    result = bound(values_of(backend, sequence), values_of(backend, values), right)
    return out(backend, result, "int32", values.shape)


register_search_kernels(torch_kernel, _search)  # SearchSorted, LowerBound, UpperBound
