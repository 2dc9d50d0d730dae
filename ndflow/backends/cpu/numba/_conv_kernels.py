"""numba kernels for the convolutions' hot shapes: 3x3 depthwise with all nine taps summed in registers, and
a direct im2col (imported through :mod:`._kernels`; see its docstring for the conventions).

Indexes into the flattened arrays are unsigned (``np.uint64``): numba then emits no wrap-around test for
negative indexes, and LLVM vectorises the loops over channels. Sums run in the numpy paths' order (filter
taps row-major), so the compiled and numpy paths agree.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._epilogue import epilogue_rows

U = np.uint64


@njit(cache=True, nogil=True)
def _interior(size, extent, stride, pad, out_size):  # pragma: no cover - compiled
    """``(lo, hi)``: the output positions whose whole 3-tap window (``extent`` = 2 * dilation) lies inside
    ``size`` input positions."""
    lo = (pad + stride - 1) // stride
    last = size - 1 - extent + pad  # ow * stride <= last
    hi = last // stride + 1 if last >= 0 else 0
    hi = min(hi, out_size)
    return lo, max(lo, hi)


@njit(cache=True, nogil=True)
def _dw3_border(x, w, o, b, ih0, ow, sw, dh, dw, pl):  # pragma: no cover - compiled
    """Output position ``ow`` of row ``o`` with the taps that fall inside the input (row-major tap order)."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    oo = o[ow]
    oo[:] = 0
    for kh in range(3):
        ih = ih0 + kh * dh
        if ih < 0 or ih >= height:
            continue
        for kw in range(3):
            iw = ow * sw - pl + kw * dw
            if iw < 0 or iw >= width:
                continue
            xr = x[b, ih, iw]
            wr = w[kh, kw]
            for c in range(channels):
                oo[c] += xr[c] * wr[c]


@njit(cache=True, nogil=True)
def _dw3_row(x, w, wt, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """Output row ``r`` (= batch * out_height + y) of a 3x3 depthwise convolution (multiplier 1), epilogue
    included. ``w`` is ``(3, 3, C)``; ``wt`` the same taps tiled along the output row ``(3, 3, OW*C)`` for a
    unit width stride (else empty)."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    b = r // out_h
    oh = r - b * out_h
    o = out[b, oh]
    ih0 = oh * sh - pt
    lo, hi = _interior(width, 2 * dw, sw, pl, out_w)
    if ih0 < 0 or ih0 + 2 * dh >= height:
        lo = hi = 0
    if hi > lo:
        xf = x.reshape(-1)
        of = out.reshape(-1)
        row = width * channels
        r0 = U((b * height + ih0) * row)
        r1 = r0 + U(dh * row)
        r2 = r1 + U(dh * row)
        d = U(dw * channels)
        d2 = d + d
        if wt.size:  # unit width stride: one vectorised loop over the interior of the row
            wf = wt.reshape(-1)
            n = U((hi - lo) * channels)
            j0 = U(lo * channels)
            s = U(lo * channels - pl * channels)
            ob = U(r * out_w * channels) + j0
            lw = U(wt.shape[2])
            for j in range(n):
                acc = xf[r0 + s + j] * wf[j0 + j]
                acc += xf[r0 + s + d + j] * wf[lw + j0 + j]
                acc += xf[r0 + s + d2 + j] * wf[U(2) * lw + j0 + j]
                acc += xf[r1 + s + j] * wf[U(3) * lw + j0 + j]
                acc += xf[r1 + s + d + j] * wf[U(4) * lw + j0 + j]
                acc += xf[r1 + s + d2 + j] * wf[U(5) * lw + j0 + j]
                acc += xf[r2 + s + j] * wf[U(6) * lw + j0 + j]
                acc += xf[r2 + s + d + j] * wf[U(7) * lw + j0 + j]
                acc += xf[r2 + s + d2 + j] * wf[U(8) * lw + j0 + j]
                of[ob + j] = acc
        else:  # any stride: per output position, a vectorised loop over the channels
            wf = w.reshape(-1)
            cu = U(channels)
            for ow in range(lo, hi):
                xb = U((ow * sw - pl) * channels)
                ob = U((r * out_w + ow) * channels)
                for c in range(cu):
                    acc = xf[r0 + xb + c] * wf[c]
                    acc += xf[r0 + xb + d + c] * wf[cu + c]
                    acc += xf[r0 + xb + d2 + c] * wf[U(2) * cu + c]
                    acc += xf[r1 + xb + c] * wf[U(3) * cu + c]
                    acc += xf[r1 + xb + d + c] * wf[U(4) * cu + c]
                    acc += xf[r1 + xb + d2 + c] * wf[U(5) * cu + c]
                    acc += xf[r2 + xb + c] * wf[U(6) * cu + c]
                    acc += xf[r2 + xb + d + c] * wf[U(7) * cu + c]
                    acc += xf[r2 + xb + d2 + c] * wf[U(8) * cu + c]
                    of[ob + c] = acc
    for ow in range(out_w):
        if ow < lo or ow >= hi:
            _dw3_border(x, w, o, b, ih0, ow, sw, dh, dw, pl)
    epilogue_rows(o, 0, out_w, bias, add[b, oh] if add.size else add[0, 0], act, alpha, slopes)


@njit(cache=True, parallel=True)
def depthwise3x3(x, w, wt, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """3x3 depthwise convolution (multiplier 1) ``x (B,H,W,C) * w (3,3,C) -> out (B,OH,OW,C)``, rows in parallel."""
    for r in prange(out.shape[0] * out.shape[1]):
        _dw3_row(x, w, wt, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def depthwise3x3_serial(x, w, wt, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`depthwise3x3` on the calling thread."""
    for r in range(out.shape[0] * out.shape[1]):
        _dw3_row(x, w, wt, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def im2col2d(x, cols, kh_size, kw_size, sh, sw, dh, dw, pt, pl, out_h, out_w, r0, r1):  # pragma: no cover
    """Output rows ``r0:r1`` (``r = b*OH + oh``) of the column matrix of a 2-D convolution:
    ``cols[(r - r0)*OW + ow, (kh*KW + kw)*C + c]`` is ``x[b, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c]``,
    0 where that lies in the padding."""
    batch, height, width, channels = x.shape
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    cu = U(channels)
    run = U(kw_size * channels)  # one filter row's taps
    k = U(kh_size) * run
    lo = (pl + sw - 1) // sw  # output columns whose taps all lie inside the input (unit dilation)
    last = width - kw_size + pl
    hi = min(out_w, last // sw + 1) if last >= 0 else 0
    if dw != 1:
        lo = hi = 0
    dst = U(0)
    for r in range(r0, r1):
        b = r // out_h
        oh = r - b * out_h
        if True:
            for ow in range(out_w):
                iw0 = ow * sw - pl
                inside = ow >= lo and ow < hi
                for kh in range(kh_size):
                    at = dst + U(kh) * run
                    ih = oh * sh - pt + kh * dh
                    if ih < 0 or ih >= height:
                        for j in range(run):
                            cf[at + j] = 0
                    elif inside:  # the row's taps are contiguous in the input
                        src = U(((b * height + ih) * width + iw0) * channels)
                        for j in range(run):
                            cf[at + j] = xf[src + j]
                    else:
                        for kw in range(kw_size):
                            iw = iw0 + kw * dw
                            a = at + U(kw) * cu
                            if iw < 0 or iw >= width:
                                for c in range(cu):
                                    cf[a + c] = 0
                            else:
                                src = U(((b * height + ih) * width + iw) * channels)
                                for c in range(cu):
                                    cf[a + c] = xf[src + c]
                dst += k
