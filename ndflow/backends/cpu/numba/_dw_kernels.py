"""numba kernel of the 5x5 depthwise convolution (multiplier 1), all 25 taps summed in registers (imported
through :mod:`._kernels`; see its docstring for the conventions; the 3x3 one is in :mod:`._conv_kernels`).

Each output row is computed in three parts:

- interior positions of an interior row (every tap inside the input) with a unit width stride: the row is one
  run of ``OW * C`` values, each the sum of its 25 taps read at fixed offsets from the five input rows. The
  weights come tiled to a period ``L`` (a multiple of the channels, and of 16 where that stays short:
  ``wl[t, k]`` is tap ``t``'s weight of channel ``k % C``), so the run is cut into blocks of ``L`` values whose
  inner loop vectorises whole, and a block's weights stay in L1;
- interior positions with another width stride: per position, one vectorised loop over the channels (1.4x
  the per-tap accumulation of the generic kernel at MobileNet's stride-2 5x5 shapes);
- the border (positions with a tap outside the input): per position, the taps inside the input added one at a
  time over the channels (taps outside are skipped, as TF.js's kernels skip them).

Indexes into flattened arrays are unsigned (``np.uint64``): numba then emits no wrap-around test, and LLVM
vectorises the loops. Sums run in the numpy paths' order (taps row-major), so the compiled and numpy paths agree.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._conv_kernels import _interior
from ._epilogue import epilogue_rows

U = np.uint64


@njit(cache=True, nogil=True)
def _border(x, w2, o, b, ih0, ow, ksize, sw, dh, dw, pl):  # pragma: no cover - compiled
    """Output position ``ow`` of row ``o`` from the taps that fall inside the input (row-major tap order);
    ``w2`` is ``(K*K, C)``."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    oo = o[ow]
    oo[:] = 0
    for kh in range(ksize):
        ih = ih0 + kh * dh
        if ih < 0 or ih >= height:
            continue
        for kw in range(ksize):
            iw = ow * sw - pl + kw * dw
            if iw < 0 or iw >= width:
                continue
            xr = x[b, ih, iw]
            wr = w2[kh * ksize + kw]
            for c in range(channels):
                oo[c] += xr[c] * wr[c]


@njit(cache=True, nogil=True)
def _run5(x0, x1, x2, x3, x4, wl, of, j0, j1, s, d):  # pragma: no cover - compiled
    """``of[j0:j1]`` of a row with a unit width stride: ``of[j] = sum x_kh[j + s + kw*d] * wl[5*kh + kw, j - j0]``
    (``wl`` periodic along the row, ``j0`` at a position's first channel)."""
    period = wl.shape[1]
    base = j0
    while base < j1:
        n = U(min(period, j1 - base))
        a = U(base + s)
        b = a + U(d)
        c = b + U(d)
        e = c + U(d)
        f = e + U(d)
        ob = U(base)
        for k in range(n):
            acc = x0[a + k] * wl[0, k]
            acc += x0[b + k] * wl[1, k]
            acc += x0[c + k] * wl[2, k]
            acc += x0[e + k] * wl[3, k]
            acc += x0[f + k] * wl[4, k]
            acc += x1[a + k] * wl[5, k]
            acc += x1[b + k] * wl[6, k]
            acc += x1[c + k] * wl[7, k]
            acc += x1[e + k] * wl[8, k]
            acc += x1[f + k] * wl[9, k]
            acc += x2[a + k] * wl[10, k]
            acc += x2[b + k] * wl[11, k]
            acc += x2[c + k] * wl[12, k]
            acc += x2[e + k] * wl[13, k]
            acc += x2[f + k] * wl[14, k]
            acc += x3[a + k] * wl[15, k]
            acc += x3[b + k] * wl[16, k]
            acc += x3[c + k] * wl[17, k]
            acc += x3[e + k] * wl[18, k]
            acc += x3[f + k] * wl[19, k]
            acc += x4[a + k] * wl[20, k]
            acc += x4[b + k] * wl[21, k]
            acc += x4[c + k] * wl[22, k]
            acc += x4[e + k] * wl[23, k]
            acc += x4[f + k] * wl[24, k]
            of[ob + k] = acc
        base += period


