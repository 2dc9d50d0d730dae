"""Comparisons, logic and selection: Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual,
LogicalAnd, LogicalOr, LogicalNot, LogicalXor, BitwiseAnd, Select."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _to_bool(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], op: str | None = None) -> None:
    """A binary kernel with a bool output (broadcasting); a comparison (``op``) refuses complex64."""

    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        if op is not None and a.dtype == "complex64":
            raise TypeError(f"{op}: complex64 tensors cannot be compared (as in TF.js)")
        return out(backend, fn(values_of(backend, a), values_of(backend, b)), "bool")

    cpu_kernel(name)(run)


_to_bool("Equal", np.equal, "equal")
_to_bool("NotEqual", np.not_equal, "not_equal")
_to_bool("Greater", np.greater, "greater")
_to_bool("GreaterEqual", np.greater_equal, "greater_equal")
_to_bool("Less", np.less, "less")
_to_bool("LessEqual", np.less_equal, "less_equal")
_to_bool("LogicalAnd", np.logical_and)
_to_bool("LogicalOr", np.logical_or)
_to_bool("LogicalXor", np.logical_xor)


@cpu_kernel(kn.LogicalNot)
def logical_not(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, np.logical_not(values_of(backend, x)), "bool")


@cpu_kernel(kn.BitwiseAnd)
def bitwise_and(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    return out(backend, np.bitwise_and(values_of(backend, a), values_of(backend, b)), a.dtype)


@cpu_kernel(kn.Select)
def select(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    condition, a, b = inputs
    return out(backend, np.where(values_of(backend, condition), values_of(backend, a), values_of(backend, b)), a.dtype)
