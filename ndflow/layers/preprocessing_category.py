"""``CategoryEncoding``: integer categories to one-hot, multi-hot or count vectors (TF.js 4.22's layer).

``nf.layers.category_encoding(num_tokens=4, output_mode='oneHot')``. Inputs are integers in
``[0, num_tokens)`` (cast to int32), of rank 0, 1 or 2; a value outside is an error. Modes:

- ``'multiHot'`` (default): one row per sample with 1 for each category present;
- ``'oneHot'``: one row per value (a last axis of length 1 is replaced, any other is added);
- ``'count'``: how many times each category appears, weighted by ``count_weights`` (a call keyword) if given;
- ``'int'``: the int32 inputs unchanged.

TF.js's ``'tfIdf'`` mode can never run there (it wants weights it refuses to take); it is refused here with
that explanation. Keras's spellings (``'one_hot'``, ``'multi_hot'``) are accepted and stored as TF.js's.
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor, shape_str

_MODES = ("int", "oneHot", "multiHot", "count", "tfIdf")
_KERAS_MODES = {"one_hot": "oneHot", "multi_hot": "multiHot", "tf_idf": "tfIdf"}


@register_class
class CategoryEncoding(Layer):
    """Encode integer categories as one-hot, multi-hot or count vectors of length ``num_tokens``."""

    def __init__(self, num_tokens: int, output_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens <= 0:
            raise ValueError(f"CategoryEncoding: expected num_tokens to be a positive integer, but got {num_tokens!r}")
        mode = _KERAS_MODES.get(output_mode, output_mode) if isinstance(output_mode, str) else output_mode
        if mode is not None and mode not in _MODES:
            raise ValueError(f"CategoryEncoding: invalid output_mode {output_mode!r}; valid values are {list(_MODES)}")
        self.num_tokens = num_tokens
        self.output_mode: str = mode or "multiHot"

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[..., num_tokens]``: the last axis replaced (``'oneHot'``: added unless it has length 1)."""
        shape = get_exactly_one_shape(input_shape)
        if shape is None:
            return (self.num_tokens,)
        shape = list(shape)
        if self.output_mode == "int":
            return tuple(shape)
        if not shape or (self.output_mode == "oneHot" and shape[-1] != 1):
            return (*shape, self.num_tokens)
        shape[-1] = self.num_tokens
        return tuple(shape)

    def call(self, inputs: Any, count_weights: Any = None, **kwargs: Any) -> Tensor:
        """The encoded inputs (float32; int32 in ``'int'`` mode)."""
        if count_weights is None:  # TF.js's spelling, as ported ``apply(x, {'countWeights': w})`` passes it
            count_weights = kwargs.get("countWeights")
        x = get_exactly_one_tensor(inputs)
        if x.dtype != "int32":
            x = ops.cast(x, "int32")
        weights = None
        if count_weights is not None:
            if self.output_mode != "count":
                raise ValueError(
                    f"{self.name}: count_weights is only used with output_mode 'count', not {self.output_mode!r}"
                )
            weights = get_exactly_one_tensor(count_weights)
        if x.size:
            low, high = float(ops.min(x).data_sync()[0]), float(ops.max(x).data_sync()[0])
            if low < 0 or high >= self.num_tokens:
                raise ValueError(
                    f"{self.name}: input values must be in [0, num_tokens) with num_tokens={self.num_tokens}, "
                    f"got values from {low:g} to {high:g}"
                )
        return self._encode(x, weights)

    def _encode(self, x: Tensor, weights: Tensor | None) -> Tensor:
        if self.output_mode == "int":
            return x
        if self.output_mode == "tfIdf":
            raise ValueError(
                f"{self.name}: output_mode 'tfIdf' needs idf weights, which CategoryEncoding cannot take "
                "(TF.js 4.22 fails the same way); use 'count' and multiply by your weights"
            )
        original = x.shape
        if x.rank == 0:
            x = ops.expand_dims(x, -1)
        if self.output_mode == "oneHot" and x.shape[-1] != 1:
            x = ops.expand_dims(x, -1)
        if x.rank > 2:
            raise ValueError(
                f"{self.name}: with output_mode {self.output_mode!r} the output rank is at most 2; input shape "
                f"{shape_str(original)} would give rank {x.rank}"
            )
        binary = self.output_mode in ("multiHot", "oneHot")
        if weights is not None:
            return ops.dense_bincount(x, weights, self.num_tokens, binary)
        return ops.dense_bincount(x, ops.tensor([], [0], "float32"), self.num_tokens, binary)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config: ``num_tokens``, ``output_mode``."""
        config: dict[str, Any] = {"num_tokens": self.num_tokens, "output_mode": self.output_mode}
        config.update(super().get_config())
        return config


category_encoding = layer_factory(CategoryEncoding, "category_encoding", **FACTORY_DOCS["category_encoding"])

__all__ = ["CategoryEncoding", "category_encoding"]
