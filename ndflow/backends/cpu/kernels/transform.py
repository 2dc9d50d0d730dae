"""Joining, splitting, tiling and padding: SplitV, Unpack, Tile, Reverse, PadV2, MirrorPad, BroadcastTo,
BroadcastArgs, OneHot."""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared.numbers import js_number_as
from ..backend import CPUBackend
from .common import Output, copied, cpu_kernel, out, share, values_of


@cpu_kernel(kn.SplitV)
def split_v(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    sizes, axis = attrs["num_or_size_splits"], attrs["axis"]
    parts = np.split(values_of(backend, x), np.cumsum(sizes)[:-1], axis=axis)
    return [out(backend, p.copy(), x.dtype) for p in parts]


@cpu_kernel(kn.Unpack)
def unpack(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    moved = np.moveaxis(values_of(backend, x), attrs["axis"], 0)
    return [out(backend, copied(part), x.dtype) for part in moved]


@cpu_kernel(kn.Tile)
def tile(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    return out(backend, np.tile(values_of(backend, x), attrs["reps"]), x.dtype)


@cpu_kernel(kn.Reverse)
def reverse(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    dims = tuple(attrs["dims"])
    if not dims:
        return share(backend, x.data_id, x.shape, x.dtype)
    return out(backend, np.flip(values_of(backend, x), dims).copy(), x.dtype)


def pad_constant(values: np.ndarray, paddings: tuple, value: object) -> np.ndarray:
    """``values`` padded with ``value``: ``paddings[i] = (before, after)``, non-negative (what ``np.pad`` gives).

    A new array with ``values`` copied into its interior and only the padding filled (zeros come from a
    zeroed allocation): at the padded channels of a residual, ``np.pad``'s own Python costs more than the
    copy."""
    pairs = [(int(b), int(a)) for b, a in paddings]
    shape = tuple(d + b + a for d, (b, a) in zip(values.shape, pairs, strict=True))
    zero = values.dtype.kind in "iub" or (values.dtype.kind == "f" and not np.signbit(value))
    zero = zero and value == 0  # -0.0 is filled as it is
    y = np.zeros(shape, dtype=values.dtype) if zero else np.empty(shape, dtype=values.dtype)
    y[tuple(slice(b, b + d) for d, (b, _) in zip(values.shape, pairs, strict=True))] = values
    if not zero:
        for axis, (b, a) in enumerate(pairs):
            lead = (slice(None),) * axis
            if b:
                y[(*lead, slice(0, b))] = value
            if a:
                y[(*lead, slice(shape[axis] - a, None))] = value
    return y


@cpu_kernel(kn.PadV2)
def pad_v2(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    value = js_number_as(attrs["constant_value"], x.dtype)
    return out(backend, pad_constant(values_of(backend, x), attrs["paddings"], value), x.dtype)


@cpu_kernel(kn.MirrorPad)
def mirror_pad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    return out(backend, np.pad(values_of(backend, x), attrs["paddings"], mode=attrs["mode"]), x.dtype)


@cpu_kernel(kn.BroadcastTo)
def broadcast_to(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    return out(backend, np.broadcast_to(values_of(backend, x), tuple(attrs["shape"])).copy(), x.dtype)


@cpu_kernel(kn.BroadcastArgs)
def broadcast_args(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    s0, s1 = (values_of(backend, t).astype(np.int64) for t in inputs)
    n = max(s0.size, s1.size)
    a = np.concatenate([np.ones(n - s0.size, np.int64), s0])
    b = np.concatenate([np.ones(n - s1.size, np.int64), s1])
    if np.any((a != b) & (a != 1) & (b != 1)):
        raise ValueError(f"broadcast_args: shapes {s0.tolist()} and {s1.tolist()} could not be broadcast together")
    return out(backend, np.where(a == 1, b, a), "int32")


@cpu_kernel(kn.OneHot)
def one_hot(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """TF.js fills a Float32Array, then stores it as ``dtype``: on/off go through float32 first."""
    (indices,) = inputs
    dtype, depth = attrs["dtype"], attrs["depth"]
    on = js_number_as(float(np.float32(attrs["on_value"])), dtype)
    off = js_number_as(float(np.float32(attrs["off_value"])), dtype)
    hot = values_of(backend, indices)[..., None] == np.arange(depth, dtype=np.int32)
    return out(backend, np.where(hot, on, off), dtype)
