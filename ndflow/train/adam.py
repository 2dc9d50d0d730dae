"""Adam: slots ``<var>/m`` and ``<var>/v``, bias-corrected by ``1 - beta^t``.

The running powers ``beta1^t`` / ``beta2^t`` are float32 numbers advanced by one float32
multiplication a step, as TF.js keeps them in float32 scalar variables (same bits, no tensors). A variable's update is
one kernel (``_NdflowAdamUpdate``) where the backend has it: the same float32 operations in the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import get_kernel
from ..core.tensor import Tensor, Variable
from ..ops import add, div, mul, sqrt, square
from .optimizer import Optimizer, check_number, f32


class AdamOptimizer(Optimizer):
    """``m = b1 m + (1-b1) g``; ``v = b2 v + (1-b2) g^2``; ``value -= lr m^ / (sqrt(v^) + eps)``."""

    class_name = "Adam"
    slot_suffixes = ("m", "v")

    def __init__(
        self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999, epsilon: float | None = None
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.learning_rate = check_number(learning_rate, "learning_rate", name)
        self.beta1 = check_number(beta1, "beta1", name)
        self.beta2 = check_number(beta2, "beta2", name)
        eps = check_number(epsilon, "epsilon", name, allow_none=True)
        self.epsilon = ENGINE.backend.epsilon() if eps is None else eps
        self._restore_step_state()

    def _restore_step_state(self) -> None:
        t = self._iterations + 1
        self._acc_beta1 = f32(float(f32(self.beta1)) ** t)
        self._acc_beta2 = f32(float(f32(self.beta2)) ** t)

    def _begin_step(self) -> Any:
        one = np.float32(1)
        return float(one - self._acc_beta1), float(one - self._acc_beta2)

    def _end_step(self) -> None:
        self._acc_beta1 = f32(self._acc_beta1 * f32(self.beta1))
        self._acc_beta2 = f32(self._acc_beta2 * f32(self.beta2))

    def _update(self, value: Variable, gradient: Tensor, slots: list[Variable], step: Any) -> None:
        first_moment, second_moment = slots
        one_minus_acc_beta1, one_minus_acc_beta2 = step
        if self._fused(value, gradient):
            attrs = {
                "beta1": self.beta1, "one_minus_beta1": 1 - self.beta1, "beta2": self.beta2,
                "one_minus_beta2": 1 - self.beta2, "correction1": one_minus_acc_beta1,
                "correction2": one_minus_acc_beta2, "epsilon": self.epsilon, "negative_lr": -self.learning_rate,
            }  # fmt: skip
            inputs = (value, first_moment, second_moment, gradient)
            new_value, new_first, new_second = ENGINE.run_kernel(kn._NdflowAdamUpdate, inputs, attrs)
            first_moment.assign(new_first)
            second_moment.assign(new_second)
            value.assign(new_value)
            return
        new_first = add(mul(first_moment, self.beta1), mul(gradient, 1 - self.beta1))
        new_second = add(mul(second_moment, self.beta2), mul(square(gradient), 1 - self.beta2))
        corrected_first = div(new_first, one_minus_acc_beta1)
        corrected_second = div(new_second, one_minus_acc_beta2)
        first_moment.assign(new_first)
        second_moment.assign(new_second)
        step_size = mul(div(corrected_first, add(sqrt(corrected_second), self.epsilon)), -self.learning_rate)
        value.assign(add(step_size, value))

    @staticmethod
    def _fused(value: Variable, gradient: Tensor) -> bool:
        """Whether the update runs as one kernel (``_NdflowAdamUpdate``): float32 values on a backend that has it, and
        no gradient being recorded (an update inside a gradient function stays op by op, on the tape)."""
        return (
            value.dtype == "float32"
            and gradient.dtype == "float32"
            and ENGINE.gradient_depth == 0
            and get_kernel(kn._NdflowAdamUpdate, ENGINE.backend_name) is not None
        )

    def get_config(self) -> dict[str, Any]:
        """``{'learningRate', 'beta1', 'beta2', 'epsilon'}``."""
        return {"learningRate": self.learning_rate, "beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}


def adam(
    learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999, epsilon: float | None = None
) -> AdamOptimizer:
    """An Adam optimizer, as TF.js's ``tf.train.adam(learningRate, beta1, beta2, epsilon)``."""
    return AdamOptimizer(learning_rate, beta1, beta2, epsilon)
