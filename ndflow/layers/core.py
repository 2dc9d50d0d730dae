"""Core layers: ``Dense``, ``Activation``, ``Flatten``, ``Reshape``, ``Dropout``.

Factories ``nf.layers.dense(units=4, input_shape=[3])``, ... mirror ``tf.layers.*``; every class
is registered under its Keras class name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .activations import get_activation, serialize_activation
from .backend import batch_flatten, dot, in_train_phase, is_channels_first, map_activation_to_fused_kernel
from .constraints import get_constraint, serialize_constraint
from .engine.base import Layer
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import get_initializer, serialize_initializer
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import register_class
from .utils import check_string_arg, get_exactly_one_shape, get_exactly_one_tensor


@register_class
class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` over the last axis of the input."""

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        input_dim: int | None = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if self.batch_input_shape is None and input_dim is not None:
            self.batch_input_shape = (kwargs.get("batch_size"), input_dim)
            self.dtype = kwargs.get("dtype") or kwargs.get("input_dtype") or "float32"
        if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
            raise ValueError(f"Dense: expected units to be a positive integer, but got {units!r}")
        self.units = units
        self.activation = get_activation(activation)
        self.use_bias = True if use_bias is None else bool(use_bias)
        self.kernel_initializer = get_initializer(kernel_initializer or "glorotNormal")
        self.bias_initializer = get_initializer(bias_initializer or "zeros")
        self.kernel_constraint = get_constraint(kernel_constraint)
        self.bias_constraint = get_constraint(bias_constraint)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.activity_regularizer = get_regularizer(activity_regularizer)
        self.supports_masking = True
        self.kernel = None
        self.bias = None
        self.input_spec = [InputSpec(min_ndim=2)]

    def build(self, input_shape: Any) -> None:
        """Create ``kernel`` ``[input_dim, units]`` and ``bias`` ``[units]``."""
        input_shape = get_exactly_one_shape(input_shape)
        input_last_dim = input_shape[-1]
        if input_last_dim is None:
            raise ValueError(f"{self.name}: the last dimension of the input must be known, got {list(input_shape)}")
        if self.kernel is None:
            self.kernel = self.add_weight(
                "kernel", [input_last_dim, self.units], None, self.kernel_initializer, self.kernel_regularizer,
                True, self.kernel_constraint,
            )  # fmt: skip
            if self.use_bias:
                self.bias = self.add_weight(
                    "bias", [self.units], None, self.bias_initializer, self.bias_regularizer, True, self.bias_constraint
                )
        self.input_spec = [InputSpec(min_ndim=2, axes={-1: input_last_dim})]
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with the last axis replaced by ``units``."""
        shape = list(get_exactly_one_shape(input_shape))
        shape[-1] = self.units
        return tuple(shape)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The dense transformation of ``inputs``."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        bias = self.bias.read() if self.bias is not None else None
        fused_activation = map_activation_to_fused_kernel(self.activation.get_class_name())
        if fused_activation is not None:
            return dot(x, self.kernel.read(), fused_activation, bias)
        # The bias goes into the fused product even when the activation cannot (softmax...): the same
        # sums as a separate bias_add (TF.js's way), one kernel fewer forward and backward.
        return self.activation.apply(dot(x, self.kernel.read(), None, bias))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config = {
            "units": self.units,
            "activation": serialize_activation(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": serialize_initializer(self.kernel_initializer),
            "bias_initializer": serialize_initializer(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "activity_regularizer": serialize_regularizer(self.activity_regularizer),
            "kernel_constraint": serialize_constraint(self.kernel_constraint),
            "bias_constraint": serialize_constraint(self.bias_constraint),
        }
        config.update(super().get_config())
        return config


@register_class
class Activation(Layer):
    """Apply an activation function (``'relu'``, ``'softmax'``, ...) element-wise."""

    def __init__(self, activation: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = get_activation(activation)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The activation of ``inputs``."""
        self.invoke_call_hook(inputs, kwargs)
        return self.activation.apply(get_exactly_one_tensor(inputs))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config = {"activation": serialize_activation(self.activation)}
        config.update(super().get_config())
        return config


