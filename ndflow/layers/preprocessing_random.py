"""``RandomWidth`` and ``RandomHeight``: resize images by a random factor (TF.js 4.22's augmentation layers).

``nf.layers.random_width(factor=0.2, seed=1)`` resizes ``[h, w, c]`` images or ``[b, h, w, c]`` batches to the
width ``round(w * f)`` with ``f`` drawn uniformly from ``[1 + lower, 1 + upper)`` on each call (``factor``: a
positive number ``x`` for ``[-x, x]``, or a pair ``[lower, upper]``, each above -1); ``RandomHeight`` does the
same to the height. Resizing is bilinear (``align_corners=False``) or nearest.

As in TF.js, each call draws ``random_uniform([1], 1 + lower, 1 + upper, 'float32', seed)`` where a given
``seed`` goes up by one per call (the config records the next one), and a call without ``training`` resizes.
Beyond TF.js: ``training=False`` (as ``predict`` passes) returns the images unchanged, as Keras does, and the
output shape keeps the batch axis and marks the random axis unknown (TF.js reports ``[h, -1, c]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from ..ops import image
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import get_exactly_one_shape, get_exactly_one_tensor, shape_str

_INTERPOLATIONS = ("bilinear", "nearest")
_IMAGE = "expected an image [h, w, c] or a batch [b, h, w, c]"


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


class _RandomResize(Layer):
    """Shared parts: the factor range, the interpolation, the per-call seed."""

    axis = -2  # the image axis resized: -2 width, -3 height
    what = "width"

    def __init__(
        self, factor: float | Sequence[float], interpolation: str | None = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        if isinstance(factor, list | tuple) and len(factor) == 2 and all(_is_number(f) for f in factor):
            lower, upper = float(factor[0]), float(factor[1])
        elif _is_number(factor) and factor > 0:  # type: ignore[operator]
            lower, upper = -float(factor), float(factor)  # type: ignore[arg-type]
        else:
            raise ValueError(f"{owner}: invalid factor {factor!r}; expected a positive number or a pair of numbers")
        if lower < -1.0 or upper < -1.0:
            raise ValueError(f"{owner}: factor values must be larger than -1, got {factor!r}")
        if upper < lower:
            raise ValueError(f"{owner}: factor's upper bound {upper:g} is less than its lower bound {lower:g}")
        if interpolation is not None and interpolation not in _INTERPOLATIONS:
            raise ValueError(
                f"{owner}: invalid interpolation {interpolation!r}; valid values are 'bilinear' and 'nearest'"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"{owner}: seed must be an integer, but got {seed!r}")
        self.factor = list(factor) if isinstance(factor, list | tuple) else factor
        self.lower, self.upper = lower, upper
        self.interpolation = interpolation or "bilinear"
        self.seed = seed

    def _next_seed(self) -> int | None:
        if self.seed is None:
            return None
        self.seed += 1
        return self.seed - 1

    def call(self, inputs: Any, training: bool | None = None, **kwargs: Any) -> Tensor:
        """The images resized on one axis by a random factor (unchanged when ``training`` is False)."""
        x = get_exactly_one_tensor(inputs)
        if x.rank not in (3, 4):
            raise ValueError(
                f"{self.name}: expected an image [h, w, c] or a batch [b, h, w, c], got {shape_str(x.shape)}"
            )
        if training is False:
            return ops.clone(x)
        draw = ops.random_uniform([1], 1.0 + self.lower, 1.0 + self.upper, "float32", self._next_seed())
        size = [x.shape[-3], x.shape[-2]]
        size[self.axis + 3] = math.floor(float(draw.data_sync()[0]) * size[self.axis + 3] + 0.5)  # JS Math.round
        if self.interpolation == "bilinear":
            return image.resize_bilinear(x, size)
        return image.resize_nearest_neighbor(x, size)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with the resized axis unknown."""
        shape = list(get_exactly_one_shape(input_shape))
        if len(shape) not in (3, 4):
            raise ValueError(
                f"{self.name}: expected an image [h, w, c] or a batch [b, h, w, c], got {shape_str(shape)}"
            )
        shape[self.axis] = None
        return tuple(shape)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config: ``factor``, ``interpolation``, ``seed``."""
        config: dict[str, Any] = {"factor": self.factor, "interpolation": self.interpolation}
        if self.seed is not None:
            config["seed"] = self.seed
        config.update(super().get_config())
        return config


@register_class
class RandomWidth(_RandomResize):
    """Resize images to a random width ``round(w * f)``, ``f`` uniform in ``[1 + lower, 1 + upper)``."""

    axis = -2
    what = "width"


@register_class
class RandomHeight(_RandomResize):
    """Resize images to a random height ``round(h * f)``, ``f`` uniform in ``[1 + lower, 1 + upper)``."""

    axis = -3
    what = "height"


random_width = layer_factory(RandomWidth, "random_width", **FACTORY_DOCS["random_width"])
random_height = layer_factory(RandomHeight, "random_height", **FACTORY_DOCS["random_height"])

__all__ = ["RandomHeight", "RandomWidth", "random_height", "random_width"]
