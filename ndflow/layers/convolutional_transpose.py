"""Transposed convolutions: ``Conv2DTranspose`` and ``Conv3DTranspose`` (TF.js's
``tf.layers.conv2dTranspose`` / ``conv3dTranspose``).

The kernel is ``[*kernel_size, filters, in_channels]``; output lengths follow ``deconv_length``.
As in TF.js, the config has no ``dilation_rate``; ndflow refuses a dilation other than 1 (TF.js
silently ignores it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .backend import bias_add, is_channels_first
from .convolutional import Conv, deconv_length, to_channels_first, to_channels_last
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor


class ConvTranspose(Conv):
    """Shared by ``Conv2DTranspose`` and ``Conv3DTranspose``."""

    def __init__(self, filters: int | None = None, kernel_size: int | Sequence[int] | None = None, **kwargs: Any):
        super().__init__(filters, kernel_size, **kwargs)
        self.input_spec = [InputSpec(ndim=self.rank + 2)]
        if any(d != 1 for d in self.dilation_rate):
            raise ValueError(
                f"{self.get_class_name()}: dilation_rate must be 1 for a transposed convolution, "
                f"got {self.dilation_rate}"
            )

    def build(self, input_shape: Any) -> None:
        """Create ``kernel`` ``[*kernel_size, filters, in_channels]`` and ``bias`` ``[filters]``."""
        _, axis, channels = self.input_channels(input_shape)
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, self.filters, channels], "float32", self.kernel_initializer,
            self.kernel_regularizer, True, self.kernel_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [self.filters], "float32", self.bias_initializer, self.bias_regularizer, True,
                self.bias_constraint,
            )  # fmt: skip
        self.input_spec = [InputSpec(ndim=self.rank + 2, axes={axis: channels})]
        self.built = True

    def _out_space(self, space: Sequence[Any]) -> list[Any]:
        return [
            deconv_length(d, s, k, self.padding) for d, s, k in zip(space, self.strides, self.kernel_size, strict=True)
        ]

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The transposed convolution of ``inputs`` plus bias, through the activation."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        if x.rank != self.rank + 2:
            raise ValueError(f"{self.name}: expects a rank-{self.rank + 2} input, got rank {x.rank}")
        x = to_channels_last(x, self.data_format)
        output_shape = [x.shape[0], *self._out_space(x.shape[1:-1]), self.filters]
        transpose = ops.conv2d_transpose if self.rank == 2 else ops.conv3d_transpose
        y = to_channels_first(
            transpose(x, self.kernel.read(), output_shape, self.strides, self.padding), self.data_format
        )
        if self.bias is not None:
            y = bias_add(y, self.bias.read(), self.data_format)
        return self.activation.apply(y)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, *deconv lengths, filters]`` (channels first: ``[batch, filters, ...]``)."""
        shape = get_exactly_one_shape(input_shape)
        space = shape[2:] if is_channels_first(self.data_format) else shape[1:-1]
        return self.with_channels(shape, self._out_space(space), self.filters)

    def get_config(self) -> dict[str, Any]:
        """As ``Conv``, without ``dilation_rate``."""
        config = super().get_config()
        del config["dilation_rate"]
        return config


@register_class
class Conv2DTranspose(ConvTranspose):
    """Transposed 2-D convolution ("deconvolution") over images."""

    rank = 2


@register_class
class Conv3DTranspose(ConvTranspose):
    """Transposed 3-D convolution over volumes."""

    rank = 3


conv2d_transpose = layer_factory(Conv2DTranspose, "conv2d_transpose", **FACTORY_DOCS["conv2d_transpose"])
conv3d_transpose = layer_factory(Conv3DTranspose, "conv3d_transpose", **FACTORY_DOCS["conv3d_transpose"])


__all__ = ["Conv2DTranspose", "Conv3DTranspose", "conv2d_transpose", "conv3d_transpose"]
