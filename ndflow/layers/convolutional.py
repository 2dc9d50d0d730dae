"""Convolution layers: ``Conv1D``, ``Conv2D``, ``Conv3D``, and the shape layers ``Cropping2D``,
``UpSampling2D``, ``ZeroPadding2D``, as TF.js's ``tf.layers.conv2d(...)``, ...

Transposed convolutions live in ``convolutional_transpose``, depthwise and separable ones in
``convolutional_depthwise``. Configs are written as TF.js's ``model.toJSON()`` writes them
(same keys, same order), so models move both ways.

Beyond TF.js: ``Conv1D`` implements ``padding='causal'`` (TF.js accepts it, then fails when
called) and honours ``data_format='channels_first'`` (TF.js returns channels-last outputs and
drops the key from its config; ndflow writes it when it is not the default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from ..ops import fused
from .activations import get_activation, serialize_activation
from .backend import bias_add, image_data_format, is_channels_first, map_activation_to_fused_kernel
from .constraints import get_constraint, serialize_constraint
from .engine.base import Layer
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import get_initializer, serialize_initializer
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import register_class
from .utils import check_string_arg, get_exactly_one_shape, get_exactly_one_tensor

DATA_FORMATS = ("channelsFirst", "channelsLast")


# -- argument helpers (TF.js's conv_utils) ----------------------------------------------------------
def normalize_array(value: Any, n: int, name: str, owner: str) -> list[int]:
    """``value`` (an int or ``n`` ints) as a list of ``n`` positive ints; errors name ``owner`` and ``name``."""
    values = [value] * n if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, list | tuple) or len(values) != n:
        raise ValueError(f"{owner}: the {name} argument must be an integer or a list of {n} integers, got {value!r}")
    out = []
    for v in values:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{owner}: the {name} argument must hold positive integers, got {value!r}")
        out.append(v)
    return out


def conv_output_length(length: int | None, filter_size: int, padding: str, stride: int, dilation: int = 1) -> Any:
    """The output length of a convolution or pooling window along one axis (None stays None)."""
    if length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    out = length if padding in ("same", "causal") else length - dilated + 1
    return (out + stride - 1) // stride


def deconv_length(length: int | None, stride: int, kernel_size: int, padding: str) -> Any:
    """The output length of a transposed convolution along one axis (None stays None)."""
    if length is None:
        return None
    if padding == "valid":
        return length * stride + max(kernel_size - stride, 0)
    if padding == "same":
        return length * stride
    raise ValueError(f"Unsupported padding mode: {padding}")


def check_data_format(value: Any, owner: str, default: str = "channelsLast") -> str:
    """``data_format`` in snake_case (``'channels_last'``), its default when None."""
    return check_string_arg(default if value is None else value, DATA_FORMATS, "data_format", owner)  # type: ignore[return-value]


def check_padding(value: Any, owner: str, allowed: Sequence[str] = ("valid", "same")) -> str:
    """``padding`` (default ``'valid'``), one of ``allowed``."""
    return check_string_arg("valid" if value is None else value, allowed, "padding", owner)  # type: ignore[return-value]


def check_positive_int(value: Any, name: str, owner: str) -> int:
    """``value`` as a positive int, else a ``ValueError`` naming ``owner`` and ``name``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: expected {name} to be a positive integer, got {value!r}")
    return value


def to_channels_last(x: Tensor, data_format: str) -> Tensor:
    """``x`` with channels moved last when ``data_format`` is channels-first (NCHW -> NHWC)."""
    if not is_channels_first(data_format):
        return x
    return ops.transpose(x, [0, *range(2, x.rank), 1])


def to_channels_first(y: Tensor, data_format: str) -> Tensor:
    """``y`` (channels last) back to channels-first when ``data_format`` asks for it (NHWC -> NCHW)."""
    if not is_channels_first(data_format):
        return y
    return ops.transpose(y, [0, y.rank - 1, *range(1, y.rank - 1)])


