"""Normalization ops (TF.js converter category ``normalization``): batch norm, LRN, softmax, norms."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, axes, channels_first, mapper


@mapper("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset`` over the channel axis (NHWC, or
    NCHW, which TF.js ignores). Empty ``mean``/``variance`` (a training-mode graph) use the batch's
    moments. Only ``y`` is returned, as in TF.js."""
    x, scale, offset, mean, variance = inputs[:5]
    eps = attr_num(node, "epsilon", 1e-4)  # TF's default (TF.js assumes 0.001; models always set it)
    first = channels_first(node) and x.rank > 2
    if mean.size == 0 or variance.size == 0:
        moments = nf.moments(x, [0, *range(2, x.rank)] if first else list(range(x.rank - 1)))
        mean, variance = moments.mean, moments.variance
    if first:
        shape = [x.shape[1]] + [1] * (x.rank - 2)
        scale, offset, mean, variance = (nf.reshape(t, shape) for t in (scale, offset, mean, variance))
    return nf.batch_norm(x, mean, variance, offset, scale, eps)


@mapper("LRN")
def lrn(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Local response normalization over the depth axis."""
    return nf.local_response_normalization(
        inputs[0],
        int(attr_num(node, "depth_radius", 5)),
        attr_num(node, "bias", 1),
        attr_num(node, "alpha", 1),
        attr_num(node, "beta", 0.5),
    )


@mapper("Softmax")
def softmax(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Softmax over the last axis."""
    return nf.softmax(inputs[0])


@mapper("LogSoftmax")
def log_softmax(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Log-softmax over the last axis."""
    return nf.log_softmax(inputs[0])


@mapper("EuclideanNorm")
def euclidean_norm(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``sqrt(sum(x**2))`` over the axes given by the second input (any number of them; TF.js takes at
    most two), with ``keep_dims``."""
    x, axis = inputs
    return nf.sqrt(nf.sum(nf.square(x), axes(axis), bool(node.bool("keep_dims", False))))
