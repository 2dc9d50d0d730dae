"""Activations: Relu, Relu6, Sigmoid, Softmax, Elu (and EluGrad), Selu, LeakyRelu, Prelu, Softplus."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ...shared.numbers import SELU_SCALE, SELU_SCALEALPHA, SOFTPLUS_THRESHOLD
from ..backend import CPUBackend
from ..numba import ops as jit_ops
from .common import Output, cpu_kernel, out, values_of
from .unary import same_dtype_unary

# Softplus: below this exp(x) is the answer, above its negation x is (float32 machine epsilon).


@cpu_kernel(kn.Relu)
def relu(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, _relu(values_of(backend, x)), x.dtype)


def _relu(v: np.ndarray) -> np.ndarray:
    """max(x, 0), NaN kept (as TF.js); compiled for large float32 arrays (numpy's maximum is 4x slower than
    a multiply here)."""
    compiled = jit_ops.activate(v, "relu")
    if compiled is not None:
        return compiled
    return np.maximum(v, v.dtype.type(0))


register_direct(kn.Relu, "cpu", _relu)


@cpu_kernel(kn.Sigmoid)
def sigmoid(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    if values.dtype.kind != "f":
        values = values.astype(np.float32)
    compiled = jit_ops.activate(values, "sigmoid")
    if compiled is not None:
        return out(backend, compiled, "float32")
    result = np.exp(np.negative(values), dtype=values.dtype)
    if result.ndim:  # in place when there is an array to reuse (rank 0 gives a numpy scalar)
        result += 1
        np.reciprocal(result, out=result)
    else:
        result = np.reciprocal(result + 1)
    return out(backend, result, "float32")


@cpu_kernel(kn.Softmax)
def softmax(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axis = attrs["dim"]
    values = values_of(backend, x)
    n = values.shape[axis] if values.ndim else 1
    if values.ndim and axis in (-1, values.ndim - 1) and 2 <= n <= _SHORT_SOFTMAX and values.size >= 64 * n:
        return out(backend, _short_softmax(values, n), "float32")
    shifted = values - values.max(axis=axis, keepdims=True) if values.size else values
    e = np.exp(shifted)
    e /= e.sum(axis=axis, keepdims=True)
    return out(backend, e, "float32")


# A last axis this short is reduced column by column: numpy's reductions over a short inner axis pay a loop per
# row (a (1364, 2) softmax of detection scores: 78 -> 15 us). Up to 7 values numpy sums in order, as here.
_SHORT_SOFTMAX = 7


def _short_softmax(values: np.ndarray, n: int) -> np.ndarray:
    """Softmax over a last axis of ``n`` values, with element-wise ops on its columns."""
    top = values[..., 0]
    for j in range(1, n):
        top = np.maximum(top, values[..., j])  # NaN propagates, as max does
    e = np.exp(values - top[..., None])
    total = e[..., 0].copy()
    for j in range(1, n):
        total += e[..., j]
    e /= total[..., None]
    return e


def _relu6(v: np.ndarray, attrs: dict | None) -> np.ndarray:
    compiled = jit_ops.activate(v, "relu6")
    if compiled is not None:
        return compiled
    return np.clip(v, v.dtype.type(0), v.dtype.type(6))  # NaN stays NaN


def _elu(v: np.ndarray, attrs: dict | None) -> np.ndarray:
    compiled = jit_ops.activate(v, "elu")
    if compiled is not None:
        return compiled
    return np.where(v >= 0, v, np.expm1(v))


def _selu(v: np.ndarray, attrs: dict | None) -> np.ndarray:
    return np.where(v >= 0, v * v.dtype.type(SELU_SCALE), np.expm1(v) * v.dtype.type(SELU_SCALEALPHA))


def _softplus(v: np.ndarray, attrs: dict | None) -> np.ndarray:
    """log(1 + e ** x), switching to e ** x and to x where those are exact to float32 precision."""
    mid = np.log1p(np.exp(v))
    return np.where(v < SOFTPLUS_THRESHOLD, np.exp(v), np.where(v > -SOFTPLUS_THRESHOLD, v, mid))


same_dtype_unary("Relu6", _relu6)
same_dtype_unary("Elu", _elu)
same_dtype_unary("Selu", _selu)
same_dtype_unary("Softplus", _softplus)


@cpu_kernel(kn.LeakyRelu)
def leaky_relu(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """alpha * x where x < 0, else x; float32 whatever the input."""
    (x,) = inputs
    v = values_of(backend, x).astype(np.float32, copy=False)
    compiled = jit_ops.activate(v, "leakyrelu", attrs["alpha"])
    if compiled is not None:
        return out(backend, compiled, "float32")
    return out(backend, np.where(v < 0, v * np.float32(attrs["alpha"]), v), "float32")


@cpu_kernel(kn.Prelu)
def prelu(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """alpha * x where x < 0, else x, with ``alpha`` broadcast against ``x``; float32."""
    x, alpha = inputs
    v = values_of(backend, x).astype(np.float32, copy=False)
    a = values_of(backend, alpha).astype(np.float32, copy=False)
    compiled = jit_ops.activate(v, "prelu", prelu=a)
    if compiled is not None:
        return out(backend, compiled, "float32")
    return out(backend, np.where(v < 0, a * v, v), "float32")


@cpu_kernel(kn.EluGrad)
def elu_grad(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The gradient of elu from its output ``y``: dy where y >= 0, else dy * (y + 1)."""
    dy, y = inputs
    g = values_of(backend, dy).astype(np.float32, copy=False)
    yv = values_of(backend, y).astype(np.float32, copy=False)
    return out(backend, np.where(yv >= 0, g, g * (yv + 1)), "float32")