@register_class
class Flatten(Layer):
    """Flatten every axis but the batch axis (``[b, h, w, c]`` -> ``[b, h*w*c]``)."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_spec = [InputSpec(min_ndim=3)]
        self.data_format = check_string_arg(data_format, ("channelsFirst", "channelsLast"), "data_format", "Flatten")

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, product of the other axes]``."""
        shape = get_exactly_one_shape(input_shape)
        if any(d is None for d in shape[1:]):
            raise ValueError(
                f'The shape of the input to "Flatten" is not fully defined (got {list(shape[1:])}). Make sure to '
                'pass a complete "input_shape" or "batch_input_shape" argument to the first layer in your model.'
            )
        return (shape[0], math.prod(shape[1:]))

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs`` reshaped to rank 2 (channels moved last first for channels_first)."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        if is_channels_first(self.data_format) and x.rank > 1:
            x = ops.transpose(x, [0, *range(2, x.rank), 1])
        return batch_flatten(x)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {}
        if self.data_format is not None:
            config["data_format"] = self.data_format
        config.update(super().get_config())
        return config


@register_class
class Reshape(Layer):
    """Reshape each example to ``target_shape`` (one axis may be -1 or None: inferred)."""

    def __init__(self, target_shape: Sequence[int | None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if target_shape is None or not isinstance(target_shape, list | tuple):
            raise ValueError(f"Reshape: target_shape must be a list of integers, got {target_shape!r}")
        self.target_shape = [None if self._is_unknown(d) else int(d) for d in target_shape]

    @staticmethod
    def _is_unknown(dim: int | None) -> bool:
        return dim is None or dim < 0

    def _fix_unknown_dimension(self, input_shape: Sequence[int], output_shape: Sequence[int | None]) -> list[int]:
        final = list(output_shape)
        known, unknown = 1, None
        for i, dim in enumerate(final):
            if self._is_unknown(dim):
                if unknown is not None:
                    raise ValueError(f"{self.name}: can only specify one unknown dimension, got {list(output_shape)}")
                unknown = i
            else:
                known *= dim
        original = math.prod(input_shape)
        error = (
            f"{self.name}: total size of new array must be unchanged (input shape {list(input_shape)}, "
            f"target shape {list(output_shape)})"
        )
        if unknown is not None:
            if known == 0 or original % known != 0:
                raise ValueError(error)
            final[unknown] = original // known
        elif original != known:
            raise ValueError(error)
        return final

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, *target_shape]`` (the unknown axis inferred when the input shape is known)."""
        shape = get_exactly_one_shape(input_shape)
        if any(self._is_unknown(d) for d in shape):
            return (shape[0], *self.target_shape)
        return (shape[0], *self._fix_unknown_dimension(shape[1:], self.target_shape))

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs`` reshaped."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        return ops.reshape(x, [x.shape[0], *self._fix_unknown_dimension(x.shape[1:], self.target_shape)])

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"target_shape": list(self.target_shape)}
        config.update(super().get_config())
        return config


@register_class
class Dropout(Layer):
    """Zero a fraction ``rate`` of the inputs (scaling the rest by 1 / (1 - rate)) when ``training``."""

    def __init__(
        self, rate: float, noise_shape: Sequence[int | None] | None = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise ValueError(f"Dropout: rate must be a number, got {rate!r}")
        self.rate = max(min(rate, 1), 0)
        self.noise_shape = list(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self.supports_masking = True

    def get_noise_shape(self, x: Tensor) -> list[int] | None:
        """The noise shape, with None entries taken from ``x``."""
        if self.noise_shape is None:
            return None
        return [x.shape[i] if d is None else d for i, d in enumerate(self.noise_shape)]

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Any:
        """Dropout when ``training``, else the inputs unchanged."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)
        if 0 < self.rate < 1:
            noise_shape = self.get_noise_shape(x)
            return in_train_phase(lambda: ops.dropout(x, self.rate, noise_shape, self.seed), lambda: x, bool(training))
        return inputs

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config = {"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}
        config.update(super().get_config())
        return config


dense = layer_factory(Dense, "dense", **FACTORY_DOCS["dense"])
activation = layer_factory(Activation, "activation", **FACTORY_DOCS["activation"])
flatten = layer_factory(Flatten, "flatten", **FACTORY_DOCS["flatten"])
reshape = layer_factory(Reshape, "reshape", **FACTORY_DOCS["reshape"])
dropout = layer_factory(Dropout, "dropout", **FACTORY_DOCS["dropout"])


__all__ = [
    "Activation",
    "Dense",
    "Dropout",
    "Flatten",
    "Reshape",
    "activation",
    "dense",
    "dropout",
    "flatten",
    "reshape",
]
