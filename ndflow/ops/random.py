"""Random tensors: normal, truncated normal, uniform, gamma, multinomial draws, ``rand`` and ``dropout``.

As in TF.js, the values of ``random_*`` are drawn in the op and become a new tensor; only ``multinomial``
runs a kernel. A ``seed`` (int, float or str) gives TF.js 4.22's own values for that seed, value for value:
the streams of seedrandom's Alea generator and TF.js's transforms are reproduced in
:mod:`ndflow.ops.random_streams`. As in TF.js, a seed of ``0`` (or ``''``) draws unseeded values in the
normal, truncated-normal, gamma and multinomial ops, and is a seed like any other in the uniform ones
(``random_uniform``, ``random_uniform_int``, ``dropout``). Without a seed the values are unseeded, as TF.js's
(``Math.random()`` picks its seed). TF.js's ``util.shuffle`` has no seed at all (it uses ``Math.random``), so
there is no stream of it to reproduce; tf.data's seeded ``shuffle`` uses the same Alea generator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dtypes import check_dtype
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import Seed, Shape, TensorLike
from .arithmetic import mul
from .convert import broadcast_shape, check_shape, make_tensor
from .creation import clone
from .random_streams import GaussStream, UniformStream, gamma_values, seed_text, store
from .sparse_dense import _convert


def _number(value: Any, op: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {type(value).__name__}")
    return float(value)


def _dtype(dtype: str | None, op: str, allowed: tuple[str, ...]) -> str:
    dtype = "float32" if dtype is None else check_dtype(dtype, op)  # numpy's and torch's dtypes name ours too
    if dtype not in allowed:
        raise ValueError(f"{op}: unsupported dtype {dtype!r} (expected one of {', '.join(allowed)})")
    return dtype


def _tensor(values: np.ndarray, shape: tuple[int, ...], dtype: str) -> Tensor:
    """JS doubles stored as TF.js stores them into the result's typed array."""
    return ENGINE.make_tensor(store(values, dtype).reshape(shape), shape, dtype)


def _normal(op: str, shape: Shape, mean: Any, std_dev: Any, dtype: str | None, seed: Seed, truncated: bool) -> Tensor:
    shape = check_shape(shape, op)
    dtype = _dtype(dtype, op, ("float32", "int32"))
    mean, std_dev = _number(mean, op, "mean"), _number(std_dev, op, "std_dev")
    if truncated and std_dev < 0:  # TF.js loops forever here and below (no value is ever within the bounds)
        raise ValueError(f"{op}: argument 'std_dev' must be >= 0, got {std_dev}")
    if truncated and not (math.isfinite(std_dev) and math.isfinite(mean)):
        raise ValueError(f"{op}: arguments 'mean' and 'std_dev' must be finite, got {mean} and {std_dev}")
    stream = GaussStream(mean, std_dev, dtype == "int32", truncated, seed_text(seed, op, falsy_is_unseeded=True))
    return _tensor(stream.take(math.prod(shape)), shape, dtype)


def random_normal(
    shape: Shape, mean: float = 0, std_dev: float = 1, dtype: str | None = None, seed: Seed = None
) -> Tensor:
    """Samples of a normal distribution (int32: rounded), TF.js's values for a given ``seed``."""
    return _normal("random_normal", shape, mean, std_dev, dtype, seed, truncated=False)


def random_standard_normal(shape: Shape, dtype: str | None = None, seed: Seed = None) -> Tensor:
    """Samples of the standard normal distribution (mean 0, standard deviation 1)."""
    return _normal("random_standard_normal", shape, 0, 1, dtype, seed, truncated=False)


def truncated_normal(
    shape: Shape, mean: float = 0, std_dev: float = 1, dtype: str | None = None, seed: Seed = None
) -> Tensor:
    """Samples of a normal distribution, redrawn until within two standard deviations of the mean."""
    return _normal("truncated_normal", shape, mean, std_dev, dtype, seed, truncated=True)


