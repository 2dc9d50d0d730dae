"""numba kernels of the cpu backend's training gradients (imported through :mod:`._kernels`).

``max_pool_grad2d``: a 2-D max pool's input gradient for non-overlapping windows (stride at least the window, no
dilation), channels-last float32. Each window's arg-max is found tap by tap in row-major order (``last``: the last of
equal maxima, else the first; NaN never wins, as ``np.fmax``), then every tap of the window inside the input gets
``dy * (1 if it is the arg-max else 0)`` in float32: the numpy path's values (``kernels/pool.py:fast_max_grad``), bit
for bit, -0.0 and NaN included. One pass, where the numpy path made a dozen strided ones (5 ms of a 23 ms CNN
training step).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _taps(o, stride, pad, size, extent):  # pragma: no cover - compiled
    """The window taps ``[k0, k1)`` of output position ``o`` that lie inside the input (``extent`` values)."""
    start = o * stride - pad
    return max(0, -start), min(size, extent - start)


@njit(cache=True, nogil=True)
def max_pool_grad2d(x, dy, dx, fh, fw, sh, sw, pt, pl, last, b0, b1):  # pragma: no cover - compiled
    """``dx[b0:b1]`` (zeroed by the caller) from ``x`` (B, H, W, C) and ``dy`` (B, OH, OW, C)."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = dy.shape[1], dy.shape[2]
    neg_inf = np.float32(-np.inf)
    one, zero = np.float32(1), np.float32(0)
    pos = np.empty(channels, np.int64)
    best = np.empty(channels, np.float32)
    for b in range(b0, b1):
        for oh in range(out_h):
            h0, h1 = _taps(oh, sh, pt, fh, height)
            for ow in range(out_w):
                w0, w1 = _taps(ow, sw, pl, fw, width)
                for c in range(channels):
                    best[c] = neg_inf
                    pos[c] = -1
                for kh in range(h0, h1):  # the arg-max, tap by tap in row-major order
                    for kw in range(w0, w1):
                        t = kh * fw + kw
                        for c in range(channels):
                            v = x[b, oh * sh - pt + kh, ow * sw - pl + kw, c]
                            if v >= best[c] if last else v > best[c]:
                                pos[c] = t
                            if v > best[c]:
                                best[c] = v
                for kh in range(h0, h1):  # dy to each tap, times 1 at the arg-max and 0 elsewhere
                    for kw in range(w0, w1):
                        t = kh * fw + kw
                        for c in range(channels):
                            dx[b, oh * sh - pt + kh, ow * sw - pl + kw, c] = dy[b, oh, ow, c] * (
                                one if pos[c] == t else zero
                            )


@njit(cache=True, nogil=True)
def segment_sum_rows(total, ids, values, n):  # pragma: no cover - compiled
    """``total[ids[i]] += values[i]`` for each row ``i`` in order, rows whose id lies outside ``[0, n)`` skipped: the
    float64 sums of ``np.add.at`` (which took 5 ms for an embedding gradient of 1600 rows of 64 values)."""
    width = values.shape[1]
    for i in range(ids.shape[0]):
        r = ids[i]
        if r < 0 or r >= n:
            continue
        for j in range(width):
            total[r, j] += values[i, j]


@njit(cache=True, nogil=True, error_model="numpy")  # IEEE division (numpy's): no zero checks, so it vectorizes
def adam_update(value, m, v, g, new_value, new_m, new_v, b1, c1, b2, c2, d1, d2, eps, neg_lr):  # pragma: no cover
    """Adam's update of one variable in one pass over flat float32 arrays, each value through the ops of
    ``train/adam.py`` in their order, every operation rounded to float32 (no fused multiply-adds): the op-by-op
    path's bits. ``c1`` = 1 - beta1, ``c2`` = 1 - beta2, ``d1``/``d2`` the bias corrections, ``neg_lr`` = -lr."""
    for i in range(value.shape[0]):
        gi = g[i]
        nm = m[i] * b1 + gi * c1
        nv = v[i] * b2 + (gi * gi) * c2
        new_m[i] = nm
        new_v[i] = nv
        step = (nm / d1) / (np.sqrt(nv / d2) + eps) * neg_lr
        new_value[i] = step + value[i]
