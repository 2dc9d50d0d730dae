"""Normalization: batch_norm (+ 2d/3d/4d), local_response_normalization, moments, log_softmax."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core import kernel_names as kn
from ..core.broadcast_util import broadcasts_to
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, normalize_axes, normalize_axis, to_tensor


class Moments(NamedTuple):
    """``moments``' result: mean and variance over the reduced axes."""

    mean: Tensor
    variance: Tensor


def _real(t: Tensor, op: str, arg: str) -> None:
    if t.dtype in ("string", "complex64"):
        raise TypeError(f"{op}: argument '{arg}' must be a real numeric tensor, got {t.dtype}")


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` (leading 1-dims aside) broadcasts to ``target`` without growing it."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return broadcasts_to(shape[lead:], target)


def _batch_norm(
    op: str,
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float | None,
    ranks: tuple[int, ...] | None,
) -> Tensor:
    eps = 0.001 if variance_epsilon is None else float(variance_epsilon)
    given = {"x": x, "mean": mean, "variance": variance, "offset": offset, "scale": scale}
    tensors: dict[str, Tensor] = {}
    try:
        for name, value in given.items():
            if value is not None or name in ("x", "mean", "variance"):
                tensors[name] = to_tensor(value, name, op)
                _real(tensors[name], op, name)
        t = tensors["x"]
        if ranks is not None:
            if t.rank != ranks[0]:
                raise ValueError(f"{op}: argument 'x' must be rank {ranks[0]}, got rank {t.rank}")
            for name, p in tensors.items():
                if name != "x" and p.rank not in (ranks[0], 1):
                    raise ValueError(f"{op}: argument '{name}' must be rank {ranks[0]} or 1, got rank {p.rank}")
        m = tensors["mean"]
        for name in ("variance", "offset", "scale"):
            if name in tensors and tensors[name].rank != m.rank:
                raise ValueError(f"{op}: mean and {name} must have equal ranks, got {m.rank} and {tensors[name].rank}")
        for name, p in tensors.items():
            if name != "x" and not _broadcasts_to(p.shape, t.shape):
                raise ValueError(
                    f"{op}: argument '{name}' of shape {list(p.shape)} does not broadcast to x's shape {list(t.shape)}"
                )
        inputs = [t, m, tensors["variance"]] + [tensors[n] for n in ("offset", "scale") if n in tensors]
        attrs = {"variance_epsilon": eps, "has_offset": "offset" in tensors, "has_scale": "scale" in tensors}
        return ENGINE.run_kernel(kn.FusedBatchNorm, tuple(inputs), attrs)
    finally:
        for name, p in tensors.items():
            if p is not given[name]:
                p.dispose()


def batch_norm(
    x: TensorLike,
    mean: TensorLike,
    variance: TensorLike,
    offset: TensorLike | None = None,
    scale: TensorLike | None = None,
    variance_epsilon: float | None = None,
) -> Tensor:
    """``offset + (x - mean) * scale / sqrt(variance + variance_epsilon)`` (epsilon 0.001 by default);
    mean, variance, offset and scale broadcast to x (one value per channel when rank 1)."""
    return _batch_norm("batch_norm", x, mean, variance, offset, scale, variance_epsilon, None)


def batch_norm2d(
    x: TensorLike,
    mean: TensorLike,
    variance: TensorLike,
    offset: TensorLike | None = None,
    scale: TensorLike | None = None,
    variance_epsilon: float | None = None,
) -> Tensor:
    """``batch_norm`` of a rank-2 x (parameters rank 2 or 1)."""
    return _batch_norm("batch_norm2d", x, mean, variance, offset, scale, variance_epsilon, (2,))


def batch_norm3d(
    x: TensorLike,
    mean: TensorLike,
    variance: TensorLike,
    offset: TensorLike | None = None,
    scale: TensorLike | None = None,
    variance_epsilon: float | None = None,
) -> Tensor:
    """``batch_norm`` of a rank-3 x (parameters rank 3 or 1)."""
    return _batch_norm("batch_norm3d", x, mean, variance, offset, scale, variance_epsilon, (3,))


def batch_norm4d(
    x: TensorLike,
    mean: TensorLike,
    variance: TensorLike,
    offset: TensorLike | None = None,
    scale: TensorLike | None = None,
    variance_epsilon: float | None = None,
) -> Tensor:
    """``batch_norm`` of a rank-4 x (parameters rank 4 or 1)."""
    return _batch_norm("batch_norm4d", x, mean, variance, offset, scale, variance_epsilon, (4,))


def _integer(value: Any, op: str, arg: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{op}: argument '{arg}' must be an integer, got {value!r}")
    return int(value)


def local_response_normalization(
    x: TensorLike, depth_radius: int = 5, bias: float = 1, alpha: float = 1, beta: float = 0.5
) -> Tensor:
    """Each value divided by ``(bias + alpha * sum of squares of the channels within depth_radius) ** beta``."""
    op = "local_response_normalization"
    radius = _integer(depth_radius, op, "depth_radius")
    attrs = {"depth_radius": radius, "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}
    with converted(x, "x", op) as t:
        _real(t, op, "x")
        if t.rank == 4:
            return ENGINE.run_kernel(kn.LRN, (t,), attrs)
        if t.rank != 3:
            raise ValueError(f"{op}: argument 'x' must be rank 3 or 4, got rank {t.rank}")
        batched = ENGINE.run_kernel(kn.Reshape, (t,), {"shape": (1, *t.shape)})
        try:
            res = ENGINE.run_kernel(kn.LRN, (batched,), attrs)
        finally:
            batched.dispose()
        try:
            return ENGINE.run_kernel(kn.Reshape, (res,), {"shape": t.shape})
        finally:
            res.dispose()


def moments(x: TensorLike, axis: int | Sequence[int] | None = None, keep_dims: bool = False) -> Moments:
    """Mean and variance of ``x`` over ``axis`` (all axes by default), as float32."""
    from .arithmetic import sub
    from .reduction import mean
    from .shape import cast, reshape
    from .unary import square

    op = "moments"
    with converted(x, "x", op) as t:
        _real(t, op, "x")
        axes = normalize_axes(axis, t.rank, op)

        def run() -> Moments:
            x_mean = mean(t, axes, keep_dims)
            kept = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
            centred = sub(cast(t, "float32"), reshape(x_mean, kept))
            return Moments(x_mean, mean(square(centred), axes, keep_dims))

        return ENGINE.tidy(None, run, (), {})


def log_softmax(logits: TensorLike, axis: int = -1) -> Tensor:
    """``logits - log(sum(exp(logits)))`` along ``axis``, computed stably, as float32 (any axis)."""
    op = "log_softmax"
    with converted(logits, "logits", op) as t:
        _real(t, op, "logits")
        if t.rank == 0:
            raise ValueError(f"{op}: argument 'logits' must have rank >= 1, got a scalar")
        return ENGINE.run_kernel(kn.LogSoftmax, (t,), {"axis": normalize_axis(axis, t.rank, op)})


__all__ = [
    "batch_norm", "batch_norm2d", "batch_norm3d", "batch_norm4d",
    "local_response_normalization", "moments", "log_softmax",
]  # fmt: skip

CHAINED = [batch_norm, local_response_normalization, log_softmax]  # also Tensor methods, as in TF.js
