"""Comparisons and selection: Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual, Select."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _comparison(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        return out(backend, fn(values_of(backend, a), values_of(backend, b)), "bool")

    cpu_kernel(name)(run)


_comparison("Equal", np.equal)
_comparison("NotEqual", np.not_equal)
_comparison("Greater", np.greater)
_comparison("GreaterEqual", np.greater_equal)
_comparison("Less", np.less)
_comparison("LessEqual", np.less_equal)


@cpu_kernel("Select")
def select(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    condition, a, b = inputs
    return out(
        backend, np.where(values_of(backend, condition), values_of(backend, a), values_of(backend, b)), a.dtype
    )
