"""Weight constraints as TF.js's ``tf.constraints``: ``max_norm``, ``unit_norm``, ``non_neg``, ``min_max_norm``.

A constraint's ``apply(w)`` returns the projected weights; a layer variable applies its constraint
after every ``write`` (so after each optimizer step). Norms are L2 norms along ``axis``
(0 by default: per output unit of a Dense kernel).
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.engine import ENGINE
from ..core.globals import tidy
from ..core.tensor import Tensor
from .engine.tfjs_args import tfjs_config
from .naming import to_camel_case
from .serialization import Serializable, deserialize_keras_object, register_class, serialize_keras_object


def _l2_norms(w: Tensor, axis: int | list[int]) -> Tensor:
    return tidy(lambda: ops.sqrt(ops.sum(ops.mul(w, w), axis, True)))


def epsilon() -> float:
    """The fuzz factor of the active backend (1e-7 for float32)."""
    return ENGINE.backend.epsilon()


class Constraint(Serializable):
    """Base class of constraints: ``apply(w)`` returns the constrained weights."""

    class_name = "Constraint"

    def apply(self, w: Tensor) -> Tensor:
        """The constrained version of ``w``."""
        raise NotImplementedError

    def __call__(self, w: Tensor) -> Tensor:
        return self.apply(w)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


@register_class
class MaxNorm(Constraint):
    """Rescale to a norm of at most ``max_value`` along ``axis``."""

    def __init__(self, max_value: float | None = None, axis: int | list[int] | None = None) -> None:
        self.max_value = 2 if max_value is None else max_value
        self.axis = 0 if axis is None else axis

    def apply(self, w: Tensor) -> Tensor:
        """``w`` with norms clipped to ``max_value``."""

        def run() -> Tensor:
            norms = _l2_norms(w, self.axis)
            desired = ops.clip_by_value(norms, 0, self.max_value)
            return ops.mul(w, ops.div(desired, ops.add(epsilon(), norms)))

        return tidy(run)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"max_value": self.max_value, "axis": self.axis}


@register_class
class UnitNorm(Constraint):
    """Rescale to unit norm along ``axis``."""

    def __init__(self, axis: int | list[int] | None = None) -> None:
        self.axis = 0 if axis is None else axis

    def apply(self, w: Tensor) -> Tensor:
        """``w / norm(w)``."""
        return tidy(lambda: ops.div(w, ops.add(epsilon(), _l2_norms(w, self.axis))))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"axis": self.axis}


@register_class
class NonNeg(Constraint):
    """Clip negative weights to zero."""

    def apply(self, w: Tensor) -> Tensor:
        """``relu(w)``."""
        return ops.relu(w)


@register_class
class MinMaxNorm(Constraint):
    """Rescale norms into [min_value, max_value] (at ``rate``) along ``axis``."""

    def __init__(
        self,
        min_value: float | None = None,
        max_value: float | None = None,
        rate: float | None = None,
        axis: int | list[int] | None = None,
    ) -> None:
        self.min_value = 0.0 if min_value is None else min_value
        self.max_value = 1.0 if max_value is None else max_value
        self.rate = 1.0 if rate is None else rate
        self.axis = 0 if axis is None else axis

    def apply(self, w: Tensor) -> Tensor:
        """``w`` with norms moved into the bounds."""

        def run() -> Tensor:
            norms = _l2_norms(w, self.axis)
            clipped = ops.clip_by_value(norms, self.min_value, self.max_value)
            desired = ops.add(ops.mul(self.rate, clipped), ops.mul(1.0 - self.rate, norms))
            return ops.mul(w, ops.div(desired, ops.add(epsilon(), norms)))

        return tidy(run)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


CONSTRAINT_IDENTIFIERS = {"maxNorm": "MaxNorm", "minMaxNorm": "MinMaxNorm", "nonNeg": "NonNeg", "unitNorm": "UnitNorm"}


def get_constraint(identifier: str | dict | Constraint | None) -> Constraint | None:
    """A constraint from a name (``'maxNorm'`` / ``'max_norm'``), a config dict, an instance, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str):
        class_name = CONSTRAINT_IDENTIFIERS.get(to_camel_case(identifier), identifier)
        return deserialize_constraint({"class_name": class_name, "config": {}})
    if isinstance(identifier, dict):
        return deserialize_constraint(identifier)
    raise TypeError(f"constraint must be a name, a config dict or a Constraint, got {type(identifier).__name__}")


def deserialize_constraint(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Constraint:
    """A constraint from its ``{'class_name', 'config'}``."""
    result = deserialize_keras_object(config, custom_objects=custom_objects, kind="constraint")
    if not isinstance(result, Constraint):
        raise ValueError(f"{config.get('class_name')!r} is not a constraint")
    return result


def serialize_constraint(constraint: Constraint | None) -> dict[str, Any] | None:
    """``{'class_name', 'config'}`` of a constraint (None for None)."""
    return serialize_keras_object(constraint)


@tfjs_config("max_value")
def max_norm(max_value: float | None = None, axis: int | list[int] | None = None) -> MaxNorm:
    """Norms at most ``max_value`` (default 2) along ``axis`` (default 0)."""
    return MaxNorm(max_value, axis)


@tfjs_config("axis")
def unit_norm(axis: int | list[int] | None = None) -> UnitNorm:
    """Unit norms along ``axis`` (default 0)."""
    return UnitNorm(axis)


def non_neg() -> NonNeg:
    """Non-negative weights."""
    return NonNeg()


@tfjs_config("min_value")
def min_max_norm(
    min_value: float | None = None,
    max_value: float | None = None,
    rate: float | None = None,
    axis: int | list[int] | None = None,
) -> MinMaxNorm:
    """Norms within [min_value, max_value] (defaults 0, 1), moved at ``rate`` (default 1)."""
    return MinMaxNorm(min_value, max_value, rate, axis)


__all__ = [
    "CONSTRAINT_IDENTIFIERS", "Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize_constraint",
    "get_constraint", "max_norm", "min_max_norm", "non_neg", "serialize_constraint", "unit_norm",
]  # fmt: skip
