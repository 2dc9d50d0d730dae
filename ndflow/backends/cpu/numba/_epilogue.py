"""The compiled epilogue of one block of rows (bias, residual, activation), shared by every numba kernel that
writes convolution outputs (:mod:`._kernels`, :mod:`._conv_kernels`, :mod:`._dw_kernels`, :mod:`._dw3_kernels`):
a row gets the same bits whichever kernel computes it."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def epilogue_rows(y, r0, r1, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """Rows ``r0:r1`` of the 2-D ``y`` (rows, channels): ``+ bias`` (empty = none), ``+ add`` (a residual of
    ``y``'s shape, rows indexed as ``y``'s; empty = none), then activation ``act``."""
    channels = y.shape[1]
    if bias.size:
        for i in range(r0, r1):
            for c in range(channels):
                y[i, c] += bias[c]
    if add.size:
        for i in range(r0, r1):
            for c in range(channels):
                y[i, c] += add[i, c]
    zero, six = np.float32(0), np.float32(6)
    if act == 1:  # relu (NaN stays NaN, as numpy's maximum); selects, not branches: they vectorize
        for i in range(r0, r1):
            for c in range(channels):
                v = y[i, c]
                y[i, c] = zero if v < zero else v
    elif act == 2:  # relu6
        for i in range(r0, r1):
            for c in range(channels):
                v = y[i, c]
                v = zero if v < zero else v
                y[i, c] = six if v > six else v
    elif act == 3:  # leakyrelu
        for i in range(r0, r1):
            for c in range(channels):
                if y[i, c] < 0:
                    y[i, c] *= alpha
    elif act == 4:  # prelu, one slope per channel
        for i in range(r0, r1):
            for c in range(channels):
                if y[i, c] < 0:
                    y[i, c] *= slopes[c]
    elif act == 5:  # sigmoid
        one = np.float32(1)
        for i in range(r0, r1):
            for c in range(channels):
                y[i, c] = one / (one + math.exp(-y[i, c]))
    elif act == 6:  # elu
        for i in range(r0, r1):
            for c in range(channels):
                if y[i, c] < 0:
                    y[i, c] = math.expm1(y[i, c])
