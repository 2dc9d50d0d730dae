"""Pooling layers: ``MaxPooling1D/2D/3D``, ``AveragePooling1D/2D/3D``, ``GlobalMaxPooling1D/2D``,
``GlobalAveragePooling1D/2D``, as TF.js's ``tf.layers.maxPooling2d(...)``, ...

Configs are written as TF.js writes them. ``padding`` is ``'valid'`` or ``'same'`` (TF.js also
accepts ``'causal'`` and pools as ``'valid'``; ndflow refuses it). Global pooling layers accept
Keras's ``keepdims`` (written to the config only when true, since TF.js does not know it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .backend import image_data_format, is_channels_first
from .convolutional import (
    check_data_format,
    check_padding,
    conv_output_length,
    normalize_array,
    to_channels_first,
    to_channels_last,
)
from .engine.base import Layer
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor


def pool2d(
    x: Tensor,
    pool_size: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str = "valid",
    data_format: str | None = None,
    pool_mode: str = "max",
) -> Tensor:
    """2-D max or average pooling of a rank-4 ``x``."""
    data_format = data_format or image_data_format()
    y = to_channels_last(x, data_format)
    fn = ops.max_pool if pool_mode == "max" else ops.avg_pool
    y = fn(y, list(pool_size), list(strides or (1, 1)), padding)
    return to_channels_first(y, data_format)


def pool3d(
    x: Tensor,
    pool_size: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str = "valid",
    data_format: str | None = None,
    pool_mode: str = "max",
) -> Tensor:
    """3-D max or average pooling of a rank-5 ``x``."""
    data_format = data_format or image_data_format()
    y = to_channels_last(x, data_format)
    fn = ops.max_pool3d if pool_mode == "max" else ops.avg_pool3d
    y = fn(y, list(pool_size), list(strides or (1, 1, 1)), padding)
    return to_channels_first(y, data_format)


class Pooling(Layer):
    """N-D pooling windows of ``pool_size`` moved by ``strides`` (default: ``pool_size``)."""

    rank = 2
    pool_mode = "max"

    def __init__(
        self,
        pool_size: int | Sequence[int] | None = None,
        strides: int | Sequence[int] | None = None,
        padding: str | None = None,
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        owner = self.get_class_name()
        self.pool_size = normalize_array(2 if pool_size is None else pool_size, self.rank, "pool_size", owner)
        self.strides = (
            list(self.pool_size) if strides is None else normalize_array(strides, self.rank, "strides", owner)
        )
        self.padding = check_padding(padding, owner)
        self.data_format = check_data_format(data_format, owner)
        self.input_spec = [InputSpec(ndim=self.rank + 2)]

    def _spatial_axes(self, ndim: int) -> list[int]:
        return list(range(2, ndim)) if is_channels_first(self.data_format) else list(range(1, ndim - 1))

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with each spatial axis pooled."""
        shape = list(get_exactly_one_shape(input_shape))
        for i, axis in enumerate(self._spatial_axes(len(shape))):
            shape[axis] = conv_output_length(shape[axis], self.pool_size[i], self.padding, self.strides[i])
        return tuple(shape)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The pooled inputs."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        if self.rank == 1:
            x = ops.expand_dims(to_channels_last(x, self.data_format), 2)
            y = pool2d(x, [self.pool_size[0], 1], [self.strides[0], 1], self.padding, "channels_last", self.pool_mode)
            return to_channels_first(ops.squeeze(y, [2]), self.data_format)
        pool = pool2d if self.rank == 2 else pool3d
        return pool(x, self.pool_size, self.strides, self.padding, self.data_format, self.pool_mode)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {
            "pool_size": list(self.pool_size), "padding": self.padding, "strides": list(self.strides)
        }  # fmt: skip
        if self.rank > 1 or is_channels_first(self.data_format):
            config["data_format"] = self.data_format
        config.update(super().get_config())
        return config


class Pooling1D(Pooling):
    """1-D pooling over ``[batch, steps, channels]`` (TF.js has no ``data_format`` here; Keras's is accepted)."""

    rank = 1

    def __init__(
        self,
        pool_size: int | Sequence[int] | None = None,
        strides: int | Sequence[int] | None = None,
        padding: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, **kwargs)


