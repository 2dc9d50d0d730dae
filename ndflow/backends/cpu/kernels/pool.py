"""Pooling: MaxPool, AvgPool, MaxPool3D, AvgPool3D, MaxPoolWithArgmax and the *Grad kernels.

One engine for 2D and 3D over channels-last tensors ``(batch, *spatial, channels)``. The op
computes the geometry (``ndflow/ops/pool_util.py``) and passes it in the attributes
``filter_size``, ``strides``, ``dilations``, ``pad_before`` and ``out_size``; the gradient kernels
take the forward attributes unchanged.

The input is laid into a *frame*: an array that holds every window, filled outside the input
(NaN for max, which no comparison picks; 0 for sums). Windows are then reduced with a static loop
over the filter taps, each tap one strided slice of the frame; nothing loops over pixels. With
numba, float32 MaxPool and AvgPool run as one compiled loop instead (same results).

TF.js semantics kept: max ignores NaN (a window with no number gives -Infinity, stored as 0 in
int32/bool outputs); the 2D kernels return the input unchanged for a 1x1 filter that keeps the
shape (so NaN survives there); avg divides by the number of input positions in the window (NaN
for an empty window in 2D, 0 in 3D). Arg-max positions: the first maximum in 2D, the last in 3D.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from ....core import kernel_names as kn
from ...shared.pool import Geometry, frame_extent, frame_taps, pool_geometry, pool_out_shape
from ..backend import CPUBackend
from ..numba import grads as jit_grads
from ..numba import ops as jit_ops
from ..plans import bound as jit_bound
from .common import Output, cpu_kernel, out, share, values_of


def _overlap(n: int, before: int, extent: int) -> tuple[int, int]:
    """Input index range [i0, i1) that lies inside the frame (frame index = input index + before)."""
    i0 = max(0, -before)
    i1 = min(n, extent - before)
    return i0, max(i0, i1)


def _regions(in_size: tuple[int, ...], geo: Geometry) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Matching slices (input side, frame side) of the part of the input inside the frame."""
    src, dst = [slice(None)], [slice(None)]
    for n, before, extent in zip(in_size, geo[3], frame_extent(geo), strict=True):
        i0, i1 = _overlap(n, before, extent)
        src.append(slice(i0, i1))
        dst.append(slice(i0 + before, i1 + before))
    return tuple(src + [slice(None)]), tuple(dst + [slice(None)])


def _frame(values: np.ndarray, geo: Geometry, fill: float, dtype: np.dtype) -> np.ndarray:
    shape = (values.shape[0], *frame_extent(geo), values.shape[-1])
    frame = np.full(shape, fill, dtype=dtype)
    src, dst = _regions(values.shape[1:-1], geo)
    frame[dst] = values[src]
    return frame


def _work_dtype(values: np.ndarray) -> np.dtype:
    return values.dtype if values.dtype == np.float32 else np.dtype(np.float64)


def store_like_tfjs(values: np.ndarray, dtype: str) -> np.ndarray:
    """Float results as TF.js's typed arrays keep them: int32 truncates (0 for NaN/±Inf), bool is
    a Uint8Array (truncation modulo 256, then non-zero)."""
    if dtype == "float32":
        return values.astype(np.float32, copy=False)
    finite = np.where(np.isfinite(values), np.trunc(values), 0)
    if dtype == "int32":
        return np.fmod(finite, 2.0**32).astype(np.int64).astype(np.int32)
    return np.fmod(finite, 256.0) != 0


def max_values(values: np.ndarray, geo: Geometry) -> np.ndarray:
    """Window maxima ignoring NaN; -inf where a window holds no number."""
    frame = _frame(values, geo, np.nan, _work_dtype(values))
    best = np.full(pool_out_shape(values.shape, geo), -np.inf, dtype=frame.dtype)
    for _, sl in frame_taps(geo):
        np.fmax(best, frame[sl], out=best)
    return best


def max_positions(values: np.ndarray, geo: Geometry, last: bool) -> tuple[np.ndarray, np.ndarray]:
    """(maxima, flat tap index of the maximum in each window, -1 where none); ``last`` picks the
    last of equal maxima (``>=``, TF.js 3D) instead of the first (``>``, TF.js 2D)."""
    frame = _frame(values, geo, np.nan, _work_dtype(values))
    shape = pool_out_shape(values.shape, geo)
    best = np.full(shape, -np.inf, dtype=frame.dtype)
    pos = np.full(shape, -1, dtype=np.int32)
    compare = np.greater_equal if last else np.greater
    for t, sl in frame_taps(geo):
        tap = frame[sl]
        better = compare(tap, best)
        np.copyto(best, tap, where=better)
        np.copyto(pos, t, where=better)
    return best, pos


