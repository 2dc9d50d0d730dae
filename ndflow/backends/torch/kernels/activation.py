"""Activations: Relu, Relu6, Sigmoid, Softmax, Elu (and EluGrad), Selu, LeakyRelu, Prelu, Softplus."""

from __future__ import annotations

import math

import numpy as np
import torch

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ..backend import TorchBackend
from .common import Output, floats, keep, out, torch_kernel, values_of
from .unary import same_dtype_unary

# The SELU constants TF.js uses (Klambauer et al. 2017): scale * alpha, and scale.
SELU_SCALEALPHA = 1.7580993408473768599402175208123
SELU_SCALE = 1.0507009873554804934193349852946
# Softplus: below this exp(x) is the answer, above its negation x is (float32 machine epsilon).
_SOFTPLUS_THRESHOLD = math.log(1.1920928955078125e-7) + 2.0


@torch_kernel(kn.Relu)
def relu(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    v = values_of(backend, x)
    if x.dtype == "bool":  # max(b, 0) is b
        return out(backend, v.clone(), "bool", x.shape)
    return keep(backend, torch.relu(v), x.shape, x.dtype)  # torch.relu keeps NaN, as TF.js does


@torch_kernel(kn.Sigmoid)
def sigmoid(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, torch.sigmoid(floats(backend, x)), "float32", x.shape)


register_direct(kn.Relu, "torch", torch.relu)
register_direct(kn.Sigmoid, "torch", torch.sigmoid)


@torch_kernel(kn.Softmax)
def softmax(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    return out(backend, torch.softmax(floats(backend, x), attrs["dim"]), "float32", x.shape)


def _relu6(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    return torch.clamp(v, 0, 6)  # NaN stays NaN


def _elu(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    return torch.where(v >= 0, v, torch.expm1(v))


def _selu(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    return torch.where(v >= 0, v * SELU_SCALE, torch.expm1(v) * SELU_SCALEALPHA)


def _softplus(v: torch.Tensor, attrs: dict | None) -> torch.Tensor:
    """log(1 + e ** x), switching to e ** x and to x where those are exact to float32 precision."""
    e = torch.exp(v)
    return torch.where(v < _SOFTPLUS_THRESHOLD, e, torch.where(v > -_SOFTPLUS_THRESHOLD, v, torch.log1p(e)))


same_dtype_unary("Relu6", _relu6)
same_dtype_unary("Elu", _elu)
same_dtype_unary("Selu", _selu)
same_dtype_unary("Softplus", _softplus)


@torch_kernel(kn.LeakyRelu)
def leaky_relu(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """alpha * x where x < 0, else x; float32 whatever the input."""
    (x,) = inputs
    v = floats(backend, x)
    alpha = float(np.float32(attrs["alpha"])) if v.dtype is torch.float32 else float(attrs["alpha"])
    return out(backend, torch.where(v < 0, v * alpha, v), "float32", x.shape)


@torch_kernel(kn.Prelu)
def prelu(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """alpha * x where x < 0, else x, with ``alpha`` broadcast against ``x``; float32."""
    x, alpha = inputs
    v, a = floats(backend, x), floats(backend, alpha)
    return out(backend, torch.where(v < 0, a * v, v), "float32")


@torch_kernel(kn.EluGrad)
def elu_grad(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The gradient of elu from its output ``y``: dy where y >= 0, else dy * (y + 1)."""
    dy, y = inputs
    g, yv = floats(backend, dy), floats(backend, y)
    return out(backend, torch.where(yv >= 0, g, g * (yv + 1)), "float32")
