"""Convolutional LSTM, as TF.js's ``tf.layers.convLstm2d`` / ``convLstm2dCell``.

Inputs are ``[batch, time, rows, cols, channels]`` (``channels_last``) or ``[batch, time, channels,
rows, cols]``; the gates are 2-D convolutions of the input (``strides``, ``padding``,
``dilation_rate``) and of the state (stride 1, ``'same'``). As in the other recurrent layers, the
input convolution of every step is computed at once before the loop (one convolution with all four
gates' kernels), and each step adds one recurrent convolution. Configs and weight names are TF.js's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .backend import bias_add, is_channels_first
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import Initializer, Ones
from .recurrent import _CellRNN
from .recurrent_cells import LSTMCell, StepFns, _masks, apply_mask, assert_positive_integer
from .serialization import register_class
from .utils import check_string_arg, get_exactly_one_shape, is_shape


def normalize_array(value: Any, n: int, name: str, owner: str) -> list[int]:
    """An int or a list of ``n`` positive ints as a list of ``n`` ints (TF.js's ``normalizeArray``)."""
    values = [value] * n if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, list | tuple) or len(values) != n:
        raise ValueError(f"{owner}: {name} must be an integer or a list of {n} integers, got {value!r}")
    for v in values:
        assert_positive_integer(v, name, owner)
    return [int(v) for v in values]


def conv_output_length(length: int | None, kernel: int, padding: str, stride: int, dilation: int = 1) -> int | None:
    """The output length of a convolution along one axis."""
    if length is None:
        return None
    dilated = kernel + (kernel - 1) * (dilation - 1)
    out = length if padding == "same" else length - dilated + 1
    return (out + stride - 1) // stride


class _UnitForgetBias4(Initializer):
    """ConvLSTM2D bias with the forget gate's quarter set to ones."""

    class_name = "CustomInit"

    def __init__(self, init: Initializer, filters: int) -> None:
        self.init, self.filters = init, filters

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """``concat(init([f]), ones([f]), init([2f]))``."""
        parts = [self.init.apply([self.filters]), Ones().apply([self.filters]), self.init.apply([2 * self.filters])]
        try:
            return ops.concat(parts, 0)
        finally:
            for part in parts:
                part.dispose()


