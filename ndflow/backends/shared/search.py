"""The sorted-search kernels (SearchSorted, LowerBound, UpperBound), written once over a backend's
``search(backend, inputs, right)``: they differ only in which side of equal values they take."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core import kernel_names as kn

Search = Callable[[Any, tuple, bool], tuple]
Kernel = Callable[[Any, tuple, Any], tuple]


def search_kernels(search: Search) -> dict[str, Kernel]:
    """SearchSorted (``attrs["side"]``), LowerBound (left) and UpperBound (right) by kernel name."""

    def search_sorted(backend: Any, inputs: tuple, attrs: dict) -> tuple:
        return search(backend, inputs, attrs["side"] == "right")

    def lower_bound(backend: Any, inputs: tuple, attrs: dict | None) -> tuple:
        return search(backend, inputs, False)

    def upper_bound(backend: Any, inputs: tuple, attrs: dict | None) -> tuple:
        return search(backend, inputs, True)

    return {kn.SearchSorted: search_sorted, kn.LowerBound: lower_bound, kn.UpperBound: upper_bound}


def register_search_kernels(register: Callable[[str], Callable[[Kernel], Kernel]], search: Search) -> None:
    """Register :func:`search_kernels` with a backend's kernel decorator ``register(name)``."""
    for name, kernel in search_kernels(search).items():
        register(name)(kernel)
