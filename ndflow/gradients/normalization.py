"""Gradients of FusedBatchNorm, LRN and LogSoftmax.

Batch-norm parameters broadcast against x (a leading run of 1-dims aside), so each parameter's
gradient is summed back to its own shape, whatever its rank (TF.js 4.22 handles a rank-1 mean
only with a 4-D x and reshapes the others without summing).
"""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import add, cast, exp, mul, neg, rsqrt, sub, sum
from ._util import unbroadcast


def _float(t: Tensor) -> Tensor:
    return t if t.dtype == "float32" else cast(t, "float32")


def _batch_norm(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # y = offset + (x - mean) * scale * r, with r = (variance + eps) ** -0.5
    x, mean, variance, *rest = saved
    offset = rest.pop(0) if attrs.get("has_offset") else None
    scale = rest.pop(0) if attrs.get("has_scale") else None
    eps = attrs["variance_epsilon"]

    def r() -> Tensor:
        return rsqrt(add(_float(variance), eps))

    def dy_scale() -> Tensor:
        return dy if scale is None else mul(dy, _float(scale))

    def centred() -> Tensor:
        return sub(_float(x), _float(mean))

    def d_x() -> Tensor:
        return unbroadcast(mul(dy_scale(), r()), x.shape)

    def d_mean() -> Tensor:
        return unbroadcast(neg(mul(dy_scale(), r())), mean.shape)

    def d_variance() -> Tensor:
        rv = r()
        return unbroadcast(mul(mul(dy_scale(), centred()), mul(mul(rv, mul(rv, rv)), -0.5)), variance.shape)

    grads = [d_x, d_mean, d_variance]
    if offset is not None:
        grads.append(lambda: unbroadcast(dy, offset.shape))
    if scale is not None:
        grads.append(lambda: unbroadcast(mul(mul(dy, centred()), r()), scale.shape))
    return grads


def _lrn(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    x, y = saved
    return [lambda: ENGINE.run_kernel(kn.LRNGrad, (x, y, dy), attrs)]


def _log_softmax(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (y,) = saved
    return [lambda: sub(dy, mul(sum(dy, [attrs["axis"]], True), exp(y)))]


register_gradient(kn.FusedBatchNorm, _batch_norm, save_all_inputs=True)
register_gradient(kn.LRN, _lrn, inputs_to_save=[0], outputs_to_save=[True])
register_gradient(kn.LogSoftmax, _log_softmax, outputs_to_save=[True])