def _counts(in_size: tuple[int, ...], geo: Geometry) -> np.ndarray:
    """Number of input positions in each window, shaped (1, *out, 1) (separable per dim)."""
    f, s, d, before, o = geo
    total = np.ones((1,) * (len(o) + 2), dtype=np.float64)
    for axis, (n, fi, si, di, b, oi) in enumerate(zip(in_size, f, s, d, before, o, strict=True)):
        idx = np.arange(oi)[:, None] * si - b + np.arange(fi)[None, :] * di
        count = ((idx >= 0) & (idx < n)).sum(axis=1).astype(np.float64)
        shape = [1] * (len(o) + 2)
        shape[axis + 1] = oi
        total = total * count.reshape(shape)
    return total


def _axis_taps(geo: Geometry, axis: int, ndim: int) -> Iterator[tuple[slice, ...]]:
    """Slices of one spatial ``axis`` (0-based) holding each tap of every window along it."""
    f, s, d, _, o = geo
    for k in range(f[axis]):
        sl = [slice(None)] * ndim
        sl[axis + 1] = slice(k * d[axis], k * d[axis] + (o[axis] - 1) * s[axis] + 1, s[axis])
        yield tuple(sl)


def _box_sum(frame: np.ndarray, geo: Geometry) -> np.ndarray:
    """Window sums, one spatial axis at a time (a window is a box: f_h + f_w adds, not f_h * f_w)."""
    acc = frame
    for axis in range(len(geo[0])):
        taps = iter(_axis_taps(geo, axis, acc.ndim))
        total = acc[next(taps)].copy()
        for sl in taps:
            total += acc[sl]
        acc = total
    return acc


def avg_values(values: np.ndarray, geo: Geometry, empty_is_zero: bool) -> np.ndarray:
    """Window means over the input positions only (float64)."""
    acc = _box_sum(_frame(values, geo, 0.0, np.dtype(np.float64)), geo)
    count = _counts(values.shape[1:-1], geo)
    if empty_is_zero:
        count = np.maximum(count, 1)
    return acc / count


def _scatter(x_shape: tuple[int, ...], geo: Geometry, per_tap) -> np.ndarray:
    """dx: each tap's contribution ``per_tap(t)`` (shape of dy) added back at the window positions."""
    dframe = np.zeros((x_shape[0], *frame_extent(geo), x_shape[-1]), dtype=np.float64)
    for t, sl in frame_taps(geo):
        dframe[sl] += per_tap(t)
    dx = np.zeros(x_shape, dtype=np.float64)
    src, dst = _regions(x_shape[1:-1], geo)
    dx[src] = dframe[dst]
    return dx


def _non_overlapping(geo: tuple) -> bool:
    f, s, d, _, _ = geo
    return all(di == 1 and si >= fi for fi, si, di in zip(f, s, d, strict=True))