def _uniform(op: str, shape: Shape, minval: Any, maxval: Any, dtype: str, seed: Seed) -> Tensor:
    shape = check_shape(shape, op)
    dtype = _dtype(dtype, op, ("float32", "int32", "bool"))
    minval, maxval = _number(minval, op, "minval"), _number(maxval, op, "maxval")
    stream = UniformStream(seed_text(seed, op, falsy_is_unseeded=False))
    values = minval + (maxval - minval) * stream.take(math.prod(shape))
    return _tensor(values, shape, dtype)


def random_uniform(
    shape: Shape, minval: float = 0, maxval: float = 1, dtype: str = "float32", seed: Seed = None
) -> Tensor:
    """Samples uniform in [minval, maxval); int32 and bool store the samples truncated towards zero, as TF.js
    does (so for a range below zero, ``0`` comes twice as often and ``minval`` almost never)."""
    return _uniform("random_uniform", shape, minval, maxval, dtype, seed)


def random_uniform_int(shape: Shape, minval: int, maxval: int, seed: Seed = None) -> Tensor:
    """Integers in [minval, maxval) (int32): ``random_uniform`` stored as int32, as in TF.js."""
    return _uniform("random_uniform_int", shape, minval, maxval, "int32", seed)


def random_gamma(shape: Shape, alpha: float, beta: float = 1, dtype: str = "float32", seed: Seed = None) -> Tensor:
    """Samples of a gamma distribution with shape ``alpha``, TF.js 4.22's values for a given ``seed``.

    TF.js documents ``beta`` as the rate but multiplies the samples by it, so their mean is ``alpha * beta``
    (not ``alpha / beta``); ndflow keeps TF.js's numbers. int32: rounded, and drawn from rounded normal
    values (which biases them), as TF.js does."""
    op = "random_gamma"
    shape = check_shape(shape, op)
    beta = 1 if beta is None else beta
    dtype = _dtype(dtype, op, ("float32", "int32"))
    alpha, beta = _number(alpha, op, "alpha"), _number(beta, op, "beta")
    if not (alpha > 0 and beta > 0):  # TF.js returns zeros, NaN or negative values here
        raise ValueError(f"{op}: arguments 'alpha' and 'beta' must be > 0, got alpha={alpha}, beta={beta}")
    text = seed_text(seed, op, falsy_is_unseeded=True)
    return _tensor(gamma_values(math.prod(shape), alpha, beta, dtype == "int32", text), shape, dtype)


def multinomial(logits: TensorLike, num_samples: int, seed: Seed = None, normalized: bool = False) -> Tensor:
    """``num_samples`` event indices (int32) drawn from each row of ``logits`` (rank 1 or 2; the
    rows are probabilities when ``normalized``, else unnormalised log-probabilities).

    As TF.js's cpu backend, every row draws from a new stream of the same seed."""
    op = "multinomial"
    if isinstance(num_samples, bool) or not isinstance(num_samples, int | np.integer):
        raise TypeError(f"{op}: argument 'num_samples' must be an int, got {type(num_samples).__name__}")
    if num_samples < 0:
        raise ValueError(f"{op}: argument 'num_samples' must be >= 0, got {num_samples}")
    text = seed_text(seed, op, falsy_is_unseeded=True)
    x = _convert(logits, "logits", op)
    try:
        if x.dtype == "complex64":
            raise TypeError(f"{op}: argument 'logits' must be real, got complex64")
        if x.size < 2:
            raise ValueError(f"{op}: needs at least 2 outcomes, got {x.size} (logits shape {list(x.shape)})")
        if x.rank > 2:
            raise ValueError(f"{op}: argument 'logits' must have rank 1 or 2, got rank {x.rank}")
        x2 = x if x.rank == 2 else ENGINE.run_kernel(kn.Reshape, (x,), {"shape": (1, x.size)})
        attrs = {"num_samples": int(num_samples), "seed": text, "normalized": bool(normalized)}
        try:
            result = ENGINE.run_kernel(kn.Multinomial, (x2,), attrs)
        finally:
            if x2 is not x:
                x2.dispose()
        if x.rank == 2:
            return result
        flat = ENGINE.run_kernel(kn.Reshape, (result,), {"shape": (int(num_samples),)})
        result.dispose()
        return flat
    finally:
        if x is not logits:
            x.dispose()


