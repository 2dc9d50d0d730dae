"""Noise layers, active only when ``training``: ``GaussianNoise``, ``GaussianDropout``, ``AlphaDropout``.

Factories ``nf.layers.gaussian_noise(stddev=0.1)``, ``nf.layers.gaussian_dropout(rate=0.2)``,
``nf.layers.alpha_dropout(rate=0.1)``. At inference they return their input unchanged. A ``seed``
(Keras's argument; TF.js has none and does not serialize it) makes the noise reproducible: call
``k`` uses ``seed + k``, as TF.js's random layers do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .backend import in_train_phase
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_tensor

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check_number(value: Any, what: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner}: {what} must be a number, but got {value!r}")


class _NoiseLayer(Layer):
    """Shared parts: masking support, a per-call seed."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.seed = seed
        self._calls = 0

    def _next_seed(self) -> int | None:
        if self.seed is None:
            return None
        self._calls += 1
        return self.seed + self._calls - 1


@register_class
class GaussianNoise(_NoiseLayer):
    """Add zero-mean Gaussian noise of standard deviation ``stddev`` when training."""

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed, **kwargs)
        _check_number(stddev, "stddev", "GaussianNoise")
        self.stddev = stddev

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Tensor:
        """``inputs + N(0, stddev)`` when training, else ``inputs``."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)

        def noised() -> Tensor:
            return ops.add(ops.random_normal(list(x.shape), 0, self.stddev, None, self._next_seed()), x)

        return in_train_phase(noised, lambda: x, bool(training))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"stddev": self.stddev}
        config.update(super().get_config())
        return config


@register_class
class GaussianDropout(_NoiseLayer):
    """Multiply by Gaussian noise of mean 1 and standard deviation ``sqrt(rate / (1 - rate))`` when training."""

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed, **kwargs)
        _check_number(rate, "rate", "GaussianDropout")
        self.rate = rate

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Any:
        """``inputs * N(1, sqrt(rate / (1 - rate)))`` when training, else ``inputs``."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)
        if not 0 < self.rate < 1:
            return x

        def noised() -> Tensor:
            stddev = math.sqrt(self.rate / (1 - self.rate))
            return ops.mul(x, ops.random_normal(list(x.shape), 1, stddev, None, self._next_seed()))

        return in_train_phase(noised, lambda: x, bool(training))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"rate": self.rate}
        config.update(super().get_config())
        return config


@register_class
class AlphaDropout(_NoiseLayer):
    """Dropout that keeps the mean and variance of SELU activations: dropped units take SELU's lower bound.

    As Keras; TF.js 4.22 sets dropped units to ``+alpha * scale`` (the sign is wrong), which does not.
    """

    def __init__(
        self, rate: float, noise_shape: Sequence[int | None] | None = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed, **kwargs)
        _check_number(rate, "rate", "AlphaDropout")
        self.rate = rate
        self.noise_shape = None if noise_shape is None else list(noise_shape)

    def _get_noise_shape(self, x: Tensor) -> list[int]:
        if self.noise_shape is None:
            return list(x.shape)
        return [x.shape[i] if d is None else d for i, d in enumerate(self.noise_shape)]

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Any:
        """Alpha dropout when training, else ``inputs``."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)
        if not 0 < self.rate < 1:
            return x

        def dropped() -> Tensor:
            alpha_p = -_SELU_ALPHA * _SELU_SCALE
            uniform = ops.random_uniform(self._get_noise_shape(x), 0, 1, "float32", self._next_seed())
            kept = ops.cast(ops.greater_equal(uniform, self.rate), "float32")
            a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5
            b = -a * alpha_p * self.rate
            y = ops.add(ops.mul(x, kept), ops.mul(ops.sub(1, kept), alpha_p))  # TF.js 4.22 has +alpha_p here
            return ops.add(ops.mul(y, a), b)

        return in_train_phase(dropped, lambda: x, bool(training))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config (``rate`` only, as TF.js writes it)."""
        config: dict[str, Any] = {"rate": self.rate}
        config.update(super().get_config())
        return config


gaussian_noise = layer_factory(GaussianNoise, "gaussian_noise", **FACTORY_DOCS["gaussian_noise"])
gaussian_dropout = layer_factory(GaussianDropout, "gaussian_dropout", **FACTORY_DOCS["gaussian_dropout"])
alpha_dropout = layer_factory(AlphaDropout, "alpha_dropout", **FACTORY_DOCS["alpha_dropout"])


__all__ = ["AlphaDropout", "GaussianDropout", "GaussianNoise", "alpha_dropout", "gaussian_dropout", "gaussian_noise"]