@register_class
class MaxPooling1D(Pooling1D):
    """Max over windows of ``pool_size`` steps."""


@register_class
class AveragePooling1D(Pooling1D):
    """Average over windows of ``pool_size`` steps."""

    pool_mode = "avg"


@register_class
class MaxPooling2D(Pooling):
    """Max over ``pool_size`` windows of images."""


@register_class
class AveragePooling2D(Pooling):
    """Average over ``pool_size`` windows of images."""

    pool_mode = "avg"


@register_class
class MaxPooling3D(Pooling):
    """Max over ``pool_size`` windows of volumes."""

    rank = 3


@register_class
class AveragePooling3D(Pooling):
    """Average over ``pool_size`` windows of volumes."""

    rank = 3
    pool_mode = "avg"


class GlobalPooling(Layer):
    """Max or mean over every spatial (or temporal) axis."""

    rank = 2
    pool_mode = "max"

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(data_format, self.get_class_name())
        self.keepdims = bool(keepdims)
        self.input_spec = [InputSpec(ndim=self.rank + 2)]

    def _spatial_axes(self) -> list[int]:
        if is_channels_first(self.data_format):
            return list(range(2, self.rank + 2))
        return list(range(1, self.rank + 1))

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, channels]`` (with ones for the pooled axes when ``keepdims``)."""
        shape = get_exactly_one_shape(input_shape)
        axes = self._spatial_axes()
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The pooled inputs."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        fn = ops.max if self.pool_mode == "max" else ops.mean
        return fn(x, self._spatial_axes(), self.keepdims)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {}
        if self.rank > 1 or is_channels_first(self.data_format):
            config["data_format"] = self.data_format
        if self.keepdims:
            config["keepdims"] = True
        config.update(super().get_config())
        return config


class GlobalPooling1D(GlobalPooling):
    """Global pooling over the steps of ``[batch, steps, channels]``."""

    rank = 1

    def __init__(self, keepdims: bool = False, **kwargs: Any) -> None:
        super().__init__(keepdims=keepdims, **kwargs)


@register_class
class GlobalMaxPooling1D(GlobalPooling1D):
    """Max over the steps."""


@register_class
class GlobalAveragePooling1D(GlobalPooling1D):
    """Mean over the steps."""

    pool_mode = "avg"


@register_class
class GlobalMaxPooling2D(GlobalPooling):
    """Max over rows and columns."""


@register_class
class GlobalAveragePooling2D(GlobalPooling):
    """Mean over rows and columns."""

    pool_mode = "avg"


max_pooling1d = layer_factory(MaxPooling1D, "max_pooling1d", **FACTORY_DOCS["max_pooling1d"])
average_pooling1d = layer_factory(AveragePooling1D, "average_pooling1d", **FACTORY_DOCS["average_pooling1d"])
max_pooling2d = layer_factory(MaxPooling2D, "max_pooling2d", **FACTORY_DOCS["max_pooling2d"])
average_pooling2d = layer_factory(AveragePooling2D, "average_pooling2d", **FACTORY_DOCS["average_pooling2d"])
max_pooling3d = layer_factory(MaxPooling3D, "max_pooling3d", **FACTORY_DOCS["max_pooling3d"])
average_pooling3d = layer_factory(AveragePooling3D, "average_pooling3d", **FACTORY_DOCS["average_pooling3d"])
global_max_pooling1d = layer_factory(GlobalMaxPooling1D, "global_max_pooling1d", **FACTORY_DOCS["global_max_pooling1d"])
global_average_pooling1d = layer_factory(
    GlobalAveragePooling1D, "global_average_pooling1d", **FACTORY_DOCS["global_average_pooling1d"]
)
global_max_pooling2d = layer_factory(GlobalMaxPooling2D, "global_max_pooling2d", **FACTORY_DOCS["global_max_pooling2d"])
global_average_pooling2d = layer_factory(
    GlobalAveragePooling2D, "global_average_pooling2d", **FACTORY_DOCS["global_average_pooling2d"]
)


__all__ = [
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "average_pooling1d",
    "average_pooling2d", "average_pooling3d", "global_average_pooling1d", "global_average_pooling2d",
    "global_max_pooling1d", "global_max_pooling2d", "max_pooling1d", "max_pooling2d", "max_pooling3d",
]  # fmt: skip
