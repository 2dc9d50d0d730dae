"""Weight regularizers as TF.js's ``tf.regularizers``: ``l1``, ``l2``, ``l1l2`` (class ``L1L2``).

A regularizer's ``apply(x)`` is the scalar penalty ``sum(l1 * |x|) + sum(l2 * x ** 2)``; layers add
it to their losses for each weight that has one. Beyond TF.js: Keras's ``'l1'`` / ``'l2'``
identifiers and its ``L1`` / ``L2`` class names are read too (written back as ``L1L2``).
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .engine.tfjs_args import tfjs_config
from .serialization import Serializable, deserialize_keras_object, register_class, serialize_keras_object


class Regularizer(Serializable):
    """Base class of regularizers: ``apply(x)`` returns a scalar penalty."""

    class_name = "Regularizer"

    def apply(self, x: Tensor) -> Tensor:
        """The penalty for weight values ``x`` (a scalar)."""
        raise NotImplementedError

    def __call__(self, x: Tensor) -> Tensor:
        return self.apply(x)


@register_class
class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)`` (both factors default to 0.01)."""

    def __init__(self, l1: float | None = None, l2: float | None = None) -> None:
        self.l1 = 0.01 if l1 is None else l1
        self.l2 = 0.01 if l2 is None else l2
        self.has_l1 = self.l1 != 0
        self.has_l2 = self.l2 != 0

    def apply(self, x: Tensor) -> Tensor:
        """The penalty, a scalar."""

        def run() -> Tensor:
            regularization = ops.zeros([1])
            if self.has_l1:
                regularization = ops.add(regularization, ops.sum(ops.mul(self.l1, ops.abs(x))))
            if self.has_l2:
                regularization = ops.add(regularization, ops.sum(ops.mul(self.l2, ops.square(x))))
            return ops.reshape(regularization, [])

        return tidy(run)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {"l1": self.l1, "l2": self.l2}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> L1L2:
        """An instance from its Keras-format config."""
        return cls(l1=config.get("l1"), l2=config.get("l2"))

    def __repr__(self) -> str:
        return f"L1L2(l1={self.l1}, l2={self.l2})"


class _L1(L1L2):
    """Keras's ``L1`` class name, read as ``L1L2(l1, 0)``."""

    class_name = "L1"

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> L1L2:
        """An instance from its Keras-format config."""
        return L1L2(l1=config.get("l1"), l2=0)


class _L2(L1L2):
    """Keras's ``L2`` class name, read as ``L1L2(0, l2)``."""

    class_name = "L2"

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> L1L2:
        """An instance from its Keras-format config."""
        return L1L2(l1=0, l2=config.get("l2"))


register_class(_L1)
register_class(_L2)


@tfjs_config("l1")
def l1l2(l1: float | None = None, l2: float | None = None) -> L1L2:
    """L1 and L2 penalty (each factor 0.01 by default)."""
    return L1L2(l1, l2)


@tfjs_config("l1")
def l1(l1: float | None = None) -> L1L2:  # noqa: E741 - TF.js's name
    """L1 penalty ``l1 * sum(|x|)`` (0.01 by default)."""
    return L1L2(l1=l1, l2=0)


@tfjs_config("l2")
def l2(l2: float | None = None) -> L1L2:
    """L2 penalty ``l2 * sum(x ** 2)`` (0.01 by default)."""
    return L1L2(l1=0, l2=l2)


REGULARIZER_IDENTIFIERS = {"l1l2": "L1L2", "l1": "L1", "l2": "L2"}


def get_regularizer(identifier: str | dict | Regularizer | None) -> Regularizer | None:
    """A regularizer from a name (``'l1l2'``), a config dict, an instance, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        class_name = REGULARIZER_IDENTIFIERS.get(identifier, identifier)
        return deserialize_regularizer({"class_name": class_name, "config": {}})
    if isinstance(identifier, dict):
        return deserialize_regularizer(identifier)
    raise TypeError(f"regularizer must be a name, a config dict or a Regularizer, got {type(identifier).__name__}")


def deserialize_regularizer(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Regularizer:
    """A regularizer from its ``{'class_name', 'config'}``."""
    result = deserialize_keras_object(config, custom_objects=custom_objects, kind="regularizer")
    if not isinstance(result, Regularizer):
        raise ValueError(f"{config.get('class_name')!r} is not a regularizer")
    return result


def serialize_regularizer(regularizer: Regularizer | None) -> dict[str, Any] | None:
    """``{'class_name', 'config'}`` of a regularizer (None for None)."""
    return serialize_keras_object(regularizer)


__all__ = [
    "L1L2", "REGULARIZER_IDENTIFIERS", "Regularizer", "deserialize_regularizer", "get_regularizer", "l1", "l1l2",
    "l2", "serialize_regularizer",
]  # fmt: skip
