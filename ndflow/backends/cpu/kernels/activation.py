"""Activations: Relu, Sigmoid, Softmax."""

from __future__ import annotations

import numpy as np

from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel("Relu")
def relu(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x)
    return out(backend, np.maximum(values, 0), x.dtype)  # np.maximum keeps NaN, as TF.js does


@cpu_kernel("Sigmoid")
def sigmoid(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    values = values_of(backend, x).astype(np.float32, copy=False)
    result = np.exp(-values)
    result += 1
    np.reciprocal(result, out=result)
    return out(backend, result, "float32")


@cpu_kernel("Softmax")
def softmax(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    axis = attrs["dim"]
    values = values_of(backend, x)
    shifted = values - values.max(axis=axis, keepdims=True) if values.size else values
    e = np.exp(shifted)
    e /= e.sum(axis=axis, keepdims=True)
    return out(backend, e, "float32")
