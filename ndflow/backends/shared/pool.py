"""Pooling geometry shared by the backends: the op computes it (``ndflow/ops/pool_util.py``) and passes it in
the attributes ``filter_size``, ``strides``, ``dilations``, ``pad_before`` and ``out_size``; these read it back
and derive the frame (the span that holds every window), its taps and the output shape over channels-last tensors
``(batch, *spatial, channels)``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

Geometry = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def pool_geometry(attrs: dict) -> Geometry:
    """(filter, strides, dilations, pad_before, out_size)."""
    return (
        tuple(attrs["filter_size"]),
        tuple(attrs["strides"]),
        tuple(attrs["dilations"]),
        tuple(attrs["pad_before"]),
        tuple(attrs["out_size"]),
    )


def frame_extent(geo: Geometry) -> tuple[int, ...]:
    """Frame length per spatial dim: the span from the first window's start to the last one's end."""
    f, s, d, _, o = geo
    return tuple((oi - 1) * si + (fi - 1) * di + 1 for fi, si, di, oi in zip(f, s, d, o, strict=True))


def pool_out_shape(x_shape: tuple[int, ...], geo: Geometry) -> tuple[int, ...]:
    """The output's shape: the input's batch and channels around the geometry's ``out_size``."""
    return (x_shape[0], *geo[4], x_shape[-1])


def frame_taps(geo: Geometry) -> Iterator[tuple[int, tuple[slice, ...]]]:
    """(flat tap index, frame slice holding that tap of every window), taps in row-major order."""
    f, s, d, _, o = geo
    for t, tap in enumerate(itertools.product(*(range(fi) for fi in f))):
        spatial = tuple(
            slice(k * di, k * di + (oi - 1) * si + 1, si) for k, si, di, oi in zip(tap, s, d, o, strict=True)
        )
        yield t, (slice(None), *spatial, slice(None))
