"""Fourier transforms over the innermost axis: FFT, IFFT (complex64 in, complex64 out)."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


def _transform(backend: CPUBackend, inputs: tuple, inverse: bool) -> Output:
    (x,) = inputs
    if x.rank == 0 or x.shape[-1] == 0:
        name = "IFFT" if inverse else "FFT"
        raise ValueError(f"{name}: the innermost dimension must be non-empty, got shape {list(x.shape)}")
    values = values_of(backend, x)
    result = np.fft.ifft(values, axis=-1) if inverse else np.fft.fft(values, axis=-1)
    return out(backend, result, "complex64")


@cpu_kernel(kn.FFT)
def fft(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _transform(backend, inputs, inverse=False)


@cpu_kernel(kn.IFFT)
def ifft(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The inverse transform, divided by the length (as TF.js)."""
    return _transform(backend, inputs, inverse=True)
