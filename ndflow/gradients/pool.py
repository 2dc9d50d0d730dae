"""Gradients of pooling: MaxPool, AvgPool, MaxPool3D, AvgPool3D, and of the 2-D/3-D *Grad kernels.

The forward kernels' attributes already hold the geometry (``filter_size``, ``strides``,
``dilations``, ``pad_before``, ``out_size``), and the *Grad kernels take them unchanged, so
``dim_rounding_mode``, 'same' borders and dilations are honoured (TF.js 4.22's gradients drop the
rounding mode and average 'same' borders over the whole filter).

The *Grad kernels are linear in ``dy`` and piecewise constant in ``x``: their own gradient for dy is
the transposed map (an avg pool of the upstream gradient; for max pooling, the upstream value at
each window's arg-max) and zero for ``x`` and ``y``. MaxPool3DGrad has no arg-max kernel to
transpose through and is not differentiated again.
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import gather, greater_equal, maximum, reshape, where, zeros_like


def _max_pool(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, y = saved
    return [lambda: ENGINE.run_kernel(kn.MaxPoolGrad, (dy, x, y), attrs)]


def _avg_pool(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: ENGINE.run_kernel(kn.AvgPoolGrad, (dy, x), attrs)]


def _max_pool3d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, y = saved
    return [lambda: ENGINE.run_kernel(kn.MaxPool3DGrad, (dy, x, y), attrs)]


def _avg_pool3d(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: ENGINE.run_kernel(kn.AvgPool3DGrad, (dy, x), attrs)]


register_gradient(kn.MaxPool, _max_pool, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.AvgPool, _avg_pool, inputs_to_save=[0])
register_gradient(kn.MaxPool3D, _max_pool3d, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.AvgPool3D, _avg_pool3d, inputs_to_save=[0])


# ----------------------------------------------------------------------------- second order


def _max_pool_grad(g: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # dx = MaxPoolGrad(dy, x, y) scatters dy to each window's first maximum; its transpose gathers.
    dy, x, y = saved

    def d_dy() -> Tensor:
        _, index = ENGINE.run_kernel(kn.MaxPoolWithArgmax, (x,), {**attrs, "include_batch_in_index": True})
        picked = gather(reshape(g, [-1]), reshape(maximum(index, 0), [-1]))
        return where(greater_equal(index, 0), reshape(picked, list(dy.shape)), 0.0)

    return [d_dy, lambda: zeros_like(x), lambda: zeros_like(y)]


def _avg_pool_grad(kernel: str):
    def grad_fn(g: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
        # dx = AvgPoolGrad(dy, x) is linear in dy and only reads x's shape; its transpose is the pool.
        (x,) = saved
        return [lambda: ENGINE.run_kernel(kernel, (g,), attrs), lambda: zeros_like(x)]

    return grad_fn


register_gradient(kn.MaxPoolGrad, _max_pool_grad, inputs_to_save=[0, 1, 2])
register_gradient(kn.AvgPoolGrad, _avg_pool_grad(kn.AvgPool), inputs_to_save=[1])
register_gradient(kn.AvgPool3DGrad, _avg_pool_grad(kn.AvgPool3D), inputs_to_save=[1])
