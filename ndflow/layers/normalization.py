"""Normalization layers: ``BatchNormalization`` and ``LayerNormalization`` (TF.js's
``tf.layers.batchNormalization`` / ``layerNormalization``).

``BatchNormalization`` normalizes with the batch's statistics when called with
``training=True`` and moves ``moving_mean`` / ``moving_variance`` towards them
(``moving -= (moving - batch) * (1 - momentum)``, the biased batch variance, as TF.js); otherwise
it uses the moving statistics. Beyond TF.js: ``center=False`` / ``scale=False`` work in training
(TF.js fails), and inputs of any rank >= 2 are accepted (TF.js: 2 to 4).
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
from .utils import get_exactly_one_shape, get_exactly_one_tensor


def _check_axis(axis: Any, owner: str, allow_list: bool) -> Any:
    ok_int = isinstance(axis, int) and not isinstance(axis, bool)
    ok_list = isinstance(axis, list | tuple) and all(isinstance(a, int) and not isinstance(a, bool) for a in axis)
    if not ok_int and not (ok_list and (allow_list or len(axis) == 1)):
        what = "an integer or a list of integers" if allow_list else "an integer"
        raise ValueError(f"{owner}: expected axis to be {what}, got {axis!r}")
    return list(axis) if ok_list else axis


def _check_number(value: Any, default: float, name: str, owner: str) -> float:
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner}: expected {name} to be a number, got {value!r}")
    return value


def normalize(
    x: Tensor,
    mean: Tensor,
    variance: Tensor,
    beta: Tensor | None = None,
    gamma: Tensor | None = None,
    epsilon: float = 1e-3,
) -> Tensor:
    """``(x - mean) / sqrt(variance + epsilon) * gamma + beta`` (parameters broadcast to ``x``)."""
    return ops.batch_norm(x, mean, variance, beta, gamma, epsilon)


@register_class
class BatchNormalization(Layer):
    """Normalize each channel (``axis``) over the batch; learnable ``gamma`` (scale) and ``beta`` (center)."""

    def __init__(
        self,
        axis: int | None = None,
        momentum: float | None = None,
        epsilon: float | None = None,
        center: bool | None = None,
        scale: bool | None = None,
        beta_initializer: Any = None,
        gamma_initializer: Any = None,
        moving_mean_initializer: Any = None,
        moving_variance_initializer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        owner = "BatchNormalization"
        self.supports_masking = True
        self.axis = _check_axis(-1 if axis is None else axis, owner, allow_list=False)
        self.momentum = _check_number(momentum, 0.99, "momentum", owner)
        self.epsilon = _check_number(epsilon, 1e-3, "epsilon", owner)
        self.center = True if center is None else bool(center)
        self.scale = True if scale is None else bool(scale)
        self.beta_initializer = get_initializer(beta_initializer or "zeros")
        self.gamma_initializer = get_initializer(gamma_initializer or "ones")
        self.moving_mean_initializer = get_initializer(moving_mean_initializer or "zeros")
        self.moving_variance_initializer = get_initializer(moving_variance_initializer or "ones")
        self.beta_constraint = get_constraint(beta_constraint)
        self.gamma_constraint = get_constraint(gamma_constraint)
        self.beta_regularizer = get_regularizer(beta_regularizer)
        self.gamma_regularizer = get_regularizer(gamma_regularizer)
        self.gamma: Any = None
        self.beta: Any = None
        self.moving_mean: Any = None
        self.moving_variance: Any = None

    def _axis(self, ndim: int) -> int:
        axis = self.axis[0] if isinstance(self.axis, list) else self.axis
        if not -ndim <= axis < ndim:
            raise ValueError(f"{self.name}: axis {axis} is out of range for an input of rank {ndim}")
        return axis % ndim

    def build(self, input_shape: Any) -> None:
        """Create ``gamma``, ``beta``, ``moving_mean`` and ``moving_variance``, each ``[channels]``."""
        shape = get_exactly_one_shape(input_shape)
        axis = self._axis(len(shape))
        dim = shape[axis]
        if dim is None:
            raise ValueError(
                f"{self.name}: axis {axis} of the input should have a defined dimension, got input shape {list(shape)}"
            )
        self.input_spec = [InputSpec(ndim=len(shape), axes={axis: dim})]
        if self.scale:
            self.gamma = self.add_weight(
                "gamma", [dim], None, self.gamma_initializer, self.gamma_regularizer, True, self.gamma_constraint
            )
        if self.center:
            self.beta = self.add_weight(
                "beta", [dim], None, self.beta_initializer, self.beta_regularizer, True, self.beta_constraint
            )
        self.moving_mean = self.add_weight("moving_mean", [dim], None, self.moving_mean_initializer, None, False)
        self.moving_variance = self.add_weight(
            "moving_variance", [dim], None, self.moving_variance_initializer, None, False
        )
        self.built = True

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Tensor:
        """Normalized inputs: batch statistics when ``training`` (updating the moving ones), else moving ones."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)
        ndim = x.rank
        axis = self._axis(ndim)
        reduction_axes = [i for i in range(ndim) if i != axis]
        broadcast_shape = [1] * ndim
        broadcast_shape[axis] = x.shape[axis]

        def fit(t: Tensor | None) -> Tensor | None:
            """A per-channel vector reshaped to broadcast over ``x`` (already does when the axis is last)."""
            return t if t is None or axis == ndim - 1 else ops.reshape(t, broadcast_shape)

        gamma = self.gamma.read() if self.gamma is not None else None
        beta = self.beta.read() if self.beta is not None else None
        if not training:
            mean, variance = self.moving_mean.read(), self.moving_variance.read()
            return normalize(x, fit(mean), fit(variance), fit(beta), fit(gamma), self.epsilon)
        mean, variance = ops.moments(x, reduction_axes)
        normed = normalize(x, fit(mean), fit(variance), fit(beta), fit(gamma), self.epsilon)
        decay = 1 - self.momentum
        for weight, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
            current = weight.read()
            weight.write(ops.sub(current, ops.mul(ops.sub(current, value), decay)))
        return normed

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config = {
            "axis": self.axis,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": serialize_initializer(self.beta_initializer),
            "gamma_initializer": serialize_initializer(self.gamma_initializer),
            "moving_mean_initializer": serialize_initializer(self.moving_mean_initializer),
            "moving_variance_initializer": serialize_initializer(self.moving_variance_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": serialize_constraint(self.beta_constraint),
            "gamma_constraint": serialize_constraint(self.gamma_constraint),
        }
        config.update(super().get_config())
        return config


@register_class
class LayerNormalization(Layer):
    """Normalize each example over ``axis`` (default the last); learnable ``gamma`` and ``beta`` of that shape."""

    def __init__(
        self,
        axis: int | Sequence[int] | None = None,
        epsilon: float | None = None,
        center: bool | None = None,
        scale: bool | None = None,
        beta_initializer: Any = None,
        gamma_initializer: Any = None,
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        owner = "LayerNormalization"
        self.axis: Any = _check_axis(-1 if axis is None else axis, owner, allow_list=True)
        self.epsilon = _check_number(epsilon, 1e-3, "epsilon", owner)
        self.center = True if center is None else bool(center)
        self.scale = True if scale is None else bool(scale)
        self.beta_initializer = get_initializer(beta_initializer or "zeros")
        self.gamma_initializer = get_initializer(gamma_initializer or "ones")
        self.beta_regularizer = get_regularizer(beta_regularizer)
        self.gamma_regularizer = get_regularizer(gamma_regularizer)
        self.supports_masking = True
        self.gamma: Any = None
        self.beta: Any = None

    def build(self, input_shape: Any) -> None:
        """Resolve ``axis`` to a list of non-negative axes (as TF.js does); create ``gamma`` and ``beta``."""
        shape = get_exactly_one_shape(input_shape)
        ndim = len(shape)
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        axes = [a + ndim if a < 0 else a for a in axes]
        for a in axes:
            if not 0 <= a < ndim:
                raise ValueError(f"{self.name}: invalid axis {a} for an input of rank {ndim}")
        if len(set(axes)) != len(axes):
            raise ValueError(f"{self.name}: found duplicate axes in {axes}")
        self.axis = axes
        param_shape = [shape[a] for a in axes]
        if self.scale:
            self.gamma = self.add_weight(
                "gamma", param_shape, "float32", self.gamma_initializer, self.gamma_regularizer
            )
        if self.center:
            self.beta = self.add_weight("beta", param_shape, "float32", self.beta_initializer, self.beta_regularizer)
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """Inputs normalized over ``axis``, scaled by ``gamma`` and shifted by ``beta``."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        ndim = x.rank
        mean, variance = ops.moments(x, self.axis, True)
        broadcast_shape = [x.shape[i] if i in self.axis else 1 for i in range(ndim)]

        def fit(t: Tensor | None) -> Tensor | None:
            return t if t is None or t.rank == ndim else ops.reshape(t, broadcast_shape)

        gamma = self.gamma.read() if self.gamma is not None else None
        beta = self.beta.read() if self.beta is not None else None
        return normalize(x, mean, variance, fit(beta), fit(gamma), self.epsilon)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config (``axis`` is a list once built, as in TF.js)."""
        config = {
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": serialize_initializer(self.beta_initializer),
            "gamma_initializer": serialize_initializer(self.gamma_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
        }
        config.update(super().get_config())
        return config


batch_normalization = layer_factory(BatchNormalization, "batch_normalization", **FACTORY_DOCS["batch_normalization"])
layer_normalization = layer_factory(LayerNormalization, "layer_normalization", **FACTORY_DOCS["layer_normalization"])


__all__ = [
    "BatchNormalization", "LayerNormalization", "batch_normalization", "layer_normalization",
]  # fmt: skip
