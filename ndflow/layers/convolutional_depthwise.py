"""Depthwise and separable convolutions: ``DepthwiseConv2D`` and ``SeparableConv2D`` (TF.js's
``tf.layers.depthwiseConv2d`` / ``separableConv2d``).

Configs are written as TF.js writes them, with these corrections of TF.js bugs:

- ``DepthwiseConv2D`` honours ``dilation_rate`` (TF.js stores it but convolves undilated) and
  writes its real ``depthwise_constraint`` (TF.js writes the regularizer there; such a config
  still loads: a regularizer found under ``depthwise_constraint`` is ignored with a warning).
- ``SeparableConv2D`` honours ``pointwise_initializer`` (TF.js uses the depthwise one), adds its
  bias along the channels for ``channels_first`` (TF.js adds it along the rows), and writes
  ``depth_multiplier`` when it is not 1 (TF.js drops it, so its models do not reload).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .backend import bias_add, is_channels_first
from .constraints import get_constraint, serialize_constraint
from .convolutional import (
    BaseConv,
    Conv,
    check_positive_int,
    to_channels_first,
    to_channels_last,
)
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import get_initializer, serialize_initializer
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor

logger = logging.getLogger("ndflow")
_REGULARIZER_CLASSES = ("L1L2", "l1l2", "l1", "l2")


@register_class
class DepthwiseConv2D(BaseConv):
    """Convolve each input channel with its own ``depth_multiplier`` filters (no mixing of channels)."""

    rank = 2

    def __init__(
        self,
        kernel_size: int | Sequence[int] | None = None,
        depth_multiplier: int | None = None,
        depthwise_initializer: Any = None,
        depthwise_constraint: Any = None,
        depthwise_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(kernel_size=kernel_size, **kwargs)
        owner = self.get_class_name()
        self.depth_multiplier = check_positive_int(
            1 if depth_multiplier is None else depth_multiplier, "depth_multiplier", owner
        )
        self.depthwise_initializer = get_initializer(depthwise_initializer or self.default_kernel_initializer)
        if isinstance(depthwise_constraint, dict) and depthwise_constraint.get("class_name") in _REGULARIZER_CLASSES:
            logger.warning(
                "%s: ignoring a regularizer written as depthwise_constraint (a TF.js serialization bug)", owner
            )
            depthwise_constraint = None
        self.depthwise_constraint = get_constraint(depthwise_constraint)
        self.depthwise_regularizer = get_regularizer(depthwise_regularizer)
        self.depthwise_kernel: Any = None

    def build(self, input_shape: Any) -> None:
        """Create ``depthwise_kernel`` ``[kh, kw, in_channels, depth_multiplier]`` and ``bias``."""
        _, axis, channels = self.input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", [*self.kernel_size, channels, self.depth_multiplier], None,
            self.depthwise_initializer, self.depthwise_regularizer, True, self.depthwise_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [channels * self.depth_multiplier], None, self.bias_initializer, self.bias_regularizer,
                True, self.bias_constraint,
            )  # fmt: skip
        self.input_spec = [InputSpec(ndim=4, axes={axis: channels})]
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The depthwise convolution of ``inputs`` plus bias, through the activation."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        if x.rank != 4:
            raise ValueError(f"{self.name}: the input of DepthwiseConv2D must be rank 4, got rank {x.rank}")
        y = ops.depthwise_conv2d(
            to_channels_last(x, self.data_format), self.depthwise_kernel.read(), self.strides, self.padding, "NHWC",
            self.dilation_rate,
        )  # fmt: skip
        y = to_channels_first(y, self.data_format)
        if self.bias is not None:
            y = bias_add(y, self.bias.read(), self.data_format)
        return self.activation.apply(y)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, rows', cols', in_channels * depth_multiplier]`` (or channels-first)."""
        shape = get_exactly_one_shape(input_shape)
        channels = shape[1] if is_channels_first(self.data_format) else shape[3]
        out_channels = None if channels is None else channels * self.depth_multiplier
        return self.with_channels(shape, self.spatial_output_shape(shape), out_channels)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config, keys in TF.js's order."""
        config = super().get_config()
        config["depth_multiplier"] = self.depth_multiplier
        config["depthwise_initializer"] = serialize_initializer(self.depthwise_initializer)
        config["depthwise_regularizer"] = serialize_regularizer(self.depthwise_regularizer)
        config["depthwise_constraint"] = serialize_constraint(self.depthwise_constraint)
        return config


