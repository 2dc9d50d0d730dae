"""Fourier transforms over the innermost axis: FFT, IFFT (complex64 in, complex64 out)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


def _transform(backend: TorchBackend, inputs: tuple, inverse: bool) -> Output:
    (x,) = inputs
    if x.rank == 0 or x.shape[-1] == 0:
        name = "IFFT" if inverse else "FFT"
        raise ValueError(f"{name}: the innermost dimension must be non-empty, got shape {list(x.shape)}")
    v = values_of(backend, x)
    if v.numel() == 0:  # an empty batch (MKL refuses a transform of nothing)
        return out(backend, v.new_zeros(x.shape), "complex64", x.shape)
    result = torch.fft.ifft(v, dim=-1) if inverse else torch.fft.fft(v, dim=-1)
    return out(backend, result, "complex64", x.shape)


@torch_kernel(kn.FFT)
def fft(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _transform(backend, inputs, inverse=False)


@torch_kernel(kn.IFFT)
def ifft(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The inverse transform, divided by the length (as TF.js)."""
    return _transform(backend, inputs, inverse=True)