def rand(shape: Shape, rand_function: Callable[[], float], dtype: str | None = None) -> Tensor:
    """A tensor filled by calling ``rand_function()`` once per element."""
    op = "rand"
    shape = check_shape(shape, op)
    dtype = None if dtype is None else check_dtype(dtype, op)
    if dtype is not None and dtype not in ("float32", "int32", "bool"):
        raise ValueError(f"{op}: unknown dtype {dtype!r} (expected float32, int32 or bool)")
    if not callable(rand_function):
        raise TypeError(f"{op}: argument 'rand_function' must be callable, got {type(rand_function).__name__}")
    values = np.fromiter((rand_function() for _ in range(math.prod(shape))), np.float64, math.prod(shape))
    return make_tensor(values.reshape(shape), shape, dtype or "float32", op)


def _noise_shape(x: Tensor, noise_shape: Shape | None) -> tuple[int, ...]:
    """TF.js's ``getNoiseShape``: ``None`` entries take ``x``'s size; it must broadcast to ``x``."""
    if noise_shape is None:
        return x.shape
    if isinstance(noise_shape, int) or not isinstance(noise_shape, Sequence):
        raise TypeError(f"dropout: argument 'noise_shape' must be a list of ints, got {type(noise_shape).__name__}")
    shape = list(noise_shape)
    if len(shape) == x.rank:
        shape = [x.shape[i] if d is None else d for i, d in enumerate(shape)]
    shape = check_shape(shape, "dropout", "noise_shape")
    broadcast_shape(x.shape, shape, "dropout")
    if len(shape) > x.rank or any(d not in (1, x.shape[i - len(shape)]) for i, d in enumerate(shape)):
        raise ValueError(f"dropout: noise_shape {list(shape)} must broadcast to x's shape {list(x.shape)}")
    return shape


def dropout(x: TensorLike, rate: float, noise_shape: Shape | None = None, seed: Seed = None) -> Tensor:
    """Zero each element (or each slice along ``noise_shape``) with probability ``rate`` and scale
    the rest by ``1 / (1 - rate)``."""
    op = "dropout"
    rate = _number(rate, op, "rate")
    t = _convert(x, "x", op)
    made = t is not x
    try:
        if t.dtype != "float32":
            raise TypeError(f"{op}: argument 'x' must be a float32 tensor (it is scaled), got {t.dtype}")
        if not 0 <= rate < 1:
            raise ValueError(f"{op}: argument 'rate' must be in [0, 1), got {rate}")
        if rate == 0:
            if made:
                made = False  # the tensor made from values is the result
                return t
            return clone(t)
        shape = _noise_shape(t, noise_shape)
        keep_prob = np.float32(1 - rate)  # float32 tensors: add, floor and div round as TF.js's do
        u = store(UniformStream(seed_text(seed, op, falsy_is_unseeded=False)).take(math.prod(shape)), "float32")
        multiplier = ENGINE.make_tensor(np.floor(u + keep_prob).reshape(shape) / keep_prob, shape, "float32")
        try:
            return mul(t, multiplier)
        finally:
            multiplier.dispose()
    finally:
        if made:
            t.dispose()


__all__ = [
    "dropout", "multinomial", "rand", "random_gamma", "random_normal", "random_standard_normal",
    "random_uniform", "random_uniform_int", "truncated_normal",
]  # fmt: skip