# -- the convolution layers -------------------------------------------------------------------------
class BaseConv(Layer):
    """What every convolution shares: kernel size, strides, padding, data format, dilation, bias, activation."""

    rank = 2
    default_kernel_initializer = "glorotNormal"
    paddings: tuple[str, ...] = ("valid", "same")

    def __init__(
        self,
        kernel_size: int | Sequence[int] | None = None,
        strides: int | Sequence[int] | None = None,
        padding: str | None = None,
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] | None = None,
        activation: Any = None,
        use_bias: bool | None = True,
        bias_initializer: Any = None,
        bias_constraint: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        owner = self.get_class_name()
        if kernel_size is None:
            raise ValueError(f"{owner}: the kernel_size argument is required")
        self.kernel_size = normalize_array(kernel_size, self.rank, "kernel_size", owner)
        self.strides = normalize_array(1 if strides is None else strides, self.rank, "strides", owner)
        self.padding = check_padding(padding, owner, self.paddings)
        self.data_format = check_data_format(data_format, owner)
        self.dilation_rate = normalize_array(
            1 if dilation_rate is None else dilation_rate, self.rank, "dilation_rate", owner
        )
        self.activation = get_activation(activation)
        self.use_bias = True if use_bias is None else bool(use_bias)
        self.bias_initializer = get_initializer(bias_initializer or "zeros")
        self.bias_constraint = get_constraint(bias_constraint)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.activity_regularizer = get_regularizer(activity_regularizer)
        self.bias: Any = None

    def channel_axis(self, ndim: int) -> int:
        """The channel axis of a rank-``ndim`` input."""
        return 1 if is_channels_first(self.data_format) else ndim - 1

    def input_channels(self, input_shape: Any) -> tuple[tuple, int, int]:
        """``(shape, channel_axis, channels)`` of the input, checking rank and a defined channel dim."""
        shape = get_exactly_one_shape(input_shape)
        if len(shape) != self.rank + 2:
            raise ValueError(
                f"{self.name}: inputs to {self.get_class_name()} should have rank {self.rank + 2}, "
                f"got input shape {list(shape)}"
            )
        axis = self.channel_axis(len(shape))
        if shape[axis] is None or shape[axis] < 0:
            raise ValueError(f"{self.name}: the channel dimension of the inputs should be defined, got {list(shape)}")
        return shape, axis, shape[axis]

    def spatial_output_shape(self, input_shape: Any, dilations: Sequence[int] | None = None) -> list[Any]:
        """The output lengths of the spatial axes."""
        shape = get_exactly_one_shape(input_shape)
        space = shape[2:] if is_channels_first(self.data_format) else shape[1:-1]
        dilations = self.dilation_rate if dilations is None else dilations
        return [
            conv_output_length(d, k, self.padding, s, r)
            for d, k, s, r in zip(space, self.kernel_size, self.strides, dilations, strict=True)
        ]

    def with_channels(self, input_shape: Any, space: list[Any], channels: Any) -> tuple:
        """``[batch, *space, channels]`` (or channels-first)."""
        batch = get_exactly_one_shape(input_shape)[0]
        if is_channels_first(self.data_format):
            return (batch, channels, *space)
        return (batch, *space, channels)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config, keys in TF.js's order."""
        config = {
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": list(self.dilation_rate),
            "activation": serialize_activation(self.activation),
            "use_bias": self.use_bias,
            "bias_initializer": serialize_initializer(self.bias_initializer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "activity_regularizer": serialize_regularizer(self.activity_regularizer),
            "bias_constraint": serialize_constraint(self.bias_constraint),
        }
        config.update(super().get_config())
        return config


class Conv(BaseConv):
    """An N-D convolution with ``filters`` output channels (``Conv1D``/``Conv2D``/``Conv3D``)."""

    def __init__(
        self,
        filters: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        kernel_initializer: Any = None,
        kernel_constraint: Any = None,
        kernel_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(kernel_size=kernel_size, **kwargs)
        self.filters = check_positive_int(filters, "filters", self.get_class_name())
        self.kernel_initializer = get_initializer(kernel_initializer or self.default_kernel_initializer)
        self.kernel_constraint = get_constraint(kernel_constraint)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.kernel: Any = None

    def build(self, input_shape: Any) -> None:
        """Create ``kernel`` ``[*kernel_size, in_channels, filters]`` and ``bias`` ``[filters]``."""
        _, axis, channels = self.input_channels(input_shape)
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, channels, self.filters], None, self.kernel_initializer,
            self.kernel_regularizer, True, self.kernel_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [self.filters], None, self.bias_initializer, self.bias_regularizer, True, self.bias_constraint
            )
        self.input_spec = [InputSpec(ndim=self.rank + 2, axes={axis: channels})]
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The convolution of ``inputs`` plus bias, through the activation."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        bias = self.bias.read() if self.bias is not None else None
        fused_activation = map_activation_to_fused_kernel(self.activation.get_class_name())
        if self.rank == 2:
            y = conv2d_with_bias_activation(
                x, self.kernel.read(), bias, self.strides, self.padding, self.data_format, self.dilation_rate,
                fused_activation,
            )  # fmt: skip
            return y if fused_activation is not None else self.activation.apply(y)
        if self.rank == 1:
            y = conv1d_with_bias(
                x, self.kernel.read(), bias, self.strides[0], self.padding, self.data_format, self.dilation_rate[0]
            )
        else:
            y = conv3d_with_bias(
                x, self.kernel.read(), bias, self.strides, self.padding, self.data_format, self.dilation_rate
            )
        return self.activation.apply(y)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, *output lengths, filters]`` (channels first: ``[batch, filters, ...]``)."""
        return self.with_channels(input_shape, self.spatial_output_shape(input_shape), self.filters)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config, keys in TF.js's order."""
        config = {
            "filters": self.filters,
            "kernel_initializer": serialize_initializer(self.kernel_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "kernel_constraint": serialize_constraint(self.kernel_constraint),
        }
        config.update(super().get_config())
        return config


@register_class
class Conv1D(Conv):
    """1-D (temporal) convolution over inputs ``[batch, steps, channels]``; padding may also be ``'causal'``."""

    rank = 1
    paddings = ("valid", "same", "causal")

    def __init__(self, filters: int | None = None, kernel_size: int | Sequence[int] | None = None, **kwargs: Any):
        super().__init__(filters, kernel_size, **kwargs)
        self.input_spec = [InputSpec(ndim=3)]

    def get_config(self) -> dict[str, Any]:
        """As TF.js: no ``data_format`` key (unless channels-first, which TF.js cannot represent)."""
        config = super().get_config()
        if not is_channels_first(self.data_format):
            del config["data_format"]
        return config


@register_class
class Conv2D(Conv):
    """2-D convolution over images ``[batch, rows, cols, channels]`` (or channels-first)."""

    rank = 2


@register_class
class Conv3D(Conv):
    """3-D convolution over volumes ``[batch, depth, rows, cols, channels]`` (or channels-first)."""

    rank = 3


def conv1d_with_bias(
    x: Tensor,
    kernel: Tensor,
    bias: Tensor | None,
    stride: int = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation: int = 1,
) -> Tensor:
    """1-D convolution (``padding`` valid, same or causal) plus an optional bias."""
    data_format = data_format or image_data_format()
    if x.rank != 3:
        raise ValueError(f"conv1d_with_bias: the input should be rank 3, got rank {x.rank}")
    x = to_channels_last(x, data_format)
    if padding == "causal":
        x = ops.pad(x, [[0, 0], [dilation * (kernel.shape[0] - 1), 0], [0, 0]])
        padding = "valid"
    y = ops.conv1d(x, kernel, stride, padding, "NWC", dilation)
    if bias is not None:
        y = bias_add(y, bias)
    return to_channels_first(y, data_format)


def conv2d_with_bias_activation(
    x: Tensor,
    kernel: Tensor,
    bias: Tensor | None,
    strides: Sequence[int] = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilations: Sequence[int] | int = 1,
    activation: str | None = None,
) -> Tensor:
    """2-D convolution with bias and a fused activation (``relu``/``linear``/``elu``) in one kernel."""
    data_format = data_format or image_data_format()
    if x.rank not in (3, 4):
        raise ValueError(f"conv2d_with_bias_activation: the input should be rank 3 or 4, got rank {x.rank}")
    y = fused.conv2d(
        x=to_channels_last(x, data_format), filter=kernel, strides=list(strides), pad=padding,
        dilations=dilations, data_format="NHWC", bias=bias, activation=activation or "linear",
    )  # fmt: skip
    return to_channels_first(y, data_format)


def conv3d_with_bias(
    x: Tensor,
    kernel: Tensor,
    bias: Tensor | None,
    strides: Sequence[int] = (1, 1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilations: Sequence[int] | int = 1,
) -> Tensor:
    """3-D convolution plus an optional bias."""
    data_format = data_format or image_data_format()
    if x.rank not in (4, 5):
        raise ValueError(f"conv3d_with_bias: the input should be rank 4 or 5, got rank {x.rank}")
    y = ops.conv3d(to_channels_last(x, data_format), kernel, list(strides), padding, "NDHWC", dilations)
    if bias is not None:
        y = bias_add(y, bias)
    return to_channels_first(y, data_format)


# -- shape layers -----------------------------------------------------------------------------------
def _pairs(value: Any, default: int, name: str, owner: str) -> list[list[int]]:
    """An int, ``[h, w]`` or ``[[top, bottom], [left, right]]`` as ``[[top, bottom], [left, right]]``."""
    value = default if value is None else value
    if isinstance(value, int) and not isinstance(value, bool):
        value = [[value, value], [value, value]]
    elif isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        value = [[value[0], value[0]], [value[1], value[1]]]
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(p, list | tuple) and len(p) == 2 for p in value)
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for p in value for v in p)
    ):
        raise ValueError(
            f"{owner}: {name} must be a non-negative integer, a list of 2 integers or a list of 2 lists of "
            f"2 integers, got {value!r}"
        )
    return [list(p) for p in value]


