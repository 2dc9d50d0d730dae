"""Element-wise unary math: Neg, Abs, Exp, Log, Sqrt, Rsqrt, Square, Tanh."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _float_unary(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    """A kernel whose output is float32 whatever the input (as TF.js's cpu unary kernels)."""

    def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        values = values_of(backend, x)
        dtype = "complex64" if x.dtype == "complex64" else "float32"
        if values.dtype.kind != "f" and dtype == "float32":
            values = values.astype(np.float32)
        return out(backend, fn(values), dtype)

    cpu_kernel(name)(run)


_float_unary("Exp", np.exp)
_float_unary("Log", np.log)
_float_unary("Sqrt", np.sqrt)
_float_unary("Rsqrt", lambda v: np.reciprocal(np.sqrt(v)))
_float_unary("Tanh", np.tanh)


@cpu_kernel("Neg")
def neg(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, np.negative(values_of(backend, x)), x.dtype)


@cpu_kernel("Abs")
def abs_(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    if x.dtype == "complex64":
        return out(backend, np.abs(values), "float32")
    return out(backend, np.abs(values), x.dtype)


@cpu_kernel("Square")
def square(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, np.multiply(values, values), x.dtype)
