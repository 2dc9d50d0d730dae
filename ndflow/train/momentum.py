"""Gradient descent with momentum (optionally Nesterov's): slot ``<var>/momentum``."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor, Variable
from ..ops import add, mul
from .optimizer import check_number
from .sgd import SGDOptimizer


class MomentumOptimizer(SGDOptimizer):
    """``acc = momentum * acc + g``; ``value -= lr * acc`` (or ``lr * (g + momentum * acc)`` if Nesterov)."""

    class_name = "Momentum"
    slot_suffixes = ("momentum",)

    def __init__(self, learning_rate: float, momentum: float, use_nesterov: bool = False) -> None:
        super().__init__(learning_rate)
        self.set_momentum(momentum)
        self.use_nesterov = bool(use_nesterov)

    def set_momentum(self, momentum: float) -> None:
        """Change the momentum used by the next steps (TF.js keeps using the old one; ndflow does not)."""
        self.momentum = check_number(momentum, "momentum", type(self).__name__)

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        (accumulation,) = slots
        new_accumulation = add(mul(self.momentum, accumulation), gradient)
        if self.use_nesterov:
            direction = add(gradient, mul(new_accumulation, self.momentum))
        else:
            direction = new_accumulation
        new_value = add(mul(-self.learning_rate, direction), value)
        accumulation.assign(new_accumulation)
        value.assign(new_value)

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'momentum', 'useNesterov'}``."""
        return {"learningRate": self.learning_rate, "momentum": self.momentum, "useNesterov": self.use_nesterov}


def momentum(learning_rate: float, momentum: float, use_nesterov: bool = False) -> MomentumOptimizer:
    """A momentum optimizer, as TF.js's ``tf.train.momentum(learningRate, momentum, useNesterov)``."""
    return MomentumOptimizer(learning_rate, momentum, use_nesterov)
