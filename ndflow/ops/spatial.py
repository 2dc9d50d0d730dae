"""Padding and spatial rearrangement: pad, mirror_pad, space_to_batch_nd, batch_to_space_nd, depth_to_space."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted
from .transform import _as_op, _int_arg, _int_list, _numeric, _pairs

Pairs = Sequence[Sequence[int]]

# ----------------------------------------------------------------------------- padding


def _constant(value: Any, op: str) -> float:
    if not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: argument 'constant_value' must be a number, got {type(value).__name__}")
    return float(value)


def pad(x: TensorLike, paddings: Pairs, constant_value: float = 0) -> Tensor:
    """``x`` padded with ``constant_value``: ``paddings[i] = [before, after]`` elements on axis ``i``."""
    constant_value = _constant(constant_value, "pad")
    with converted(x, "x", "pad") as t:
        _numeric(t, "pad")
        if t.rank == 0:
            raise ValueError("pad: cannot pad a scalar; pass a tensor of rank >= 1")
        pairs = _pairs(paddings, t.rank, "pad", "paddings")
        return ENGINE.run_kernel(kn.PadV2, (t,), {"paddings": tuple(pairs), "constant_value": constant_value})


def pad_checked(x: Tensor, pairs: tuple[tuple[int, int], ...], constant_value: float) -> Tensor:
    """``pad`` for callers holding a tensor and pairs that ``check_pairs`` returned (the graph-model mapper
    checks a node's constant paddings once): only what depends on ``x`` is checked here."""
    if type(x) is not Tensor or x.dtype == "string" or x.rank != len(pairs) or x.rank == 0:
        return pad(x, pairs, constant_value)  # the slow path, for its errors
    constant_value = _constant(constant_value, "pad")
    return ENGINE.run_kernel(kn.PadV2, (x,), {"paddings": pairs, "constant_value": constant_value})


def check_pairs(paddings: Pairs) -> tuple[tuple[int, int], ...]:
    """``paddings`` checked as ``pad`` does (pairs of non-negative ints), as a tuple for :func:`pad_checked`."""
    n = len(paddings) if isinstance(paddings, list | tuple) else 0
    return tuple(_pairs(paddings, n, "pad", "paddings"))


def _pad_nd(x: Any, paddings: Any, constant_value: float, rank: int) -> Tensor:
    op = f"pad{rank}d"
    if rank == 1:
        if not isinstance(paddings, list | tuple) or len(paddings) != 2:
            raise ValueError(f"pad1d: argument 'paddings' must be a pair [before, after], got {paddings!r}")
        paddings = [paddings]
    elif (
        not isinstance(paddings, list | tuple)
        or len(paddings) != rank
        or not all(isinstance(p, list | tuple) and len(p) == 2 for p in paddings)
    ):
        raise ValueError(f"{op}: argument 'paddings' must be {rank} pairs [before, after], got {paddings!r}")
    with _as_op(op, "pad"):
        return pad(x, paddings, constant_value)


def pad1d(x: TensorLike, paddings: Sequence[int], constant_value: float = 0) -> Tensor:
    """``pad`` of a rank-1 tensor with one pair ``[before, after]``."""
    return _pad_nd(x, paddings, constant_value, 1)


def pad2d(x: TensorLike, paddings: Pairs, constant_value: float = 0) -> Tensor:
    """``pad`` of a rank-2 tensor with two pairs."""
    return _pad_nd(x, paddings, constant_value, 2)


def pad3d(x: TensorLike, paddings: Pairs, constant_value: float = 0) -> Tensor:
    """``pad`` of a rank-3 tensor with three pairs."""
    return _pad_nd(x, paddings, constant_value, 3)


def pad4d(x: TensorLike, paddings: Pairs, constant_value: float = 0) -> Tensor:
    """``pad`` of a rank-4 tensor with four pairs."""
    return _pad_nd(x, paddings, constant_value, 4)


def mirror_pad(x: TensorLike, paddings: Pairs, mode: str) -> Tensor:
    """``x`` padded with its mirror image: 'reflect' leaves out the edge, 'symmetric' repeats it."""
    if mode not in ("reflect", "symmetric"):
        raise ValueError(f"mirror_pad: argument 'mode' must be 'reflect' or 'symmetric', got {mode!r}")
    with converted(x, "x", "mirror_pad") as t:
        _numeric(t, "mirror_pad")
        if t.rank == 0:
            raise ValueError("mirror_pad: cannot pad a scalar; pass a tensor of rank >= 1")
        pairs = _pairs(paddings, t.rank, "mirror_pad", "paddings")
        offset = 1 if mode == "reflect" else 0
        for i, (p, dim) in enumerate(zip(pairs, t.shape, strict=True)):
            if max(p) > dim - offset:
                raise ValueError(
                    f"mirror_pad: paddings {list(p)} on axis {i} must be <= {dim - offset} in {mode} mode "
                    f"(x.shape {list(t.shape)})"
                )
        return ENGINE.run_kernel(kn.MirrorPad, (t,), {"paddings": tuple(pairs), "mode": mode})


# ----------------------------------------------------------------------------- space, batch and depth


def space_to_batch_nd(x: TensorLike, block_shape: Sequence[int], paddings: Pairs) -> Tensor:
    """Zero-pad the spatial dims (1..M) of ``x`` and move ``block_shape`` blocks of them into the batch."""
    block = _int_list(block_shape, "space_to_batch_nd", "block_shape", 1)
    with converted(x, "x", "space_to_batch_nd") as t:
        _numeric(t, "space_to_batch_nd")
        m = len(block)
        if t.rank < 1 + m:
            raise ValueError(f"space_to_batch_nd: x must have rank > {m} (len(block_shape)), got rank {t.rank}")
        pairs = _pairs(paddings, m, "space_to_batch_nd", "paddings")
        for i, (b, p) in enumerate(zip(block, pairs, strict=True)):
            if (t.shape[i + 1] + p[0] + p[1]) % b:
                raise ValueError(
                    f"space_to_batch_nd: spatial dim {i + 1} of size {t.shape[i + 1]} padded by {list(p)} must be "
                    f"divisible by block_shape[{i}] = {b} (x.shape {list(t.shape)})"
                )
        return ENGINE.run_kernel(kn.SpaceToBatchND, (t,), {"block_shape": tuple(block), "paddings": tuple(pairs)})


def batch_to_space_nd(x: TensorLike, block_shape: Sequence[int], crops: Pairs) -> Tensor:
    """The inverse of ``space_to_batch_nd``: move batch blocks back into the spatial dims, then crop."""
    block = _int_list(block_shape, "batch_to_space_nd", "block_shape", 1)
    with converted(x, "x", "batch_to_space_nd") as t:
        _numeric(t, "batch_to_space_nd")
        m = len(block)
        if t.rank < 1 + m:
            raise ValueError(f"batch_to_space_nd: x must have rank > {m} (len(block_shape)), got rank {t.rank}")
        pairs = _pairs(crops, m, "batch_to_space_nd", "crops")
        prod = math.prod(block)
        if t.shape[0] % prod:
            raise ValueError(
                f"batch_to_space_nd: the batch {t.shape[0]} must be divisible by the product of block_shape "
                f"{block} = {prod}"
            )
        for i, (b, c) in enumerate(zip(block, pairs, strict=True)):
            if c[0] + c[1] > t.shape[i + 1] * b:
                raise ValueError(
                    f"batch_to_space_nd: crops {list(c)} exceed spatial dim {i + 1} of size {t.shape[i + 1] * b}"
                )
        return ENGINE.run_kernel(kn.BatchToSpaceND, (t,), {"block_shape": tuple(block), "crops": tuple(pairs)})


def depth_to_space(x: TensorLike, block_size: int, data_format: str = "NHWC") -> Tensor:
    """Move ``block_size x block_size`` blocks of channels of a rank-4 float32 ``x`` into height and width."""
    block_size = _int_arg(block_size, "depth_to_space", "block_size")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"depth_to_space: argument 'data_format' must be 'NHWC' or 'NCHW', got {data_format!r}")
    with converted(x, "x", "depth_to_space", "float32") as t:
        if t.dtype != "float32":
            raise TypeError(f"depth_to_space: argument 'x' must be a float32 tensor, got {t.dtype}")
        if t.rank != 4:
            raise ValueError(f"depth_to_space: argument 'x' must be a rank-4 tensor, got shape {list(t.shape)}")
        if block_size <= 1:
            raise ValueError(f"depth_to_space: argument 'block_size' must be > 1, got {block_size}")
        depth = t.shape[3] if data_format == "NHWC" else t.shape[1]
        if depth % (block_size * block_size):
            raise ValueError(
                f"depth_to_space: the depth {depth} must be divisible by block_size^2 = {block_size * block_size} "
                f"(x.shape {list(t.shape)}, {data_format})"
            )
        return ENGINE.run_kernel(kn.DepthToSpace, (t,), {"block_size": block_size, "data_format": data_format})


__all__ = [
    "pad", "pad1d", "pad2d", "pad3d", "pad4d", "mirror_pad",
    "space_to_batch_nd", "batch_to_space_nd", "depth_to_space",
]  # fmt: skip

CHAINED = [pad, mirror_pad, space_to_batch_nd, batch_to_space_nd, depth_to_space]  # also Tensor methods
