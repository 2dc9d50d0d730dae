"""``InputLayer`` and ``input()``: the entry points of a model's graph.

``nf.input(shape=[3])`` returns a ``SymbolicTensor`` of shape ``(None, 3)`` made by a new
``InputLayer`` (named ``input1``, ``input2``, ... unless named); models are built from such
tensors with ``nf.model(inputs=..., outputs=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..factory import to_layer_kwargs
from ..naming import get_uid
from ..serialization import register_class
from ..utils import normalize_shape, shape_to_json
from .base import DisposeResult, Layer
from .topology import InputSpec, Node, SymbolicTensor


@register_class
class InputLayer(Layer):
    """The layer behind a model input: holds the batch input shape and dtype; cannot be called."""

    def __init__(
        self,
        input_shape: Sequence[int | None] | None = None,
        batch_size: int | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
        dtype: str | None = None,
        sparse: bool | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(dtype=dtype, name=name if name is not None else get_uid("input"))
        self.trainable = False
        self.built = True
        self.sparse = bool(sparse)
        if input_shape is not None and batch_input_shape is not None:
            raise ValueError(
                "Only provide the input_shape OR batch_input_shape argument to InputLayer, not both at the same time."
            )
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("An InputLayer should be passed either a batch_input_shape or an input_shape.")
            batch_input_shape = (batch_size, *normalize_shape(input_shape, "input_shape"))
        elif batch_size is not None:
            raise ValueError("Cannot specify batch_size if batch_input_shape is specified when creating an InputLayer.")
        self.batch_input_shape = normalize_shape(batch_input_shape, "batch_input_shape")
        self.dtype = dtype or "float32"
        self.input_spec = [InputSpec(shape=self.batch_input_shape)]
        tensor = SymbolicTensor(self.dtype, self.batch_input_shape, self, [], {}, self.name)
        tensor.node_index = 0
        tensor.tensor_index = 0
        Node(self, [], [], [], [tensor], [tensor], [None], [None], [self.batch_input_shape], [self.batch_input_shape])

    def apply(self, inputs: Any, kwargs: dict[str, Any] | None = None) -> Any:
        """Always raises: an InputLayer is fed, not called."""
        raise ValueError(f"Cannot pass any input to an InputLayer's apply() method. InputLayer name: {self.name}")

    def dispose(self) -> DisposeResult:
        """A no-op: an InputLayer has no weights."""
        return DisposeResult(self._ref_count or 0, 0)

    def _release(self, count: int) -> DisposeResult:
        return DisposeResult(self._ref_count or 0, 0)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        return {
            "batch_input_shape": shape_to_json(self.batch_input_shape),
            "dtype": self.dtype,
            "sparse": self.sparse,
            "name": self.name,
        }


def input(  # noqa: A001 - TF.js's name (tf.input)
    shape: Sequence[int | None] | Mapping[str, Any] | None = None,
    batch_shape: Sequence[int | None] | None = None,
    name: str | None = None,
    dtype: str | None = None,
    sparse: bool | None = None,
) -> SymbolicTensor:
    """A symbolic model input of ``shape`` (without the batch axis) or ``batch_shape`` (with it).

    As TF.js's ``tf.input({shape: [3]})``, a config dict (camelCase or snake_case keys) may be the only positional
    argument: ``nf.input({'shape': [784], 'dtype': 'float32'})``.
    """
    if isinstance(shape, Mapping):
        given = {"batch_shape": batch_shape, "name": name, "dtype": dtype, "sparse": sparse}
        merged = to_layer_kwargs("input", shape, {k: v for k, v in given.items() if v is not None}, set(given))
        unknown = sorted(set(merged) - {"shape", *given})
        if unknown:
            raise TypeError(
                f"input: unexpected config key(s) {unknown}; known: shape, batch_shape, name, dtype, sparse"
            )
        return input(**merged)
    if batch_shape is None and shape is None:
        raise ValueError(
            "input: provide either a shape or a batch_shape argument. Note that shape does not include the batch "
            "dimension."
        )
    if batch_shape is not None and shape is not None:
        raise ValueError("input: provide either a shape or a batch_shape argument, but not both.")
    if batch_shape is None:
        batch_shape = (None, *normalize_shape(shape, "shape"))
    layer = InputLayer(batch_input_shape=batch_shape, name=name, dtype=dtype or "float32", sparse=sparse)
    return layer.inbound_nodes[0].output_tensors[0]


__all__ = ["InputLayer", "input"]
