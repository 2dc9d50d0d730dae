"""Adadelta: slots ``<var>/accum_grad`` and ``<var>/accum_var``.

As TF.js 4.22 (and its tests) define it, the step divides by the accumulated squared gradient of
the *previous* step, ``sqrt(accum_var + eps) / sqrt(accum_grad_old + eps) * g``, where the paper
and TensorFlow use the updated one; ndflow keeps TF.js's rule so that training matches it.
"""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor, Variable
from ..ops import add, div, mul, sqrt, square
from .optimizer import Optimizer, check_number


class AdadeltaOptimizer(Optimizer):
    """Adadelta with decay ``rho`` (TF.js class name ``'Adadelta'``)."""

    class_name = "Adadelta"
    slot_suffixes = ("accum_grad", "accum_var")

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.95, epsilon: float | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.learning_rate = check_number(learning_rate, "learning_rate", name)
        self.rho = check_number(rho, "rho", name)
        eps = check_number(epsilon, "epsilon", name, allow_none=True)
        self.epsilon = ENGINE.backend.epsilon() if eps is None else eps

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        accumulated_grad, accumulated_update = slots
        new_accumulated_grad = add(mul(accumulated_grad, self.rho), mul(square(gradient), 1 - self.rho))
        updates = mul(
            div(sqrt(add(accumulated_update, self.epsilon)), sqrt(add(accumulated_grad, self.epsilon))), gradient
        )
        new_accumulated_update = add(mul(accumulated_update, self.rho), mul(square(updates), 1 - self.rho))
        accumulated_grad.assign(new_accumulated_grad)
        accumulated_update.assign(new_accumulated_update)
        value.assign(add(mul(updates, -self.learning_rate), value))

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'rho', 'epsilon'}``."""
        return {"learningRate": self.learning_rate, "rho": self.rho, "epsilon": self.epsilon}


def adadelta(learning_rate: float = 0.001, rho: float = 0.95, epsilon: float | None = None) -> AdadeltaOptimizer:
    """An Adadelta optimizer, as TF.js's ``tf.train.adadelta(learningRate, rho, epsilon)``."""
    return AdadeltaOptimizer(learning_rate, rho, epsilon)
