"""numba kernels of the cpu backend (imported only through :func:`ndflow.backends.cpu.numba.kernels`).

Every kernel works on float32, channels-last (NHWC), C-contiguous arrays and writes into an output
the caller allocated. Sums run in the same order as the numpy paths (filter taps in row-major
order, bias added after the sum, then the activation), so both paths give the same float32
results up to the rounding of the elementary functions (exp in sigmoid and elu).

The 3x3 depthwise kernel and the direct im2col (:mod:`._conv_kernels`) and the 5x5 depthwise kernel
(:mod:`._dw_kernels`) are re-exported here.

Each parallel kernel has a serial twin (``*_serial``): a parallel loop costs a few microseconds to
start, more than small tensors take; the callers pick by the amount of work.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._conv_kernels import depthwise3x3, depthwise3x3_serial, im2col2d  # noqa: F401 (re-exported)
from ._dw_kernels import depthwise5x5, depthwise5x5_serial  # noqa: F401 (re-exported)
from ._epilogue import epilogue_rows
from ._grad_kernels import adam_update, max_pool_grad2d, segment_sum_rows  # noqa: F401 (re-exported)

# ----------------------------------------------------------------------------- epilogue


@njit(cache=True, parallel=True)
def epilogue(y, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """Bias, residual and activation over the 2-D ``y`` in place, rows split between the threads."""
    rows = y.shape[0]
    chunks = min(rows, 64)
    for k in prange(chunks):
        epilogue_rows(y, rows * k // chunks, rows * (k + 1) // chunks, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def epilogue_serial(y, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """:func:`epilogue` on the calling thread."""
    epilogue_rows(y, 0, y.shape[0], bias, add, act, alpha, slopes)


# ----------------------------------------------------------------------------- depthwise


@njit(cache=True, nogil=True)
def _depthwise_row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """Output row ``r`` (= batch * out_height + y) of a depthwise convolution, with its epilogue."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    kh_size, kw_size, mult = w.shape[0], w.shape[1], w.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    b = r // out_h
    oh = r - b * out_h
    o = out[b, oh]
    o[:, :] = 0
    for kh in range(kh_size):
        ih = oh * sh - pt + kh * dh
        if ih < 0 or ih >= height:
            continue
        xr = x[b, ih]
        for ow in range(out_w):
            iw0 = ow * sw - pl
            for kw in range(kw_size):
                iw = iw0 + kw * dw
                if iw < 0 or iw >= width:
                    continue
                if mult == 1:
                    for c in range(channels):
                        o[ow, c] += xr[iw, c] * w[kh, kw, c, 0]
                else:
                    for c in range(channels):
                        xv = xr[iw, c]
                        for m in range(mult):
                            o[ow, c * mult + m] += xv * w[kh, kw, c, m]
    epilogue_rows(o, 0, out_w, bias, add[b, oh] if add.size else add[0, 0], act, alpha, slopes)


