"""Joining, splitting, tiling and padding: SplitV, Unpack, Tile, Reverse, PadV2, MirrorPad, BroadcastTo,
BroadcastArgs, OneHot."""

from __future__ import annotations

import numpy as np
import torch

from ....core import kernel_names as kn
from ...shared.numbers import js_number_as as shared_js_number_as
from ..backend import TorchBackend
from .common import Output, from_numpy, host, out, share, torch_dtype, torch_kernel, values_of


def js_number_as(value: float, dtype: str) -> float | int | bool:
    """The shared :func:`~ndflow.backends.shared.numbers.js_number_as`, a Python float for float32 (torch's
    fill values)."""
    stored = shared_js_number_as(value, dtype)
    return float(stored) if dtype == "float32" else stored


def pad(v: torch.Tensor, paddings: list, value: object = 0) -> torch.Tensor:
    """``v`` with ``paddings[i] = (before, after)`` values of ``value`` around axis ``i``."""
    shape = [b + d + a for d, (b, a) in zip(v.shape, paddings, strict=True)]
    result = torch.full(shape, value, dtype=v.dtype, device=v.device)
    result[tuple(slice(b, b + d) for d, (b, _) in zip(v.shape, paddings, strict=True))] = v
    return result


@torch_kernel(kn.SplitV, strings=True)
def split_v(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    sizes, axis = list(attrs["num_or_size_splits"]), attrs["axis"]
    parts = torch.split(values_of(backend, x), sizes, dim=axis)
    return [out(backend, p.clone(memory_format=torch.contiguous_format), x.dtype) for p in parts]


@torch_kernel(kn.Unpack, strings=True)
def unpack(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    parts = values_of(backend, x).unbind(attrs["axis"])
    return [out(backend, p.clone(memory_format=torch.contiguous_format), x.dtype) for p in parts]


@torch_kernel(kn.Tile, strings=True)
def tile(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    return out(backend, values_of(backend, x).tile(tuple(attrs["reps"])), x.dtype)


@torch_kernel(kn.Reverse, strings=True)
def reverse(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dims = tuple(attrs["dims"])
    if not dims:
        return share(backend, x.data_id, x.shape, x.dtype)
    return out(backend, torch.flip(values_of(backend, x), dims), x.dtype, x.shape)


@torch_kernel(kn.PadV2, strings=True)
def pad_v2(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    value = js_number_as(attrs["constant_value"], x.dtype)
    return out(backend, pad(values_of(backend, x), [tuple(p) for p in attrs["paddings"]], value), x.dtype)


@torch_kernel(kn.MirrorPad, strings=True)
def mirror_pad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """Reflect (without the edge) or symmetric (with it) padding: one gather per padded axis."""
    (x,) = inputs
    paddings = [tuple(p) for p in attrs["paddings"]]
    if not any(b or a for b, a in paddings):
        return share(backend, x.data_id, x.shape, x.dtype)
    v = values_of(backend, x)
    for axis, (before, after) in enumerate(paddings):
        if before or after:
            index = np.pad(np.arange(x.shape[axis]), (before, after), mode=attrs["mode"])
            v = v.index_select(axis, from_numpy(backend, index))
    return out(backend, v, x.dtype)


@torch_kernel(kn.BroadcastTo, strings=True)
def broadcast_to(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    shape = tuple(attrs["shape"])
    return out(
        backend, values_of(backend, x).expand(shape).clone(memory_format=torch.contiguous_format), x.dtype, shape
    )


@torch_kernel(kn.BroadcastArgs)
def broadcast_args(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    s0, s1 = (host(backend, t).astype(np.int64).reshape(-1) for t in inputs)
    n = max(s0.size, s1.size)
    a = np.concatenate([np.ones(n - s0.size, np.int64), s0])
    b = np.concatenate([np.ones(n - s1.size, np.int64), s1])
    if np.any((a != b) & (a != 1) & (b != 1)):
        raise ValueError(f"broadcast_args: shapes {s0.tolist()} and {s1.tolist()} could not be broadcast together")
    return out(backend, from_numpy(backend, np.where(a == 1, b, a).astype(np.int32)), "int32", (n,))


@torch_kernel(kn.OneHot)
def one_hot(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """TF.js fills a Float32Array, then stores it as ``dtype``: on/off go through float32 first."""
    (indices,) = inputs
    dtype, depth = attrs["dtype"], attrs["depth"]
    on = js_number_as(float(np.float32(attrs["on_value"])), dtype)
    off = js_number_as(float(np.float32(attrs["off_value"])), dtype)
    idx = values_of(backend, indices)
    hot = idx[..., None] == torch.arange(depth, dtype=idx.dtype, device=idx.device)
    target = torch_dtype(dtype)
    on_t = torch.tensor(on, dtype=target, device=idx.device)
    off_t = torch.tensor(off, dtype=target, device=idx.device)
    return out(backend, torch.where(hot, on_t, off_t), dtype, indices.shape + (depth,))
