"""Image ops (TF.js converter category ``image``): resizing, crop-and-resize, projective transforms."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, ints, lower_str, mapper, num


@mapper("ResizeBilinear", "ResizeNearestNeighbor")
def resize(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Resize NHWC ``images`` to ``size`` (``[new_height, new_width]``)."""
    images, size = inputs
    fn = nf.image.resize_bilinear if node.op == "ResizeBilinear" else nf.image.resize_nearest_neighbor
    h, w = ints(size)[:2]
    return fn(images, [h, w], bool(node.bool("align_corners", False)), bool(node.bool("half_pixel_centers", False)))


@mapper("CropAndResize")
def crop_and_resize(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Crops of ``image`` at normalized ``boxes``, resized to ``crop_size`` (bilinear or nearest)."""
    image, boxes, box_ind, crop_size = inputs
    method = lower_str(node, "method", "bilinear")
    extrapolation = attr_num(node, "extrapolation_value", 0)
    return nf.image.crop_and_resize(image, boxes, box_ind, ints(crop_size)[:2], method, extrapolation)


@mapper("ImageProjectiveTransformV3")
def projective_transform(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Each image mapped through its projective transform (8 numbers per image)."""
    images, transforms, output_shape, fill_value = inputs
    interpolation = lower_str(node, "interpolation", "nearest")
    fill_mode = lower_str(node, "fill_mode", "constant")
    return nf.image.transform(images, transforms, interpolation, fill_mode, num(fill_value), ints(output_shape))