@register_class
class ConvLSTM2DCell(LSTMCell):
    """One step of a convolutional LSTM: the LSTM gates as 2-D convolutions; states ``[h, c]``."""

    class_name = "ConvLSTM2DCell"

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] | None = None,
        padding: str | None = None,
        data_format: str | None = None,
        dilation_rate: int | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("units", None)
        assert_positive_integer(filters, "filters", "ConvLSTM2DCell")
        super().__init__(filters, **kwargs)
        owner = "ConvLSTM2DCell"
        self.filters = filters
        self.kernel_size = normalize_array(kernel_size, 2, "kernel_size", owner)
        self.strides = normalize_array(strides or 1, 2, "strides", owner)
        self.padding = check_string_arg(padding or "valid", ("valid", "same", "causal"), "padding", owner)
        self.data_format = check_string_arg(
            data_format or "channelsLast", ("channelsFirst", "channelsLast"), "data_format", owner
        )
        self.dilation_rate = normalize_array(dilation_rate or 1, 2, "dilation_rate", owner)

    @property
    def _channels_first(self) -> bool:
        return is_channels_first(self.data_format)

    def build(self, input_shape: Any) -> None:
        """Create ``kernel`` ``[kh, kw, in, 4f]``, ``recurrent_kernel`` ``[kh, kw, f, 4f]`` and ``bias`` ``[4f]``."""
        shape = get_exactly_one_shape(input_shape if is_shape(input_shape) else input_shape[0])
        channel_axis = 1 if self._channels_first else len(shape) - 1
        if shape[channel_axis] is None:
            raise ValueError(f"The channel dimension of the input should be defined. Found {shape[channel_axis]}")
        n = self.filters * 4
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, shape[channel_axis], n], None, self.kernel_initializer,
            self.kernel_regularizer, True, self.kernel_constraint,
        )  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", [*self.kernel_size, self.filters, n], None, self.recurrent_initializer,
            self.recurrent_regularizer, True, self.recurrent_constraint,
        )  # fmt: skip
        self.bias = None
        if self.use_bias:
            init = _UnitForgetBias4(self.bias_initializer, self.filters) if self.unit_forget_bias else None
            self.bias = self.add_weight(
                "bias", [n], None, init or self.bias_initializer, self.bias_regularizer, True, self.bias_constraint
            )
        self.built = True

    def state_shape(self, input_shape: Sequence[int | None]) -> tuple:
        """The shape of ``h`` and ``c`` for a per-step input of ``input_shape``."""
        rows, cols = (input_shape[2], input_shape[3]) if self._channels_first else (input_shape[1], input_shape[2])
        out = [
            conv_output_length(n, k, self.padding, s, d)
            for n, k, s, d in zip((rows, cols), self.kernel_size, self.strides, self.dilation_rate, strict=True)
        ]
        return (input_shape[0], self.filters, *out) if self._channels_first else (input_shape[0], *out, self.filters)

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """All steps' input convolutions at once, then one recurrent convolution per step."""
        in_masks = _masks(input_shape, self.dropout, training, 4, self.dropout_func)
        rec_masks = _masks(self.state_shape(input_shape), self.recurrent_dropout, training, 4, self.dropout_func)
        fmt = "NCHW" if self._channels_first else "NHWC"
        axis = 1 if self._channels_first else 3
        kernel, rk = self.kernel.read(), self.recurrent_kernel.read()
        bias = self.bias.read() if self.bias is not None else None

        def input_conv(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
            lead = list(x.shape[:-3])
            flat = ops.reshape(x, [-1, *x.shape[-3:]]) if x.rank != 4 else x
            out = ops.conv2d(flat, w, self.strides, self.padding, fmt, self.dilation_rate)
            if b is not None:
                out = bias_add(out, b, self.data_format)
            return ops.reshape(out, [*lead, *out.shape[1:]]) if x.rank != 4 else out

        def conv_axis(x: Tensor) -> int:
            return x.rank - 3 if self._channels_first else x.rank - 1

        def project(x: Tensor) -> Tensor:
            if in_masks is None:
                return input_conv(x, kernel, bias)
            kernels = ops.split(kernel, 4, 3)
            biases = ops.split(bias, 4) if bias is not None else [None] * 4
            gates = [input_conv(apply_mask(x, m), k, b) for m, k, b in zip(in_masks, kernels, biases, strict=True)]
            return ops.concat(gates, conv_axis(gates[0]))

        def step(p: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            h, c = states
            if rec_masks is None:
                recurrent = ops.conv2d(h, rk, 1, "same", fmt)
            else:
                parts = zip(rec_masks, ops.split(rk, 4, 3), strict=True)
                recurrent = ops.concat([ops.conv2d(ops.mul(h, m), k, 1, "same", fmt) for m, k in parts], axis)
            return self._gates_step(ops.add(p, recurrent), c, axis)

        return StepFns(project, step)

    def get_config(self) -> dict[str, Any]:
        """The LSTM cell's config without ``units``, then the convolution's arguments."""
        config = {k: v for k, v in super().get_config().items() if k != "units"}
        config.update(
            {
                "filters": self.filters,
                "kernel_size": list(self.kernel_size),
                "padding": self.padding,
                "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate),
                "strides": list(self.strides),
            }
        )
        return config


@register_class
class ConvLSTM2D(_CellRNN):
    """A convolutional LSTM over ``[batch, time, rows, cols, channels]``: ``nf.layers.conv_lstm2d(filters=8, ...)``."""

    class_name = "ConvLSTM2D"
    cell_class = ConvLSTM2DCell

    def __init__(self, **kwargs: Any) -> None:
        if kwargs.get("unroll"):
            raise NotImplementedError("Unrolling is not possible with convolutional RNNs.")
        if isinstance(kwargs.get("cell"), list | tuple):
            raise NotImplementedError("It is not possible at the moment to stack convolutional cells.")
        kwargs.pop("cell", None)
        super().__init__(**kwargs)
        self.input_spec = [InputSpec(ndim=5)]

    def compute_single_output_shape(self, input_shape: Sequence[int | None]) -> tuple:
        """``[batch, time, *state shape]`` for ``input_shape`` ``[batch, time, ...]``."""
        shape = tuple(input_shape)
        return (shape[0], shape[1], *self.cell.state_shape((shape[0], *shape[2:]))[1:])

    def _state_shapes(self, batch: int | None, input_shape: Sequence[int | None] | None = None) -> list[tuple]:
        step_shape = (batch, *tuple(input_shape)[2:])
        return [self.cell.state_shape(step_shape)] * 2

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output (with or without the time axis), then the two state shapes if ``return_state``."""
        shape = tuple(input_shape if is_shape(input_shape) else input_shape[0])
        out = self.compute_single_output_shape(shape)
        if not self.return_sequences:
            out = (out[0], *out[2:])
        if self.return_state:
            state = (shape[0], *out[-3:])
            return [out, state, state]
        return out


conv_lstm2d = layer_factory(ConvLSTM2D, "conv_lstm2d", exclude=frozenset({"units"}), **FACTORY_DOCS["conv_lstm2d"])
conv_lstm2d_cell = layer_factory(
    ConvLSTM2DCell, "conv_lstm2d_cell", exclude=frozenset({"units"}), **FACTORY_DOCS["conv_lstm2d_cell"]
)


__all__ = ["ConvLSTM2D", "ConvLSTM2DCell", "conv_lstm2d", "conv_lstm2d_cell"]
