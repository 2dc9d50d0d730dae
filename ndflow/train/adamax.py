"""Adamax (Adam with the infinity norm): slots ``<var>/m`` and ``<var>/v``; optional lr ``decay``.

Beyond TF.js: ``get_weights`` / ``set_weights`` work (TF.js 4.22 throws "not implemented for
Adamax yet"), with Adam's layout: ``iter``, every ``/m``, then every ``/v``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.engine import ENGINE
from ..core.tensor import Tensor, Variable
from ..ops import abs as abs_
from ..ops import add, div, maximum, mul
from .optimizer import Optimizer, check_number, f32


class AdamaxOptimizer(Optimizer):
    """``m = b1 m + (1-b1) g``; ``u = max(b2 u, |g|)``; ``value -= lr_t / (1 - b1^t) * m / (u + eps)``."""

    class_name = "Adamax"
    slot_suffixes = ("m", "v")

    def __init__(
        self,
        learning_rate: float = 0.002,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float | None = None,
        decay: float = 0.0,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.learning_rate = check_number(learning_rate, "learning_rate", name)
        self.beta1 = check_number(beta1, "beta1", name)
        self.beta2 = check_number(beta2, "beta2", name)
        eps = check_number(epsilon, "epsilon", name, allow_none=True)
        self.epsilon = ENGINE.backend.epsilon() if eps is None else eps
        self.decay = check_number(decay, "decay", name)
        self._restore_step_state()

    def _restore_step_state(self) -> None:
        self._acc_beta1 = f32(float(f32(self.beta1)) ** (self._iterations + 1))

    def _begin_step(self) -> Any:
        # float32 scalar arithmetic, as TF.js does it on scalar tensors
        one = np.float32(1)
        decayed = f32(f32(f32(self._iterations) * f32(self.decay)) + one)
        lr = f32(f32(-self.learning_rate) / decayed)
        return float(f32(lr / (one - self._acc_beta1)))

    def _end_step(self) -> None:
        self._acc_beta1 = f32(self._acc_beta1 * f32(self.beta1))

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        first_moment, weighted_inf_norm = slots
        new_first = add(mul(first_moment, self.beta1), mul(gradient, 1 - self.beta1))
        new_inf_norm = maximum(mul(weighted_inf_norm, self.beta2), abs_(gradient))
        first_moment.assign(new_first)
        weighted_inf_norm.assign(new_inf_norm)
        value.assign(add(mul(step, div(new_first, add(new_inf_norm, self.epsilon))), value))

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'beta1', 'beta2', 'epsilon', 'decay'}``."""
        return {
            "learningRate": self.learning_rate,
            "beta1": self.beta1,
            "beta2": self.beta2,
            "epsilon": self.epsilon,
            "decay": self.decay,
        }


def adamax(
    learning_rate: float = 0.002,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float | None = None,
    decay: float = 0.0,
) -> AdamaxOptimizer:
    """An Adamax optimizer, as TF.js's ``tf.train.adamax(learningRate, beta1, beta2, epsilon, decay)``."""
    return AdamaxOptimizer(learning_rate, beta1, beta2, epsilon, decay)
