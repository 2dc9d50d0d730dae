"""Activation functions by their TF.js names (``'relu'``, ``'hardSigmoid'``, ``'gelu_new'``, ...).

``get_activation(identifier)`` accepts a name in TF.js's camelCase or in the snake_case of
``model.json`` (``'hard_sigmoid'``), an ``Activation`` instance, or None (``'linear'``).
Configs hold the snake_case name, as ``model.toJSON()`` writes it.
"""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .naming import to_camel_case, to_snake_case
from .serialization import Serializable, register_class, unknown_class_error

#: Activations by TF.js class name ('relu', 'hardSigmoid', 'gelu_new', ...).
ACTIVATIONS: dict[str, type[Activation]] = {}


class Activation(Serializable):
    """Base class of activation functions: ``apply(x)`` returns a new tensor."""

    class_name = "Activation"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ACTIVATIONS[cls.class_name] = cls
        register_class(cls)

    def apply(self, x: Tensor) -> Tensor:
        """The activation of ``x``."""
        raise NotImplementedError

    def __call__(self, x: Tensor) -> Tensor:
        return self.apply(x)

    def __repr__(self) -> str:
        return f"<activation {self.class_name}>"


class Elu(Activation):
    """The ``elu`` activation."""

    class_name = "elu"

    def apply(self, x: Tensor) -> Tensor:
        """x where x > 0, else exp(x) - 1."""
        return ops.elu(x)


class Selu(Activation):
    """The ``selu`` activation."""

    class_name = "selu"

    def apply(self, x: Tensor) -> Tensor:
        """Scaled elu."""
        return ops.selu(x)


class Relu(Activation):
    """The ``relu`` activation."""

    class_name = "relu"

    def apply(self, x: Tensor) -> Tensor:
        """max(x, 0)."""
        return ops.relu(x)


class Relu6(Activation):
    """The ``relu6`` activation."""

    class_name = "relu6"

    def apply(self, x: Tensor) -> Tensor:
        """min(max(x, 0), 6)."""
        return tidy(lambda: ops.minimum(6.0, ops.relu(x)))


class Linear(Activation):
    """The ``linear`` activation."""

    class_name = "linear"

    def apply(self, x: Tensor) -> Tensor:
        """``x`` itself (layers copy it when it is their output)."""
        return x


class Sigmoid(Activation):
    """The ``sigmoid`` activation."""

    class_name = "sigmoid"

    def apply(self, x: Tensor) -> Tensor:
        """1 / (1 + exp(-x))."""
        return ops.sigmoid(x)


class HardSigmoid(Activation):
    """The ``hardSigmoid`` activation."""

    class_name = "hardSigmoid"

    def apply(self, x: Tensor) -> Tensor:
        """clip(0.2 * x + 0.5, 0, 1)."""
        return tidy(lambda: ops.clip_by_value(ops.add(0.5, ops.mul(0.2, x)), 0, 1))


class Softplus(Activation):
    """The ``softplus`` activation."""

    class_name = "softplus"

    def apply(self, x: Tensor) -> Tensor:
        """log(1 + exp(x))."""
        return ops.softplus(x)


class Softsign(Activation):
    """The ``softsign`` activation."""

    class_name = "softsign"

    def apply(self, x: Tensor) -> Tensor:
        """x / (|x| + 1)."""
        return tidy(lambda: ops.div(x, ops.add(ops.abs(x), 1)))


class Tanh(Activation):
    """The ``tanh`` activation."""

    class_name = "tanh"

    def apply(self, x: Tensor) -> Tensor:
        """tanh(x)."""
        return ops.tanh(x)


class Softmax(Activation):
    """The ``softmax`` activation."""

    class_name = "softmax"

    def apply(self, x: Tensor, axis: int = -1) -> Tensor:
        """exp(x) normalised along ``axis``."""
        return ops.softmax(x, axis)


class LogSoftmax(Activation):
    """The ``logSoftmax`` activation."""

    class_name = "logSoftmax"

    def apply(self, x: Tensor, axis: int = -1) -> Tensor:
        """log(softmax(x)) along ``axis``."""
        return ops.log_softmax(x, axis)


class Gelu(Activation):
    """The ``gelu`` activation."""

    class_name = "gelu"

    def apply(self, x: Tensor) -> Tensor:
        """x * Phi(x), with the exact normal CDF (erf)."""
        return tidy(lambda: ops.mul(x, ops.mul(0.5, ops.add(1, ops.erf(ops.div(x, math.sqrt(2)))))))


class GeluNew(Activation):
    """The ``gelu_new`` activation."""

    class_name = "gelu_new"

    def apply(self, x: Tensor) -> Tensor:
        """The tanh approximation of gelu."""

        def run() -> Tensor:
            inner = ops.mul(ops.sqrt(ops.div(2, math.pi)), ops.add(x, ops.mul(0.044715, ops.pow(x, 3))))
            return ops.mul(0.5, ops.mul(x, ops.add(1, ops.tanh(inner))))

        return tidy(run)


class Mish(Activation):
    """The ``mish`` activation."""

    class_name = "mish"

    def apply(self, x: Tensor) -> Tensor:
        """x * tanh(softplus(x))."""
        return tidy(lambda: ops.mul(x, ops.tanh(ops.softplus(x))))


class Swish(Activation):
    """The ``swish`` activation."""

    class_name = "swish"

    def apply(self, x: Tensor, alpha: float = 1.0) -> Tensor:
        """x * sigmoid(alpha * x)."""
        return tidy(lambda: ops.mul(ops.sigmoid(ops.mul(x, alpha)), x))


def _lookup(name: str) -> type[Activation] | None:
    if name in ACTIVATIONS:
        return ACTIVATIONS[name]
    camel = to_camel_case(name)
    for class_name, cls in ACTIVATIONS.items():
        if to_camel_case(class_name) == camel:
            return cls
    return None


def get_activation(identifier: str | dict | Activation | None) -> Activation:
    """An activation from a name (camelCase or snake_case), a config dict, an instance, or None (linear)."""
    if identifier is None:
        return Linear()
    if isinstance(identifier, Activation):
        return identifier
    if isinstance(identifier, dict):
        identifier = identifier.get("class_name")
    if isinstance(identifier, str):
        cls = _lookup(identifier)
        if cls is None or cls is Activation:
            known = ", ".join(sorted(to_snake_case(n) for n in ACTIVATIONS))
            raise ValueError(f"{unknown_class_error('activation', identifier)}\nKnown activations: {known}")
        return cls()
    raise TypeError(f"activation must be a name, an Activation or None, got {type(identifier).__name__}")


def serialize_activation(activation: Activation) -> str:
    """The name ``model.json`` holds for an activation (snake_case: ``'hard_sigmoid'``)."""
    return to_snake_case(activation.get_class_name())


__all__ = [
    "ACTIVATIONS", "Activation", "Elu", "Gelu", "GeluNew", "HardSigmoid", "Linear", "LogSoftmax", "Mish",
    "Relu", "Relu6", "Selu", "Sigmoid", "Softmax", "Softplus", "Softsign", "Swish", "Tanh",
    "get_activation", "serialize_activation",
]  # fmt: skip