def fast_max_grad(x: np.ndarray, dy: np.ndarray, geo: tuple, last: bool) -> np.ndarray | None:
    """dx of a max pool as float32, or None where this path does not apply (overlap, dilation, non-float32)."""
    if x.dtype != np.float32 or not _non_overlapping(geo) or dy.size == 0 or x.size == 0:
        return None
    if len(geo[0]) == 2:
        compiled = jit_grads.max_pool_grad(x, dy, geo, last)
        if compiled is not None:
            return compiled
    f, s, _, before, o = geo
    # per spatial dim, for each tap k: the output windows whose tap k lies inside the input, and the input slice
    per_dim = []
    for n, fi, si, b, oi in zip(x.shape[1:-1], f, s, before, o, strict=True):
        taps = []
        for k in range(fi):
            # input index of window w's tap k: w * si - b + k, must be in [0, n)
            w0 = 0
            while w0 < oi and w0 * si - b + k < 0:
                w0 += 1
            w1 = oi
            while w1 > w0 and (w1 - 1) * si - b + k >= n:
                w1 -= 1
            if w1 <= w0:
                taps.append(None)
            else:
                i0 = w0 * si - b + k
                taps.append((slice(w0, w1), slice(i0, i0 + (w1 - w0 - 1) * si + 1, si)))
        per_dim.append(taps)
    best = np.full(dy.shape, -np.inf, dtype=np.float32)
    pos = np.full(dy.shape, -1, dtype=np.int16 if np.prod(f) < 32000 else np.int32)
    # Branch-free updates (fmax, where): masked copies mispredict on random data and cost 2x.
    compare = np.greater_equal if last else np.greater
    tap_views = []
    for t, tap in enumerate(itertools.product(*(range(fi) for fi in f))):
        parts = [per_dim[a][k] for a, k in enumerate(tap)]
        if any(p is None for p in parts):
            continue
        osl = (slice(None), *(p[0] for p in parts), slice(None))
        isl = (slice(None), *(p[1] for p in parts), slice(None))
        tap_views.append((t, osl, isl))
        xv = x[isl]
        bv = best[osl]
        better = compare(xv, bv)
        np.fmax(bv, xv, out=bv)  # the same value as copying where better: NaN never wins, -inf ties
        pv = pos[osl]
        pv[...] = np.where(better, pos.dtype.type(t), pv)
    dx = np.zeros(x.shape, dtype=np.float32)
    for t, osl, isl in tap_views:
        np.multiply(dy[osl], pos[osl] == t, out=dx[isl])
    return dx


def max_grad(x: np.ndarray, dy: np.ndarray, geo: Geometry, last: bool) -> np.ndarray:
    """dx of a max pool: each window's dy goes to its arg-max position."""
    if dy.size == 0 or x.size == 0:
        return np.zeros(x.shape, dtype=np.float64)
    fast = fast_max_grad(x, dy, geo, last)
    if fast is not None:
        return fast
    _, pos = max_positions(x, geo, last)
    dy = dy.astype(np.float64, copy=False)
    return _scatter(x.shape, geo, lambda t: np.where(pos == t, dy, 0.0))


def avg_grad(x_shape: tuple[int, ...], dy: np.ndarray, geo: Geometry) -> np.ndarray:
    """dx of an avg pool: each window's dy shared by the input positions it averaged."""
    if dy.size == 0 or math.prod(x_shape) == 0:
        return np.zeros(x_shape, dtype=np.float64)
    count = _counts(x_shape[1:-1], geo)
    acc = np.where(count > 0, dy.astype(np.float64) / np.maximum(count, 1), 0.0)
    # spread back one spatial axis at a time, the reverse of _box_sum
    for axis, extent in reversed(list(enumerate(frame_extent(geo)))):
        shape = list(acc.shape)
        shape[axis + 1] = extent
        spread = np.zeros(shape, dtype=np.float64)
        for sl in _axis_taps(geo, axis, acc.ndim):
            spread[sl] += acc
        acc = spread
    dx = np.zeros(x_shape, dtype=np.float64)
    src, dst = _regions(x_shape[1:-1], geo)
    dx[src] = acc[dst]
    return dx


def _empty(x_shape: tuple[int, ...], geo: Geometry) -> bool:
    return math.prod(pool_out_shape(x_shape, geo)) == 0


def _values(backend: CPUBackend, t) -> np.ndarray:
    return values_of(backend, t)


def _keeps_shape(x, geo: Geometry) -> bool:
    """TF.js's 2D shortcut: a 1x1 filter that keeps the shape returns the input itself."""
    return all(f == 1 for f in geo[0]) and tuple(geo[4]) == tuple(x.shape[1:-1])


def _bound(backend: CPUBackend, x, attrs: dict, is_max: bool) -> Output | None:
    """A replayed float32 call through its bound form (:func:`..plans.bound.pool2d`), or None."""
    if x.dtype != "float32":
        return None
    run = jit_bound.replayed(attrs, lambda: _bind(x.shape, pool_geometry(attrs), is_max))
    y = None if run is None else run(values_of(backend, x))
    return None if y is None else (backend.store(y), y.shape, "float32")


def _bind(x_shape: tuple[int, ...], geo: Geometry, is_max: bool):
    if all(f == 1 for f in geo[0]) and tuple(geo[4]) == tuple(x_shape[1:-1]):
        return None  # the input itself (_keeps_shape)
    return jit_bound.pool2d(x_shape, geo, is_max)