@njit(cache=True, nogil=True)
def _at5(x0, x1, x2, x3, x4, w2, of, ob, xb, d, channels):  # pragma: no cover - compiled
    """One output position (any stride): channels ``of[ob:ob+C]`` from input offset ``xb`` (``w2`` is ``(25, C)``)."""
    d2 = d + d
    d3 = d2 + d
    d4 = d3 + d
    for c in range(U(channels)):
        acc = x0[xb + c] * w2[0, c]
        acc += x0[xb + d + c] * w2[1, c]
        acc += x0[xb + d2 + c] * w2[2, c]
        acc += x0[xb + d3 + c] * w2[3, c]
        acc += x0[xb + d4 + c] * w2[4, c]
        acc += x1[xb + c] * w2[5, c]
        acc += x1[xb + d + c] * w2[6, c]
        acc += x1[xb + d2 + c] * w2[7, c]
        acc += x1[xb + d3 + c] * w2[8, c]
        acc += x1[xb + d4 + c] * w2[9, c]
        acc += x2[xb + c] * w2[10, c]
        acc += x2[xb + d + c] * w2[11, c]
        acc += x2[xb + d2 + c] * w2[12, c]
        acc += x2[xb + d3 + c] * w2[13, c]
        acc += x2[xb + d4 + c] * w2[14, c]
        acc += x3[xb + c] * w2[15, c]
        acc += x3[xb + d + c] * w2[16, c]
        acc += x3[xb + d2 + c] * w2[17, c]
        acc += x3[xb + d3 + c] * w2[18, c]
        acc += x3[xb + d4 + c] * w2[19, c]
        acc += x4[xb + c] * w2[20, c]
        acc += x4[xb + d + c] * w2[21, c]
        acc += x4[xb + d2 + c] * w2[22, c]
        acc += x4[xb + d3 + c] * w2[23, c]
        acc += x4[xb + d4 + c] * w2[24, c]
        of[ob + c] = acc


@njit(cache=True, nogil=True)
def _dw5_row(x, w2, wl, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """Output row ``r`` (= batch * out_height + y) of a 5x5 depthwise convolution, epilogue included. ``w2`` is
    ``(25, C)``; ``wl`` the period-tiled weights ``(25, L)`` for a unit width stride (else empty)."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    b = r // out_h
    oh = r - b * out_h
    o = out[b, oh]
    ih0 = oh * sh - pt
    lo, hi = _interior(width, 4 * dw, sw, pl, out_w)
    if ih0 < 0 or ih0 + 4 * dh >= height:
        lo = hi = 0
    if hi > lo:
        x0 = x[b, ih0].reshape(-1)
        x1 = x[b, ih0 + dh].reshape(-1)
        x2 = x[b, ih0 + 2 * dh].reshape(-1)
        x3 = x[b, ih0 + 3 * dh].reshape(-1)
        x4 = x[b, ih0 + 4 * dh].reshape(-1)
        of = o.reshape(-1)
        d = dw * channels
        if wl.size:  # unit width stride: the interior is one run along the row
            _run5(x0, x1, x2, x3, x4, wl, of, lo * channels, hi * channels, -pl * channels, d)
        else:
            for ow in range(lo, hi):
                _at5(x0, x1, x2, x3, x4, w2, of, U(ow * channels), U((ow * sw - pl) * channels), U(d), channels)
    for ow in range(out_w):
        if ow < lo or ow >= hi:
            _border(x, w2, o, b, ih0, ow, 5, sw, dh, dw, pl)
    epilogue_rows(o, 0, out_w, bias, add[b, oh] if add.size else add[0, 0], act, alpha, slopes)


@njit(cache=True, parallel=True)
def depthwise5x5(x, w2, wl, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """5x5 depthwise convolution (multiplier 1) ``x (B,H,W,C) * w2 (25,C) -> out (B,OH,OW,C)``, rows in parallel."""
    for r in prange(out.shape[0] * out.shape[1]):
        _dw5_row(x, w2, wl, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def depthwise5x5_serial(x, w2, wl, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`depthwise5x5` on the calling thread."""
    for r in range(out.shape[0] * out.shape[1]):
        _dw5_row(x, w2, wl, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)
