"""Gradients of shape and dtype changes: Reshape, ExpandDims, BroadcastTo, Identity, Cast, Transpose."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops import cast, clone, reshape, transpose, zeros_like
from ._util import unbroadcast


def _reshape(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: reshape(dy, list(x.shape))]


def _identity(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    # dy is an int32 seed where y itself is integer (grad of a cast to int32): TF.js's gradient is float.
    return [lambda: clone(dy) if dy.dtype == "float32" else cast(dy, "float32")]


def _transpose(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    perm = attrs["perm"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [lambda: transpose(dy, inverse)]


def _broadcast_to(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    (x,) = saved
    return [lambda: unbroadcast(dy, x.shape)]


def _constant_like(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    return [lambda: zeros_like(dy)]


register_gradient(kn.OnesLike, _constant_like)
register_gradient(kn.ZerosLike, _constant_like)
register_gradient(kn.BroadcastTo, _broadcast_to, inputs_to_save=[0])
register_gradient(kn.Reshape, _reshape, inputs_to_save=[0])
register_gradient(kn.ExpandDims, _reshape, inputs_to_save=[0])
register_gradient(kn.Identity, _identity)
register_gradient(kn.Cast, _identity)
register_gradient(kn.Transpose, _transpose)


def _comparison(dy: Tensor, saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """Comparisons give bool tensors, which carry no gradient; zeros, as TF.js's GreaterEqual."""
    a, b = saved
    return [
        lambda: zeros_like(a if a.dtype == "float32" else dy),
        lambda: zeros_like(b if b.dtype == "float32" else dy),
    ]


for _name in (kn.Equal, kn.NotEqual, kn.Greater, kn.GreaterEqual, kn.Less, kn.LessEqual):
    register_gradient(_name, _comparison, inputs_to_save=[0, 1])
