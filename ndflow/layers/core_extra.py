"""More core layers: ``SpatialDropout1D``, ``Permute``, ``RepeatVector``, ``Masking``.

Factories ``nf.layers.spatial_dropout1d(rate=0.5)``, ``nf.layers.permute(dims=[2, 1])``,
``nf.layers.repeat_vector(n=3)``, ``nf.layers.masking(mask_value=0)`` mirror ``tf.layers.*``.
``Masking`` computes a mask (``any(x != mask_value, axis=-1)``) that travels with its output
through the layers that support masking (Dense, Dropout, ReLU, merge layers, ...) to the layers
that use it (RNNs, Softmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .core import Dropout
from .engine.base import Layer
from .engine.topology import InputSpec
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor


@register_class
class SpatialDropout1D(Dropout):
    """Dropout of whole channels of a ``[batch, steps, channels]`` input (one mask per example and channel)."""

    def __init__(
        self, rate: float, noise_shape: Sequence[int | None] | None = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(rate, noise_shape, seed, **kwargs)
        self.input_spec = [InputSpec(ndim=3)]

    def get_noise_shape(self, x: Tensor) -> list[int]:
        """``[batch, 1, channels]``: the same mask for every step."""
        return [x.shape[0], 1, x.shape[2]]


@register_class
class RepeatVector(Layer):
    """Repeat a ``[batch, features]`` input ``n`` times: ``[batch, n, features]``."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"RepeatVector: expected n to be a positive integer, but got {n!r}")
        self.n = n
        self.input_spec = [InputSpec(ndim=2)]

    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, n, features]``."""
        shape = get_exactly_one_shape(input_shape)
        return (shape[0], self.n, shape[1])

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs`` repeated along a new axis 1."""
        x = get_exactly_one_tensor(inputs)
        return ops.tile(ops.expand_dims(x, 1), [1, self.n, 1])

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"n": self.n}
        config.update(super().get_config())
        return config


@register_class
class Permute(Layer):
    """Permute the non-batch axes: ``dims=[2, 1]`` swaps the two axes of each example (1-based, as Keras)."""

    def __init__(self, dims: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if dims is None:
            raise ValueError("Permute: the dims argument is required (a permutation of 1..rank)")
        if not isinstance(dims, list | tuple):
            raise TypeError(f"Permute: dims must be a list of integers, but got {dims!r}")
        if sorted(dims) != list(range(1, len(dims) + 1)) or not all(isinstance(d, int) for d in dims):
            raise ValueError(
                f"Permute: invalid permutation dims={list(dims)}: dims must contain consecutive integers starting "
                "from 1."
            )
        self.dims = list(dims)
        self.dims_including_batch = [0, *self.dims]
        self.input_spec = [InputSpec(ndim=len(self.dims) + 1)]

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with its non-batch axes permuted."""
        shape = get_exactly_one_shape(input_shape)
        return (shape[0], *(shape[d] for d in self.dims))

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs`` transposed."""
        return ops.transpose(get_exactly_one_tensor(inputs), self.dims_including_batch)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"dims": list(self.dims)}
        config.update(super().get_config())
        return config


@register_class
class Masking(Layer):
    """Mask the steps whose features all equal ``mask_value`` (and zero them); later layers see the mask."""

    def __init__(self, mask_value: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        if mask_value is not None and (isinstance(mask_value, bool) or not isinstance(mask_value, int | float)):
            raise ValueError(f"Masking: mask_value must be a number, but got {mask_value!r}")
        self.mask_value = 0 if mask_value is None else mask_value

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Unchanged."""
        return input_shape

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor:
        """``any(inputs != mask_value, axis=-1)``: True for the steps kept."""
        x = get_exactly_one_tensor(inputs)
        return tidy(lambda: ops.any(ops.not_equal(x, self.mask_value), -1))

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs`` with the masked steps set to zero."""
        self.invoke_call_hook(inputs, kwargs)
        x = get_exactly_one_tensor(inputs)
        keep = ops.any(ops.not_equal(x, self.mask_value), -1, True)
        return ops.mul(x, ops.cast(keep, x.dtype))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"mask_value": self.mask_value}
        config.update(super().get_config())
        return config


spatial_dropout1d = layer_factory(SpatialDropout1D, "spatial_dropout1d", **FACTORY_DOCS["spatial_dropout1d"])
repeat_vector = layer_factory(RepeatVector, "repeat_vector", **FACTORY_DOCS["repeat_vector"])
permute = layer_factory(Permute, "permute", **FACTORY_DOCS["permute"])
masking = layer_factory(Masking, "masking", **FACTORY_DOCS["masking"])


__all__ = [
    "Masking", "Permute", "RepeatVector", "SpatialDropout1D", "masking", "permute", "repeat_vector",
    "spatial_dropout1d",
]  # fmt: skip
