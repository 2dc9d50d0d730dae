"""Adagrad: slot ``<var>/accumulator`` starts at ``initial_accumulator_value``."""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor, Variable
from ..ops import add, div, fill, mul, sqrt, square
from .optimizer import Optimizer, check_number


class AdagradOptimizer(Optimizer):
    """``acc += g^2``; ``value -= lr * g / sqrt(acc + backend epsilon)``."""

    class_name = "Adagrad"
    slot_suffixes = ("accumulator",)

    def __init__(self, learning_rate: float, initial_accumulator_value: float = 0.1) -> None:
        super().__init__()
        name = type(self).__name__
        self.learning_rate = check_number(learning_rate, "learning_rate", name)
        self.initial_accumulator_value = check_number(initial_accumulator_value, "initial_accumulator_value", name)

    def _slot_initial(self, suffix: str, value: Variable) -> Tensor:
        return fill(value.shape, self.initial_accumulator_value)

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        (accumulated,) = slots
        new_accumulated = add(accumulated, square(gradient))
        accumulated.assign(new_accumulated)
        scaled = div(gradient, sqrt(add(new_accumulated, ENGINE.backend.epsilon())))
        value.assign(add(mul(scaled, -self.learning_rate), value))

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'initialAccumulatorValue'}``."""
        return {"learningRate": self.learning_rate, "initialAccumulatorValue": self.initial_accumulator_value}


def adagrad(learning_rate: float, initial_accumulator_value: float = 0.1) -> AdagradOptimizer:
    """An Adagrad optimizer, as TF.js's ``tf.train.adagrad(learningRate, initialAccumulatorValue)``."""
    return AdagradOptimizer(learning_rate, initial_accumulator_value)