@njit(cache=True, parallel=True)
def depthwise(x, w, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """Depthwise convolution ``x (B,H,W,C) * w (KH,KW,C,M) -> out (B,OH,OW,C*M)``, output rows in parallel."""
    for r in prange(out.shape[0] * out.shape[1]):
        _depthwise_row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def depthwise_serial(x, w, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`depthwise` on the calling thread."""
    for r in range(out.shape[0] * out.shape[1]):
        _depthwise_row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def _depthwise_row_flat(x, wt, out, r, sh, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`_depthwise_row` for a unit width stride and multiplier 1: each tap is one contiguous
    multiply-add over the row (``wt[kh, kw]`` holds the tap's weights tiled along the output width)."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    kh_size, kw_size = wt.shape[0], wt.shape[1]
    out_h, out_w = out.shape[1], out.shape[2]
    b = r // out_h
    oh = r - b * out_h
    o = out[b, oh].reshape(-1)
    o[:] = 0
    for kh in range(kh_size):
        ih = oh * sh - pt + kh * dh
        if ih < 0 or ih >= height:
            continue
        xr = x[b, ih].reshape(-1)
        for kw in range(kw_size):
            shift = kw * dw - pl  # input column = output column + shift
            ow0 = max(0, -shift)
            ow1 = min(out_w, width - shift)
            if ow1 <= ow0:
                continue
            j0, j1 = ow0 * channels, ow1 * channels
            n = j1 - j0
            os = o[j0:j1]  # slices: non-negative indexes let the loop vectorise
            xs = xr[j0 + shift * channels : j1 + shift * channels]
            ws = wt[kh, kw, j0:j1]
            for j in range(n):
                os[j] += xs[j] * ws[j]
    epilogue_rows(out[b, oh], 0, out_w, bias, add[b, oh] if add.size else add[0, 0], act, alpha, slopes)


@njit(cache=True, parallel=True)
def depthwise_flat(x, wt, out, sh, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """:func:`depthwise` for a unit width stride and multiplier 1, with tiled weights ``wt (KH,KW,OW*C)``."""
    for r in prange(out.shape[0] * out.shape[1]):
        _depthwise_row_flat(x, wt, out, r, sh, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def depthwise_flat_serial(x, wt, out, sh, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`depthwise_flat` on the calling thread."""
    for r in range(out.shape[0] * out.shape[1]):
        _depthwise_row_flat(x, wt, out, r, sh, dh, dw, pt, pl, bias, add, act, alpha, slopes)


# ----------------------------------------------------------------------------- transposed convolution


@njit(cache=True, nogil=True)
def add_taps(cols, dx, t0, t1, fw, out_h, out_w, sh, sw, dh, dw, pt, pl):  # pragma: no cover - compiled
    """A col2im of taps ``[t0, t1)`` (tap ``t`` is ``(t // fw, t % fw)``): ``cols`` (B*OH*OW, (t1-t0)*C), tap
    ``t``'s values in columns ``(t - t0)*C ...``, added onto ``dx (B,H,W,C)`` tap after tap; positions in the
    padding are dropped. Unsigned flat indices: the inner loop has no wraparound checks."""
    batch, height, width, channels = dx.shape
    span = cols.shape[1]
    src = cols.reshape(-1)
    dst = dx.reshape(-1)
    cu = np.uint64(channels)
    for t in range(t0, t1):
        kh = t // fw
        kw = t - kh * fw
        c0 = (t - t0) * channels
        lo = 0  # the output columns whose input column is inside: [lo, hi)
        while lo < out_w and lo * sw - pl + kw * dw < 0:
            lo += 1
        hi = out_w
        while hi > lo and (hi - 1) * sw - pl + kw * dw >= width:
            hi -= 1
        for b in range(batch):
            for oh in range(out_h):
                ih = oh * sh - pt + kh * dh
                if ih < 0 or ih >= height:
                    continue
                s_row = np.uint64(((b * out_h + oh) * out_w) * span + c0)
                d_row = np.uint64((b * height + ih) * width * channels + (kw * dw - pl) * channels)
                for ow in range(lo, hi):
                    s0 = s_row + np.uint64(ow * span)
                    d0 = d_row + np.uint64(ow * sw * channels)
                    for c in range(cu):
                        dst[d0 + c] += src[s0 + c]


# ----------------------------------------------------------------------------- activations


@njit(cache=True, nogil=True)
def activate(x, y, none, none2, act, alpha, slopes):  # pragma: no cover - compiled
    """``y = activation(x)`` over 2-D (rows, channels) arrays in one pass, as :func:`epilogue_rows` computes
    it (``none``, ``none2``: unused, the epilogue's empty bias and residual). Written as selects, not
    branches, so that the loops vectorize; a call per row cost 40 ns a row (650 us for 128x128x16)."""
    rows, channels = x.shape
    zero, six, one = np.float32(0), np.float32(6), np.float32(1)
    for i in range(rows):
        xr = x[i]
        yr = y[i]
        if act == 1:  # as numpy's maximum(x, 0): -0 becomes 0, NaN stays
            for c in range(channels):
                v = xr[c]
                yr[c] = zero if v <= zero else v
        elif act == 2:
            for c in range(channels):
                v = xr[c]
                v = zero if v < zero else v
                yr[c] = six if v > six else v
        elif act == 3:
            for c in range(channels):
                v = xr[c]
                yr[c] = v * alpha if v < zero else v
        elif act == 4:
            for c in range(channels):
                v = xr[c]
                yr[c] = v * slopes[c] if v < zero else v
        elif act == 5:
            for c in range(channels):
                yr[c] = one / (one + math.exp(-xr[c]))
        elif act == 6:
            for c in range(channels):
                v = xr[c]
                yr[c] = math.expm1(v) if v < zero else v
        else:
            for c in range(channels):
                yr[c] = xr[c]


@njit(cache=True, nogil=True)
def hard_swish(x, y, three, scale, scale_first):  # pragma: no cover - compiled
    """``y = (x * scale) * relu6(x + three)`` (``scale_first``) or ``(x * relu6(x + three)) * scale`` over flat
    float32 arrays: the float32 operations of the four element-wise ops, in their order."""
    zero, six = np.float32(0), np.float32(6)
    if scale_first:
        for i in range(x.size):
            v = x[i]
            t = v + three
            t = zero if t < zero else t
            t = six if t > six else t
            y[i] = (v * scale) * t
    else:
        for i in range(x.size):
            v = x[i]
            t = v + three
            t = zero if t < zero else t
            t = six if t > six else t
            y[i] = (v * t) * scale


@njit(cache=True, nogil=True)
def abs_prelu(x, y, c):  # pragma: no cover - compiled
    """``y = x + (x - |x|) * c`` over 2-D float32 ``(positions, channels)`` arrays, ``c`` per channel: the float32
    operations of the four element-wise ops, in their order."""
    for i in range(x.shape[0]):
        xr, yr = x[i], y[i]
        for ch in range(x.shape[1]):
            v = xr[ch]
            d = v - abs(v)
            yr[ch] = v + d * c[ch]


# ----------------------------------------------------------------------------- pooling


@njit(cache=True, nogil=True)
def pool2d(x, out, is_max, fh, fw, sh, sw, dh, dw, pt, pl):  # pragma: no cover - compiled
    """2-D max or average pooling of ``x (B,H,W,C)`` into ``out (B,OH,OW,C)`` (float32).

    Max ignores NaN and gives -inf for a window without a number; the average is taken in float64
    over the window's input positions (NaN for a window that holds none).
    """
    batch, height, width, channels = x.shape
    out_h, out_w = out.shape[1], out.shape[2]
    acc = np.empty(channels, dtype=np.float64)
    best = np.empty(channels, dtype=np.float32)
    for b in range(batch):
        for oh in range(out_h):
            for ow in range(out_w):
                if is_max:
                    best[:] = -np.inf
                else:
                    acc[:] = 0.0
                count = 0
                for kh in range(fh):
                    ih = oh * sh - pt + kh * dh
                    if ih < 0 or ih >= height:
                        continue
                    for kw in range(fw):
                        iw = ow * sw - pl + kw * dw
                        if iw < 0 or iw >= width:
                            continue
                        count += 1
                        xr = x[b, ih, iw]
                        if is_max:
                            for c in range(channels):
                                if xr[c] > best[c]:
                                    best[c] = xr[c]
                        else:
                            for c in range(channels):
                                acc[c] += xr[c]
                o = out[b, oh, ow]
                if is_max:
                    for c in range(channels):
                        o[c] = best[c]
                else:
                    for c in range(channels):
                        o[c] = acc[c] / count if count else np.nan