@cpu_kernel(kn.MaxPool)
def max_pool(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    result = _bound(backend, x, attrs, True)
    if result is not None:
        return result
    geo = pool_geometry(attrs)
    if _keeps_shape(x, geo):
        return share(backend, x.data_id, x.shape, x.dtype)
    if _empty(x.shape, geo):
        return out(backend, np.zeros(pool_out_shape(x.shape, geo)), x.dtype)
    compiled = jit_ops.pool2d(_values(backend, x), geo, is_max=True) if x.dtype == "float32" else None
    if compiled is not None:
        return out(backend, compiled, "float32")
    return out(backend, store_like_tfjs(max_values(_values(backend, x), geo), x.dtype), x.dtype)


@cpu_kernel(kn.AvgPool)
def avg_pool(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    result = _bound(backend, x, attrs, False)
    if result is not None:
        return result
    geo = pool_geometry(attrs)
    if _keeps_shape(x, geo):
        return share(backend, x.data_id, x.shape, x.dtype)
    if _empty(x.shape, geo):
        return out(backend, np.zeros(pool_out_shape(x.shape, geo)), x.dtype)
    compiled = jit_ops.pool2d(_values(backend, x), geo, is_max=False) if x.dtype == "float32" else None
    if compiled is not None:
        return out(backend, compiled, "float32")
    return out(backend, store_like_tfjs(avg_values(_values(backend, x), geo, False), x.dtype), x.dtype)


@cpu_kernel(kn.MaxPool3D)
def max_pool3d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    geo = pool_geometry(attrs)
    if _empty(x.shape, geo):
        return out(backend, np.zeros(pool_out_shape(x.shape, geo)), "float32")
    return out(backend, max_values(_values(backend, x), geo), "float32")


@cpu_kernel(kn.AvgPool3D)
def avg_pool3d(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    geo = pool_geometry(attrs)
    if _empty(x.shape, geo):
        return out(backend, np.zeros(pool_out_shape(x.shape, geo)), "float32")
    return out(backend, avg_values(_values(backend, x), geo, True), "float32")


@cpu_kernel(kn.MaxPoolWithArgmax)
def max_pool_with_argmax(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Maxima and their flat indexes ``((b * H + y) * W + x) * C + c`` (``b`` only with
    ``include_batch_in_index``); -1 where a window holds no number."""
    (x,) = inputs
    geo = pool_geometry(attrs)
    shape = pool_out_shape(x.shape, geo)
    if _empty(x.shape, geo):
        return [out(backend, np.zeros(shape), x.dtype), out(backend, np.zeros(shape), "int32")]
    best, pos = max_positions(_values(backend, x), geo, last=False)
    batch, height, width, channels = x.shape
    (fh, fw), (sh, sw), (dh, dw), (ph, pw), (oh, ow) = geo
    row = np.arange(oh).reshape(1, oh, 1, 1) * sh - ph + (pos // fw) * dh
    col = np.arange(ow).reshape(1, 1, ow, 1) * sw - pw + (pos % fw) * dw
    index = (row * width + col) * channels + np.arange(channels).reshape(1, 1, 1, channels)
    if attrs.get("include_batch_in_index"):
        index = index + np.arange(batch).reshape(batch, 1, 1, 1) * (height * width * channels)
    index = np.where(pos < 0, -1, index)
    return [out(backend, store_like_tfjs(best, x.dtype), x.dtype), out(backend, index, "int32")]


@cpu_kernel(kn.MaxPoolGrad)
def max_pool_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the first maximum of each window."""
    dy, x, _ = inputs
    dx = max_grad(_values(backend, x), _values(backend, dy), pool_geometry(attrs), last=False)
    return out(backend, dx, "float32")


@cpu_kernel(kn.AvgPoolGrad)
def avg_pool_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    dy, x = inputs
    return out(backend, avg_grad(x.shape, _values(backend, dy), pool_geometry(attrs)), "float32")


@cpu_kernel(kn.MaxPool3DGrad)
def max_pool3d_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the last maximum of each window (TF.js's 3D convention)."""
    dy, x, _ = inputs
    dx = max_grad(_values(backend, x), _values(backend, dy), pool_geometry(attrs), last=True)
    return out(backend, dx, "float32")


@cpu_kernel(kn.AvgPool3DGrad)
def avg_pool3d_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    dy, x = inputs
    return out(backend, avg_grad(x.shape, _values(backend, dy), pool_geometry(attrs)), "float32")
