"""Gradients of the resize kernels (ResizeBilinear, ResizeNearestNeighbor) and of their *Grad kernels.

The *Grad kernels honour ``half_pixel_centers`` and every image of a batch (TF.js 4.22's ignore the
first and mix up the images after the first). A *Grad kernel is linear in ``dy`` and only reads
the images' shape, so its own gradient is the forward resize of the upstream gradient (to ``dy``'s
size, which is the forward's ``size`` attribute) and zero for the images.
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import zeros_like


def _resize(grad_kernel: str):
    def grad_fn(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        (images,) = saved
        return [lambda: ENGINE.run_kernel(grad_kernel, (images, dy), attrs)]

    return grad_fn


def _resize_grad(kernel: str):
    def grad_fn(g: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        (images,) = saved
        return [lambda: zeros_like(images), lambda: ENGINE.run_kernel(kernel, (g,), attrs)]

    return grad_fn


register_gradient(kn.ResizeBilinear, _resize(kn.ResizeBilinearGrad), inputs_to_save=[0])
register_gradient(kn.ResizeNearestNeighbor, _resize(kn.ResizeNearestNeighborGrad), inputs_to_save=[0])
register_gradient(kn.ResizeBilinearGrad, _resize_grad(kn.ResizeBilinear), inputs_to_save=[0])
register_gradient(kn.ResizeNearestNeighborGrad, _resize_grad(kn.ResizeNearestNeighbor), inputs_to_save=[0])
