"""Activation layers with parameters: ``ReLU``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``ThresholdedReLU``, ``Softmax``.

Factories: ``nf.layers.relu(max_value=6)``, ``nf.layers.leaky_relu(alpha=0.1)``,
``nf.layers.prelu(shared_axes=[1])``, ``nf.layers.elu()``, ``nf.layers.thresholded_relu(theta=0.5)``,
``nf.layers.softmax(axis=-1)`` (TF.js's ``reLU``, ``leakyReLU``, ... with ReLU as one word).

Beyond TF.js 4.22: ``ELU`` takes any ``alpha`` (TF.js refuses all but 1), and ``Softmax`` works
along any axis (TF.js's default ``axis=1`` throws for inputs of rank 3 and more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .constraints import get_constraint, serialize_constraint
from .engine.base import Layer
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import get_initializer, serialize_initializer
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor, shape_str


def _check_number(value: Any, what: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner}: {what} must be a number, but got {value!r}")


@register_class
class ReLU(Layer):
    """``max(x, 0)``, capped at ``max_value`` if given (Keras's ``negative_slope`` / ``threshold`` too)."""

    def __init__(
        self, max_value: float | None = None, negative_slope: float = 0.0, threshold: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        if max_value is not None:
            _check_number(max_value, "max_value", "ReLU")
        for value, what in ((negative_slope, "negative_slope"), (threshold, "threshold")):
            _check_number(value, what, "ReLU")
            if value < 0:
                raise ValueError(f"ReLU: {what} must be >= 0, but got {value!r}")
        self.max_value = max_value
        self.negative_slope = negative_slope
        self.threshold = threshold

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``relu(inputs)`` clipped to ``[0, max_value]``; with Keras's options, ``x`` above ``threshold`` and
        ``negative_slope * (x - threshold)`` below (as Keras computes it)."""
        x = get_exactly_one_tensor(inputs)
        if self.threshold:
            output = ops.mul(x, ops.cast(ops.greater(x, self.threshold), x.dtype))
        else:
            output = ops.relu(x)
        if self.max_value is not None:
            output = ops.clip_by_value(output, 0, self.max_value)
        if self.negative_slope:
            output = ops.sub(output, ops.mul(ops.relu(ops.sub(self.threshold, x)), self.negative_slope))
        return output

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config (Keras's keys only when they are not their defaults)."""
        config: dict[str, Any] = {"max_value": self.max_value}
        if self.negative_slope:
            config["negative_slope"] = self.negative_slope
        if self.threshold:
            config["threshold"] = self.threshold
        config.update(super().get_config())
        return config


@register_class
class LeakyReLU(Layer):
    """``x`` for ``x >= 0``, ``alpha * x`` below (``alpha`` defaults to 0.3)."""

    def __init__(self, alpha: float | None = None, negative_slope: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if negative_slope is not None:  # Keras 3's name for alpha
            _check_number(negative_slope, "negative_slope", "LeakyReLU")
            if alpha is not None and alpha != negative_slope:
                raise ValueError(f"LeakyReLU: alpha={alpha!r} and negative_slope={negative_slope!r} disagree")
            alpha = negative_slope
        if alpha is not None:
            _check_number(alpha, "alpha", "LeakyReLU")
        self.alpha = 0.3 if alpha is None else alpha

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``leaky_relu(inputs, alpha)``."""
        return ops.leaky_relu(get_exactly_one_tensor(inputs), self.alpha)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"alpha": self.alpha}
        config.update(super().get_config())
        return config


@register_class
class PReLU(Layer):
    """Leaky ReLU with a learned slope per element (shared along ``shared_axes``)."""

    def __init__(
        self,
        alpha_initializer: Any = None,
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: int | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha_initializer = get_initializer(alpha_initializer or "zeros")
        self.alpha_regularizer = get_regularizer(alpha_regularizer)
        self.alpha_constraint = get_constraint(alpha_constraint)
        if shared_axes is None:
            self.shared_axes: list[int] | None = None
        elif isinstance(shared_axes, int) and not isinstance(shared_axes, bool):
            self.shared_axes = [shared_axes]
        elif isinstance(shared_axes, list | tuple) and all(
            isinstance(a, int) and not isinstance(a, bool) for a in shared_axes
        ):
            self.shared_axes = list(shared_axes)
        else:
            raise ValueError(
                f"PReLU: expected shared_axes to be a number or a list of numbers, but got {shared_axes!r}"
            )
        self.alpha: Any = None

    def build(self, input_shape: Any) -> None:
        """Create ``alpha`` with the input's non-batch shape (size 1 along ``shared_axes``)."""
        shape = get_exactly_one_shape(input_shape)
        param_shape = list(shape[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis < len(shape):
                raise ValueError(f"{self.name}: shared axis {axis} is out of range for input shape {shape_str(shape)}")
            param_shape[axis - 1] = 1
        if any(d is None for d in param_shape):
            raise ValueError(
                f"{self.name}: the input shape must be known along the axes that are not shared, got "
                f"{shape_str(shape)} (shared_axes={self.shared_axes})"
            )
        if self.alpha is None:
            self.alpha = self.add_weight(
                "alpha", param_shape, "float32", self.alpha_initializer, self.alpha_regularizer, True,
                self.alpha_constraint,
            )  # fmt: skip
        axes = {i: shape[i] for i in range(1, len(shape))} if self.shared_axes is not None else {}
        self.input_spec = [InputSpec(ndim=len(shape), axes=axes)]
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``prelu(inputs, alpha)``."""
        return ops.prelu(get_exactly_one_tensor(inputs), self.alpha.read())

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {
            "alpha_initializer": serialize_initializer(self.alpha_initializer),
            "alpha_regularizer": serialize_regularizer(self.alpha_regularizer),
            "alpha_constraint": serialize_constraint(self.alpha_constraint),
            "shared_axes": None if self.shared_axes is None else list(self.shared_axes),
        }
        config.update(super().get_config())
        return config


@register_class
class ELU(Layer):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below (any ``alpha``; TF.js accepts only 1)."""

    def __init__(self, alpha: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if alpha is not None:
            _check_number(alpha, "alpha", "ELU")
        self.alpha = 1.0 if alpha is None else alpha

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``elu(inputs)`` scaled by ``alpha`` below zero."""
        x = get_exactly_one_tensor(inputs)
        if self.alpha == 1:
            return ops.elu(x)
        return ops.add(ops.relu(x), ops.mul(ops.elu(ops.minimum(x, 0)), self.alpha))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"alpha": self.alpha}
        config.update(super().get_config())
        return config


@register_class
class ThresholdedReLU(Layer):
    """``x`` where ``x > theta``, else 0 (``theta`` defaults to 1)."""

    def __init__(self, theta: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if theta is not None:
            _check_number(theta, "theta", "ThresholdedReLU")
        self.theta = 1.0 if theta is None else theta

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs * (inputs > theta)``."""
        x = get_exactly_one_tensor(inputs)
        return ops.mul(x, ops.cast(ops.greater(x, self.theta), "float32"))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"theta": self.theta}
        config.update(super().get_config())
        return config


@register_class
class Softmax(Layer):
    """Softmax along ``axis`` (TF.js's default: 1) or several axes; a ``mask`` argument hides entries."""

    def __init__(self, axis: int | Sequence[int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        valid_int = isinstance(axis, int) and not isinstance(axis, bool)
        valid_list = isinstance(axis, list | tuple) and all(
            isinstance(a, int) and not isinstance(a, bool) for a in axis
        )
        if axis is not None and not (valid_int or (valid_list and len(axis) > 0)):  # type: ignore[arg-type]
            raise ValueError(f"Softmax: axis must be an integer or a list of integers, but got {axis!r}")
        self.axis: int | list[int] = 1 if axis is None else (axis if valid_int else list(axis))  # type: ignore[arg-type]

    def call(self, inputs: Any, mask: Any = None, **kwargs: Any) -> Tensor:
        """The softmax of ``inputs``; where ``mask`` is False the input is lowered by 1e9 first."""
        x = get_exactly_one_tensor(inputs)
        if mask is not None:
            mask = get_exactly_one_tensor(mask)
            x = ops.add(x, ops.mul(ops.sub(ops.ones(x.shape), ops.cast(mask, x.dtype)), -1e9))
        if isinstance(self.axis, list):
            if len(self.axis) > 1:
                return ops.exp(ops.sub(x, ops.log_sum_exp(x, self.axis, True)))
            return ops.softmax(x, self.axis[0])
        return ops.softmax(x, self.axis)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"axis": list(self.axis) if isinstance(self.axis, list) else self.axis}
        config.update(super().get_config())
        return config


relu = layer_factory(ReLU, "relu", **FACTORY_DOCS["relu"])
leaky_relu = layer_factory(LeakyReLU, "leaky_relu", **FACTORY_DOCS["leaky_relu"])
prelu = layer_factory(PReLU, "prelu", **FACTORY_DOCS["prelu"])
elu = layer_factory(ELU, "elu", **FACTORY_DOCS["elu"])
thresholded_relu = layer_factory(ThresholdedReLU, "thresholded_relu", **FACTORY_DOCS["thresholded_relu"])
softmax = layer_factory(Softmax, "softmax", **FACTORY_DOCS["softmax"])


__all__ = [
    "ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax", "ThresholdedReLU", "elu", "leaky_relu", "prelu", "relu", "softmax",
    "thresholded_relu",
]  # fmt: skip