class SeparableConv(Conv):
    """A depthwise convolution followed by a pointwise (1x1) one mixing the channels into ``filters``."""

    default_kernel_initializer = "glorotUniform"

    def __init__(
        self,
        filters: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        depth_multiplier: int | None = None,
        depthwise_initializer: Any = None,
        depthwise_regularizer: Any = None,
        depthwise_constraint: Any = None,
        pointwise_initializer: Any = None,
        pointwise_regularizer: Any = None,
        pointwise_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        owner = type(self).class_name
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            if kwargs.get(key) is not None:
                raise ValueError(
                    f"{owner}: {key} is not valid for a separable convolution; use depthwise_* and pointwise_* "
                    "initializers, regularizers and constraints"
                )
        super().__init__(filters, kernel_size, **kwargs)
        self.depth_multiplier = check_positive_int(
            1 if depth_multiplier is None else depth_multiplier, "depth_multiplier", owner
        )
        self.depthwise_initializer = get_initializer(depthwise_initializer or "glorotUniform")
        self.depthwise_regularizer = get_regularizer(depthwise_regularizer)
        self.depthwise_constraint = get_constraint(depthwise_constraint)
        self.pointwise_initializer = get_initializer(pointwise_initializer or "glorotUniform")
        self.pointwise_regularizer = get_regularizer(pointwise_regularizer)
        self.pointwise_constraint = get_constraint(pointwise_constraint)
        self.depthwise_kernel: Any = None
        self.pointwise_kernel: Any = None

    def build(self, input_shape: Any) -> None:
        """Create ``depthwise_kernel``, ``pointwise_kernel`` ``[1, 1, in * depth_multiplier, filters]`` and ``bias``."""
        _, axis, channels = self.input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", [*self.kernel_size, channels, self.depth_multiplier], "float32",
            self.depthwise_initializer, self.depthwise_regularizer, True, self.depthwise_constraint,
        )  # fmt: skip
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1] * self.rank + [channels * self.depth_multiplier, self.filters], "float32",
            self.pointwise_initializer, self.pointwise_regularizer, True, self.pointwise_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [self.filters], "float32", self.bias_initializer, self.bias_regularizer, True,
                self.bias_constraint,
            )  # fmt: skip
        self.input_spec = [InputSpec(ndim=self.rank + 2, axes={axis: channels})]
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The separable convolution of ``inputs`` plus bias, through the activation."""
        self.invoke_call_hook(inputs, kwargs)
        x = to_channels_last(get_exactly_one_tensor(inputs), self.data_format)
        y = ops.separable_conv2d(
            x, self.depthwise_kernel.read(), self.pointwise_kernel.read(), self.strides, self.padding,
            self.dilation_rate, "NHWC",
        )  # fmt: skip
        if self.bias is not None:
            y = bias_add(y, self.bias.read(), "channels_last")
        return to_channels_first(self.activation.apply(y), self.data_format)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config, keys in TF.js's order."""
        config = super().get_config()
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            del config[key]
        config["depthwise_initializer"] = serialize_initializer(self.depthwise_initializer)
        config["pointwise_initializer"] = serialize_initializer(self.pointwise_initializer)
        config["depthwise_regularizer"] = serialize_regularizer(self.depthwise_regularizer)
        config["pointwise_regularizer"] = serialize_regularizer(self.pointwise_regularizer)
        config["depthwise_constraint"] = serialize_constraint(self.depthwise_constraint)
        config["pointwise_constraint"] = serialize_constraint(self.pointwise_constraint)
        if self.depth_multiplier != 1:
            config["depth_multiplier"] = self.depth_multiplier
        return config


@register_class
class SeparableConv2D(SeparableConv):
    """Depthwise-separable 2-D convolution."""

    rank = 2


depthwise_conv2d = layer_factory(DepthwiseConv2D, "depthwise_conv2d", **FACTORY_DOCS["depthwise_conv2d"])
separable_conv2d = layer_factory(SeparableConv2D, "separable_conv2d", **FACTORY_DOCS["separable_conv2d"])


__all__ = ["DepthwiseConv2D", "SeparableConv2D", "depthwise_conv2d", "separable_conv2d"]