@register_class
class Cropping2D(Layer):
    """Crop rows and columns off the edges of images: ``cropping=[[top, bottom], [left, right]]``."""

    def __init__(self, cropping: Any = None, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if cropping is None:
            raise ValueError("Cropping2D: the cropping argument is required")
        self.cropping = _pairs(cropping, 0, "cropping", "Cropping2D")
        self.data_format = check_data_format(data_format, "Cropping2D")
        self.input_spec = [InputSpec(ndim=4)]

    def _spatial_axes(self) -> tuple[int, int]:
        return (2, 3) if is_channels_first(self.data_format) else (1, 2)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with the cropped rows and columns removed."""
        shape = list(get_exactly_one_shape(input_shape))
        for axis, (a, b) in zip(self._spatial_axes(), self.cropping, strict=True):
            shape[axis] = None if shape[axis] is None else shape[axis] - a - b
        return tuple(shape)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The cropped images."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        begin, size = [0] * 4, list(x.shape)
        for axis, (a, b) in zip(self._spatial_axes(), self.cropping, strict=True):
            begin[axis], size[axis] = a, x.shape[axis] - a - b
            if size[axis] <= 0:
                raise ValueError(f"{self.name}: cropping {self.cropping} leaves nothing of input shape {list(x.shape)}")
        return ops.slice(x, begin, size)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"cropping": [list(p) for p in self.cropping], "data_format": self.data_format}
        config.update(super().get_config())
        return config


@register_class
class UpSampling2D(Layer):
    """Repeat rows and columns ``size`` times (``interpolation='nearest'``) or resize bilinearly."""

    def __init__(
        self, size: Any = None, data_format: str | None = None, interpolation: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.input_spec = [InputSpec(ndim=4)]
        self.size = normalize_array([2, 2] if size is None else size, 2, "size", "UpSampling2D")
        self.data_format = check_data_format(data_format, "UpSampling2D")
        self.interpolation = check_string_arg(
            "nearest" if interpolation is None else interpolation,
            ("nearest", "bilinear"),
            "interpolation",
            "UpSampling2D",
        )

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Rows and columns multiplied by ``size``."""
        shape = list(get_exactly_one_shape(input_shape))
        axes = (2, 3) if is_channels_first(self.data_format) else (1, 2)
        for axis, factor in zip(axes, self.size, strict=True):
            shape[axis] = None if shape[axis] is None else shape[axis] * factor
        return tuple(shape)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The upsampled images."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        x = to_channels_last(x, self.data_format)
        new_size = [self.size[0] * x.shape[1], self.size[1] * x.shape[2]]
        if self.interpolation == "nearest":
            y = ops.image.resize_nearest_neighbor(x, new_size)
        else:
            y = ops.image.resize_bilinear(x, new_size)
        return to_channels_first(y, self.data_format)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {
            "size": list(self.size), "data_format": self.data_format, "interpolation": self.interpolation
        }  # fmt: skip
        config.update(super().get_config())
        return config


@register_class
class ZeroPadding2D(Layer):
    """Pad images with zero rows and columns: ``padding=[[top, bottom], [left, right]]`` (default 1)."""

    def __init__(self, padding: Any = None, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(data_format, "ZeroPadding2D", default=image_data_format())
        self.padding = _pairs(padding, 1, "padding", "ZeroPadding2D")
        self.input_spec = [InputSpec(ndim=4)]

    def _spatial_axes(self) -> tuple[int, int]:
        return (2, 3) if is_channels_first(self.data_format) else (1, 2)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Rows and columns grown by the padding."""
        shape = list(get_exactly_one_shape(input_shape))
        for axis, (a, b) in zip(self._spatial_axes(), self.padding, strict=True):
            shape[axis] = None if shape[axis] is None or shape[axis] < 0 else shape[axis] + a + b
        return tuple(shape)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The padded images."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        pattern = [[0, 0] for _ in range(4)]
        for axis, pair in zip(self._spatial_axes(), self.padding, strict=True):
            pattern[axis] = list(pair)
        return ops.pad(x, pattern)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"padding": [list(p) for p in self.padding], "data_format": self.data_format}
        config.update(super().get_config())
        return config


# -- factories ----------------------------------------------------------------------------------------
conv1d = layer_factory(Conv1D, "conv1d", **FACTORY_DOCS["conv1d"])
conv2d = layer_factory(Conv2D, "conv2d", **FACTORY_DOCS["conv2d"])
conv3d = layer_factory(Conv3D, "conv3d", **FACTORY_DOCS["conv3d"])
cropping2d = layer_factory(Cropping2D, "cropping2d", **FACTORY_DOCS["cropping2d"])
up_sampling2d = layer_factory(UpSampling2D, "up_sampling2d", **FACTORY_DOCS["up_sampling2d"])
zero_padding2d = layer_factory(ZeroPadding2D, "zero_padding2d", **FACTORY_DOCS["zero_padding2d"])


__all__ = [
    "Conv1D", "Conv2D", "Conv3D", "Cropping2D", "UpSampling2D", "ZeroPadding2D", "conv1d", "conv2d", "conv3d",
    "cropping2d", "up_sampling2d", "zero_padding2d",
]  # fmt: skip
