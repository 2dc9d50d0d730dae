"""Plain gradient descent: ``value -= learning_rate * gradient``."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor, Variable
from ..ops import add, mul
from .optimizer import Optimizer, check_number


class SGDOptimizer(Optimizer):
    """Stochastic gradient descent (TF.js class name ``'SGD'``)."""

    class_name = "SGD"

    def __init__(self, learning_rate: float) -> None:
        super().__init__()
        self.set_learning_rate(learning_rate)

    def set_learning_rate(self, learning_rate: float) -> None:
        """Change the learning rate used by the next steps."""
        self.learning_rate = check_number(learning_rate, "learning_rate", type(self).__name__)

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        value.assign(add(mul(-self.learning_rate, gradient), value))

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate': ...}``."""
        return {"learningRate": self.learning_rate}


def sgd(learning_rate: float) -> SGDOptimizer:
    """An SGD optimizer, as TF.js's ``tf.train.sgd(learningRate)``."""
    return SGDOptimizer(learning_rate)
