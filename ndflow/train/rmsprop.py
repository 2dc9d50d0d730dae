"""RMSProp: slots ``<var>/rms``, ``<var>/momentum`` and, when centered, ``<var>/mg``.

Beyond TF.js: the centered variant divides by ``sqrt(ms - mg^2 + eps)`` (TensorFlow's formula).
TF.js 4.22 computes ``sqrt(ms - (mg^2 + eps))``, which is NaN wherever ``ms - mg^2 < eps`` — for
instance on the first step of any element whose gradient is 0 — and turns the variable into NaN.
"""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor, Variable
from ..ops import add, div, mul, sqrt, square, sub
from .optimizer import Optimizer, check_number


class RMSPropOptimizer(Optimizer):
    """``ms = d ms + (1-d) g^2``; ``mom = momentum mom + lr g / sqrt(ms + eps)``; ``value -= mom``."""

    class_name = "RMSProp"
    slot_suffixes = ("rms", "momentum")

    def __init__(
        self,
        learning_rate: float,
        decay: float = 0.9,
        momentum: float = 0.0,
        epsilon: float | None = None,
        centered: bool = False,
    ) -> None:
        self.centered = bool(centered)
        super().__init__()
        name = type(self).__name__
        if learning_rate is None:
            raise ValueError(f"{name}: learning_rate must be defined")
        self.learning_rate = check_number(learning_rate, "learning_rate", name)
        self.decay = check_number(decay, "decay", name)
        self.momentum = check_number(momentum, "momentum", name)
        eps = check_number(epsilon, "epsilon", name, allow_none=True)
        self.epsilon = ENGINE.backend.epsilon() if eps is None else eps

    def _slot_suffixes(self) -> tuple[str, ...]:
        return ("rms", "momentum", "mg") if self.centered else ("rms", "momentum")

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        mean_square, moments = slots[0], slots[1]
        new_mean_square = add(mul(mean_square, self.decay), mul(square(gradient), 1 - self.decay))
        if self.centered:
            mean_grad = slots[2]
            new_mean_grad = add(mul(mean_grad, self.decay), mul(gradient, 1 - self.decay))
            denominator = sqrt(add(sub(new_mean_square, square(new_mean_grad)), self.epsilon))
            mean_grad.assign(new_mean_grad)
        else:
            denominator = sqrt(add(new_mean_square, self.epsilon))
        new_moments = add(mul(moments, self.momentum), div(mul(gradient, self.learning_rate), denominator))
        mean_square.assign(new_mean_square)
        moments.assign(new_moments)
        value.assign(sub(value, new_moments))

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'decay', 'momentum', 'epsilon', 'centered'}``."""
        return {
            "learningRate": self.learning_rate,
            "decay": self.decay,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "centered": self.centered,
        }


def rmsprop(
    learning_rate: float,
    decay: float = 0.9,
    momentum: float = 0.0,
    epsilon: float | None = None,
    centered: bool = False,
) -> RMSPropOptimizer:
    """An RMSProp optimizer, as TF.js's ``tf.train.rmsprop(learningRate, decay, momentum, epsilon, centered)``."""
    return RMSPropOptimizer(learning_rate, decay, momentum, epsilon, centered)
