"""Image preprocessing layers: ``Rescaling``, ``CenterCrop``, ``Resizing``.

Factories ``nf.layers.rescaling(scale=1/255)``, ``nf.layers.center_crop(height=, width=)``,
``nf.layers.resizing(height=, width=, interpolation='bilinear')``. Inputs are ``[h, w, c]`` images
or ``[batch, h, w, c]`` batches.

Values follow TF.js 4.22, quirks included, so that models trained there predict the same here:
``CenterCrop`` crops with nearest-neighbour ``crop_and_resize`` (a width off by one is taken one
pixel right of centre) and resizes up with bilinear interpolation; ``Resizing`` resizes with
``align_corners = not crop_to_aspect_ratio`` and never crops. Beyond TF.js: ``Resizing`` reports its
real output shape (TF.js gives ``[height, width, input_shape[2]]``) and runs inside models (TF.js's
fails there), and ``CenterCrop`` does not overwrite its input's shape.
"""

from __future__ import annotations

import math
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


def _check_size(value: Any, what: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: expected {what} to be a positive integer, but got {value!r}")


def _check_image_shape(shape: Any, name: str) -> None:
    if len(shape) not in (3, 4):
        raise ValueError(f"{name}: expected an image [h, w, c] or a batch [b, h, w, c], got shape {shape_str(shape)}")


@register_class
class Rescaling(Layer):
    """``inputs * scale + offset`` (inputs cast to float32 first)."""

    def __init__(self, scale: float, offset: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for value, what in ((scale, "scale"), (offset, "offset")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"Rescaling: {what} must be a number, but got {value!r}")
        if scale is None:
            raise ValueError("Rescaling: the scale argument is required")
        self.scale = scale
        self.offset = offset if offset else 0

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """``inputs * scale + offset``."""
        x = get_exactly_one_tensor(inputs)
        if x.dtype != "float32":
            x = ops.cast(x, "float32")
        return ops.add(ops.mul(x, self.scale), self.offset)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"scale": self.scale, "offset": self.offset}
        config.update(super().get_config())
        return config


@register_class
class CenterCrop(Layer):
    """Crop the centre ``height x width`` of each image (resize up instead if the image is smaller)."""

    def __init__(self, height: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_size(height, "height", "CenterCrop")
        _check_size(width, "width", "CenterCrop")
        self.height = height
        self.width = width

    def _center_crop(self, x: Tensor, h_buffer: int, w_buffer: int, in_h: int, in_w: int) -> Tensor:
        batch = ops.stack([x]) if x.rank == 3 else x
        bound = [h_buffer / in_h, w_buffer / in_w, (self.height + h_buffer) / in_h, (self.width + w_buffer) / in_w]
        boxes = ops.tensor([bound] * batch.shape[0], [batch.shape[0], 4])
        box_ind = ops.range(0, batch.shape[0], 1, "int32")
        cropped = image.crop_and_resize(batch, boxes, box_ind, [self.height, self.width], "nearest")
        if x.rank == 3:
            cropped = ops.unstack(cropped)[0]
        return ops.cast(cropped, x.dtype)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The centre crops of ``inputs`` (same dtype)."""
        x = get_exactly_one_tensor(inputs)
        _check_image_shape(x.shape, self.name)
        in_h, in_w = x.shape[-3], x.shape[-2]
        h_buffer = math.floor((in_h - self.height) / 2) if in_h != self.height else 0
        w_buffer = 0
        if in_w != self.width:
            w_buffer = math.floor((in_w - self.width) / 2) or 1  # TF.js: a buffer of 0 becomes 1
        if h_buffer >= 0 and w_buffer >= 0:
            return self._center_crop(x, h_buffer, w_buffer, in_h, in_w)
        return ops.cast(image.resize_bilinear(x, [self.height, self.width]), x.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with ``height`` and ``width`` on axes -3 and -2."""
        shape = list(get_exactly_one_shape(input_shape))
        _check_image_shape(shape, self.name)
        shape[-3], shape[-2] = self.height, self.width
        return tuple(shape)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"height": self.height, "width": self.width}
        config.update(super().get_config())
        return config


@register_class
class Resizing(Layer):
    """Resize images to ``height x width`` with ``'bilinear'`` or ``'nearest'`` interpolation."""

    def __init__(
        self,
        height: int,
        width: int,
        interpolation: str | None = None,
        crop_to_aspect_ratio: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_size(height, "height", "Resizing")
        _check_size(width, "width", "Resizing")
        if interpolation and interpolation not in _INTERPOLATIONS:
            raise ValueError(
                f"Resizing: invalid interpolation {interpolation!r}; valid values are 'bilinear' and 'nearest'"
            )
        self.height = height
        self.width = width
        self.interpolation = interpolation or "bilinear"
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The resized images (``align_corners = not crop_to_aspect_ratio``, as TF.js 4.22)."""
        x = get_exactly_one_tensor(inputs)
        size = [self.height, self.width]
        if self.interpolation == "bilinear":
            return image.resize_bilinear(x, size, not self.crop_to_aspect_ratio)
        return image.resize_nearest_neighbor(x, size, not self.crop_to_aspect_ratio)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The input shape with ``height`` and ``width`` on axes -3 and -2."""
        shape = list(get_exactly_one_shape(input_shape))
        _check_image_shape(shape, self.name)
        shape[-3], shape[-2] = self.height, self.width
        return tuple(shape)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {
            "height": self.height,
            "width": self.width,
            "interpolation": self.interpolation,
            "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
        }
        config.update(super().get_config())
        return config


rescaling = layer_factory(Rescaling, "rescaling", **FACTORY_DOCS["rescaling"])
center_crop = layer_factory(CenterCrop, "center_crop", **FACTORY_DOCS["center_crop"])
resizing = layer_factory(Resizing, "resizing", **FACTORY_DOCS["resizing"])


__all__ = ["CenterCrop", "Rescaling", "Resizing", "center_crop", "rescaling", "resizing"]
