"""Complex numbers: Complex, Real, Imag, ComplexAbs (complex64 tensors are numpy complex64 arrays)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.Complex)
def complex_(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """``real + i * imag`` from two real tensors of one shape."""
    real, imag = inputs
    result = np.empty(real.shape, dtype=np.complex64)
    result.real = values_of(backend, real)
    result.imag = values_of(backend, imag)
    return out(backend, result, "complex64")


@cpu_kernel(kn.Real)
def real(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, np.real(values).astype(np.float32, copy=True), "float32")


@cpu_kernel(kn.Imag)
def imag(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, np.imag(values).astype(np.float32, copy=True), "float32")


@cpu_kernel(kn.ComplexAbs)
def complex_abs(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The magnitude ``hypot(re, im)`` of each complex value, as float32."""
    (x,) = inputs
    return out(backend, np.abs(values_of(backend, x)), "float32")
