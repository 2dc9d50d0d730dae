"""numba kernel of bilinear resizing (imported by :mod:`..kernels.image` once :func:`..numba.kernels` says the JIT is
on; nothing else imports it).

The arithmetic is TF.js's, in float64 per output value: ``top = tl + (tr - tl) * cf``, ``bottom = bl + (br - bl)
* cf``, ``top + (bottom - top) * rf``, stored as float32; the same operations in the same order as the numpy path
(no fast-math, so no fused multiply-adds), hence the same bits. The column step of a source row depends on the row
only, so it runs once into a row buffer and serves every output row that reads that source row (twice as many as
there are source rows when upscaling by two); two buffers hold the last two source rows read.
"""

from __future__ import annotations

import numpy as np
from numba import njit

U = np.uint64


@njit(cache=True, nogil=True)
def _column_step(src, c0, c1, cf, channels, buf):  # pragma: no cover - compiled
    """``buf[ox*C + c] = tl + (tr - tl) * cf[ox]`` for one source row ``src`` (``W*C`` values), in float64.

    Unsigned indexes: numba then emits no wrap-around test and LLVM vectorises the channel loop (6x faster at 32
    channels)."""
    ch = U(channels)
    for ox in range(c0.size):
        a = U(c0[ox]) * ch
        b = U(c1[ox]) * ch
        f = cf[ox]
        o = U(ox) * ch
        for c in range(ch):
            left = np.float64(src[a + c])
            buf[o + c] = left + (np.float64(src[b + c]) - left) * f


@njit(cache=True, nogil=True)
def resize_bilinear(x, r0, r1, rf, c0, c1, cf, channels, y):  # pragma: no cover - compiled
    """Resize ``x`` ``(B, H, W*C)`` into the float32 ``y`` ``(B, NH, NW*C)``.

    Output row ``oy`` interpolates source rows ``r0[oy]`` and ``r1[oy]`` with fraction ``rf[oy]``; output column
    ``ox`` columns ``c0[ox]`` and ``c1[ox]`` with fraction ``cf[ox]``."""
    n = y.shape[2]
    buf_a = np.empty(n)
    buf_b = np.empty(n)
    for b in range(x.shape[0]):
        row_a = -1  # the source row each buffer holds (-1: none)
        row_b = -1
        for oy in range(y.shape[1]):
            ra = r0[oy]
            rb = r1[oy]
            if row_a != ra:
                if row_b == ra:  # the previous bottom row is this top row
                    buf_a, buf_b = buf_b, buf_a
                    row_a, row_b = row_b, row_a
                else:
                    _column_step(x[b, ra], c0, c1, cf, channels, buf_a)
                    row_a = ra
            if rb == ra:
                bottom = buf_a
            else:
                if row_b != rb:
                    _column_step(x[b, rb], c0, c1, cf, channels, buf_b)
                    row_b = rb
                bottom = buf_b
            f = rf[oy]
            dest = y[b, oy]
            for k in range(n):
                top = buf_a[k]
                dest[k] = top + (bottom[k] - top) * f
