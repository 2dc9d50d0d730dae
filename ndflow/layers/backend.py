"""Tensor helpers the layers share (TF.js's ``tfjs_backend``): ``dot``, ``bias_add``, ``batch_flatten``, ...

``image_data_format()`` is ``'channels_last'``; data formats are written in snake_case, as in
``model.json`` (``'channels_first'``), and camelCase is accepted wherever one is read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import ops
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..ops import fused
from .naming import to_camel_case
from .utils import tidy

DATA_FORMATS = ("channelsFirst", "channelsLast")


def epsilon() -> float:
    """The fuzz factor of the active backend (1e-7 for float32)."""
    return ENGINE.backend.epsilon()


def image_data_format() -> str:
    """The default data format: ``'channels_last'``."""
    return "channels_last"


def is_channels_first(data_format: str | None) -> bool:
    """Whether ``data_format`` (either spelling) is channels-first."""
    return data_format is not None and to_camel_case(data_format) == "channelsFirst"


def batch_flatten(x: Tensor) -> Tensor:
    """``x`` reshaped to ``[batch, everything else]``."""
    if x.rank <= 1:
        raise ValueError(f"batch_flatten requires a minimum rank of 2, got rank {x.rank}")
    return ops.reshape(x, [x.shape[0], math.prod(x.shape[1:])])


def reshape_bias(x_rank: int, bias: Tensor, data_format: str) -> Tensor:
    """``bias`` (rank 1 or ``x_rank``) reshaped to broadcast over a rank-``x_rank`` input."""
    if bias.rank not in (1, x_rank):
        raise ValueError(f"Unexpected bias dimensions: {bias.rank}; expected it to be 1 or {x_rank}")
    if x_rank < 3:
        return bias
    if x_rank > 5:
        raise ValueError(f"Unsupported input rank by bias_add: {x_rank}")
    shape = list(bias.shape)
    if is_channels_first(data_format):
        if bias.rank == 1:
            return ops.reshape(bias, [1, shape[0]] + [1] * (x_rank - 2))
        return ops.reshape(bias, [1, shape[-1], *shape[:-1]])
    if bias.rank == 1:
        return ops.reshape(bias, [1] * (x_rank - 1) + [shape[0]])
    return ops.reshape(bias, [1, *shape])


def bias_add(x: Tensor, bias: Tensor, data_format: str | None = None) -> Tensor:
    """``x + bias`` along the channel axis."""
    data_format = data_format or image_data_format()
    return tidy(lambda: ops.add(x, reshape_bias(x.rank, bias, data_format)))


def dot(a: Tensor, b: Tensor, activation: str | None = None, bias: Tensor | None = None) -> Tensor:
    """Keras's ``dot``: ``a`` (rank >= 2) times ``b`` over ``a``'s last axis, with an optional fused bias/activation."""
    if a.rank < 2 or b.rank < 2:
        raise NotImplementedError(
            f"dot requires both inputs to be rank >= 2 but got x shape = {list(a.shape)} and y shape = {list(b.shape)}"
        )
    if b.rank >= 3 and a.shape[-1] != b.shape[-2]:
        raise NotImplementedError(
            "If rank y >= 3, then the second last dim of y must equal the last dim of x but got "
            f"x shape = {list(a.shape)} and y shape = {list(b.shape)}"
        )

    def run() -> Tensor:
        fused_bias = reshape_bias(2, bias, image_data_format()) if bias is not None else None  # a is 2-D below
        if a.rank == 2 and b.rank == 2:
            return fused.mat_mul(a=a, b=b, bias=fused_bias, activation=activation or "linear")
        a_first = list(a.shape[:-1])
        a2 = ops.reshape(a, [-1, a.shape[-1]])
        b_shape = list(b.shape)
        b_last, y_second_last = b_shape[-1], b_shape[-2]
        y_other = [*b_shape[:-2], b_last]
        perm = [b.rank - 2 if i == 0 else (i - 1 if i <= b.rank - 2 else i) for i in range(b.rank)]
        b2 = ops.reshape(ops.transpose(b, perm), [y_second_last, -1])
        out = fused.mat_mul(a=a2, b=b2, bias=fused_bias, activation=activation or "linear")
        return ops.reshape(out, a_first + y_other)

    return tidy(run)


def in_train_phase(x: Callable[[], Any], alt: Callable[[], Any], training: bool = False) -> Any:
    """``x()`` when training, else ``alt()``."""
    return x() if training else alt()


def map_activation_to_fused_kernel(activation_name: str) -> str | None:
    """The fused-kernel activation for an activation name (relu, linear, elu), else None."""
    return activation_name if activation_name in ("relu", "linear", "elu") else None


__all__ = [
    "DATA_FORMATS", "batch_flatten", "bias_add", "dot", "epsilon", "image_data_format", "in_train_phase",
    "is_channels_first", "map_activation_to_fused_kernel", "reshape_bias",
]  # fmt: skip
