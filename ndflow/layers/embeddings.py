"""``Embedding``: integer indices to dense vectors (``nf.layers.embedding(input_dim=1000, output_dim=16)``).

With ``mask_zero=True`` index 0 is padding: the layer's output carries a mask (``inputs != 0``) that
the layers after it see (RNNs skip the masked steps). As in TF.js, an ``Embedding`` without
``input_shape`` gets ``batch_input_shape`` ``[batch_size, *input_length]`` (``[None, None]`` without
``input_length``), so it can start a ``Sequential`` model.
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .constraints import get_constraint, serialize_constraint
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import get_initializer, serialize_initializer
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor, to_list


def _check_positive_int(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Embedding: expected {what} to be a positive integer, but got {value!r}")


@register_class
class Embedding(Layer):
    """Look up row ``i`` of an ``[input_dim, output_dim]`` table for each index ``i`` of the input."""

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = None,
        embeddings_regularizer: Any = None,
        activity_regularizer: Any = None,
        embeddings_constraint: Any = None,
        mask_zero: bool | None = None,
        input_length: int | list[int | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.embeddings: Any = None
        if self.batch_input_shape is None:
            batch_size = kwargs.get("batch_size")
            lengths = [None] if input_length is None else to_list(input_length)
            self.batch_input_shape = (batch_size, *lengths)
        _check_positive_int(input_dim, "input_dim")
        _check_positive_int(output_dim, "output_dim")
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = get_initializer(embeddings_initializer or "randomUniform")
        self.embeddings_regularizer = get_regularizer(embeddings_regularizer)
        self.activity_regularizer = get_regularizer(activity_regularizer)
        self.embeddings_constraint = get_constraint(embeddings_constraint)
        self.mask_zero = mask_zero
        self.supports_masking = bool(mask_zero)
        self.input_length = input_length

    def build(self, input_shape: Any) -> None:
        """Create the ``embeddings`` table ``[input_dim, output_dim]`` (after checking ``input_length``)."""
        self.compute_output_shape(input_shape)
        if self.embeddings is None:
            self.embeddings = self.add_weight(
                "embeddings", [self.input_dim, self.output_dim], self.dtype, self.embeddings_initializer,
                self.embeddings_regularizer, True, self.embeddings_constraint,
            )  # fmt: skip
        self.built = True

    def warn_on_incompatible_input_shape(self, input_shape: Any) -> None:
        """Nothing: any index shape is fine (TF.js does not warn either)."""

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """``inputs != 0`` with ``mask_zero``, else None."""
        if not self.mask_zero:
            return None
        x = get_exactly_one_tensor(inputs)
        return tidy(lambda: ops.not_equal(x, ops.zeros_like(x)))

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape (checked against ``input_length``) plus ``output_dim``."""
        shape = get_exactly_one_shape(input_shape)
        if self.input_length is None:
            return (*shape, self.output_dim)
        lengths = to_list(self.input_length)
        error = (
            f"{self.name}: input_length is {self.input_length}, but the input shape is {list(shape)} "
            f"(expected {len(lengths)} axes after the batch axis)"
        )
        if len(lengths) != len(shape) - 1:
            raise ValueError(error)
        for k, (expected, actual) in enumerate(zip(lengths, shape[1:], strict=True)):
            if expected is not None and actual is not None and expected != actual:
                raise ValueError(error)
            if expected is None:
                lengths[k] = actual
        return (shape[0], *lengths, self.output_dim)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The embeddings of ``inputs`` (cast to int32)."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        if x.dtype != "int32":
            x = ops.cast(x, "int32")
        out = ops.gather(self.embeddings.read(), ops.reshape(x, [x.size]))
        return ops.reshape(out, list(self.compute_output_shape(tuple(x.shape))))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config = {
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "embeddings_initializer": serialize_initializer(self.embeddings_initializer),
            "embeddings_regularizer": serialize_regularizer(self.embeddings_regularizer),
            "activity_regularizer": serialize_regularizer(self.activity_regularizer),
            "embeddings_constraint": serialize_constraint(self.embeddings_constraint),
            "mask_zero": self.mask_zero,
            "input_length": self.input_length,
        }
        config.update(super().get_config())
        return config


embedding = layer_factory(Embedding, "embedding", **FACTORY_DOCS["embedding"])


__all__ = ["Embedding", "embedding"]
