"""Complex numbers: Complex, Real, Imag, ComplexAbs (complex64 tensors are torch complex64 tensors)."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, out, torch_kernel, values_of


@torch_kernel(kn.Complex)
def complex_(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """``real + i * imag`` from two real tensors of one shape."""
    real, imag = inputs
    re = values_of(backend, real).to(torch.float32)
    im = values_of(backend, imag).to(torch.float32)
    return out(backend, torch.complex(re, im), "complex64", real.shape)


@torch_kernel(kn.Real)
def real(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    r = torch.real(v) if v.is_complex() else v
    return out(backend, r.clone(), "float32", x.shape)


@torch_kernel(kn.Imag)
def imag(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    r = torch.imag(v).clone() if v.is_complex() else torch.zeros_like(v)
    return out(backend, r, "float32", x.shape)


@torch_kernel(kn.ComplexAbs)
def complex_abs(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The magnitude ``hypot(re, im)`` of each complex value, as float32."""
    (x,) = inputs
    return out(backend, torch.abs(values_of(backend, x)), "float32", x.shape)
