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
            for ow in range(out_w):
                for c in range(channels):
                    best[c] = neg_inf
                    pos[c] = -1
                for kh in range(fh):
                    ih = oh * sh - pt + kh
                    if ih < 0 or ih >= height:
                        continue
                    for kw in range(fw):
                        iw = ow * sw - pl + kw
                        if iw < 0 or iw >= width:
                            continue
                        t = kh * fw + kw
                        for c in range(channels):
                            v = x[b, ih, iw, c]
                            better = v >= best[c] if last else v > best[c]
                            if better:
                                pos[c] = t
                            if v > best[c]:
                                best[c] = v
                for kh in range(fh):
                    ih = oh * sh - pt + kh
                    if ih < 0 or ih >= height:
                        continue
                    for kw in range(fw):
                        iw = ow * sw - pl + kw
                        if iw < 0 or iw >= width:
                            continue
                        t = kh * fw + kw
                        for c in range(channels):
                            g = dy[b, oh, ow, c]
                            dx[b, ih, iw, c] = g * (one if pos[c] == t else zero)
