"""Compiled paths of the cpu backend's training gradients: a 2-D max pool's input gradient and a 2-D convolution's
filter gradient. Each returns None where it does not apply (JIT off or still loading, another rank or dtype), and the
kernel then runs its numpy path. Work is split over the cores by batch or by output rows (:mod:`..native.parallel`,
Python threads: the compiled kernels and numpy's products release the GIL)."""

from __future__ import annotations

import numpy as np

from ..native import parallel as cpu_parallel
from . import kernels

#: Input values times window size below which one thread does a max pool's gradient (a thread's wake-up costs
#: about as much as the work).
POOL_GRAD_SPLIT_MIN = 400_000

#: Column-matrix values per chunk of a filter gradient: one chunk's columns stay in the cache while they are
#: multiplied (8 MB of the CNN's second layer in one piece ran at half the speed of 1 MB chunks).
FILTER_GRAD_CHUNK_VALUES = 256 * 1024


def max_pool_grad(x: np.ndarray, dy: np.ndarray, geo: tuple, last: bool) -> np.ndarray | None:
    """dx of a 2-D max pool with non-overlapping windows (the caller checked), float32 channels-last; the values of
    the numpy path bit for bit (``_grad_kernels.max_pool_grad2d``)."""
    (fh, fw), (sh, sw), _, (pt, pl), _ = geo
    if x.ndim != 4 or x.dtype != np.float32 or dy.dtype != np.float32:
        return None
    k = kernels()
    if k is None:
        return None
    xc, dyc = np.ascontiguousarray(x), np.ascontiguousarray(dy)
    dx = np.zeros(x.shape, dtype=np.float32)
    batch = x.shape[0]
    parts = cpu_parallel.threads() if x.size * fh * fw >= POOL_GRAD_SPLIT_MIN else 1

    def span(_: int, b0: int, b1: int) -> None:
        k.max_pool_grad2d(xc, dyc, dx, fh, fw, sh, sw, pt, pl, last, b0, b1)

    cpu_parallel.run_spans(span, batch, parts)
    return dx


def conv_backprop_filter(x: np.ndarray, dy: np.ndarray, info, filter_shape: tuple[int, ...]) -> np.ndarray | None:
    """The filter gradient of a channels-last 2-D convolution: ``cols.T @ dy`` over the output positions, the column
    matrix made by the compiled im2col a chunk of output rows at a time, the chunks split over the threads, each
    thread summing its chunks' products and the threads' sums added in order (deterministic for a thread count;
    float32-close to one product)."""
    if len(info.filter_size) != 2 or x.ndim != 4 or dy.ndim != 4:
        return None
    if x.dtype != np.float32 or dy.dtype != np.float32:
        return None
    k = kernels()
    if k is None:
        return None
    fh, fw = info.filter_size
    (sh, sw), (dh, dw), (pt, pl) = info.strides, info.dilations, (info.pads[0][0], info.pads[1][0])
    batch, out_h, out_w, out_c = dy.shape
    depth = fh * fw * x.shape[-1]
    xc = np.ascontiguousarray(x)
    dy2 = np.ascontiguousarray(dy).reshape(-1, out_c)
    rows = batch * out_h  # im2col's rows: (b, oh), each of out_w positions
    per_chunk = max(1, FILTER_GRAD_CHUNK_VALUES // max(1, out_w * depth))
    parts = cpu_parallel.threads() if 2 * rows * out_w * depth * out_c >= cpu_parallel.MIN_SPLIT_FLOPS // 4 else 1
    spans = cpu_parallel.spans(rows, parts)
    sums = [np.zeros((depth, out_c), dtype=np.float32) for _ in spans]

    def span(i: int, r0: int, r1: int) -> None:
        cols = np.empty((min(per_chunk, r1 - r0) * out_w, depth), dtype=np.float32)
        part = np.empty((depth, out_c), dtype=np.float32)
        for c0 in range(r0, r1, per_chunk):
            c1 = min(r1, c0 + per_chunk)
            n = (c1 - c0) * out_w
            k.im2col2d(xc, cols[:n], fh, fw, sh, sw, dh, dw, pt, pl, out_h, out_w, c0, c1)
            np.matmul(cols[:n].T, dy2[c0 * out_w : c1 * out_w], out=part)
            sums[i] += part

    cpu_parallel.run_spans(span, rows, parts)
    total = sums[0]
    for s in sums[1:]:
        total += s
    return total.reshape(filter_shape)


def segment_sum(ids: np.ndarray, values: np.ndarray, n: int) -> np.ndarray | None:
    """The float64 segment sums of ``values`` (rows, width) by ``ids`` into ``n`` rows, ids outside ``[0, n)``
    dropped: ``np.add.at``'s sums in its order (``_grad_kernels.segment_sum_rows``); None without the JIT."""
    k = kernels()
    if k is None or values.ndim != 2 or ids.ndim != 1:
        return None
    total = np.zeros((n, values.shape[1]), np.float64)
    k.segment_sum_rows(total, ids.astype(np.int64, copy=False), np.ascontiguousarray(values), n)
    return total
