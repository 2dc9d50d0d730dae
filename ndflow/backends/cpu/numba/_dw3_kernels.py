"""numba kernel of the 3x3 depthwise convolution (multiplier 1) with register blocking over output positions
(imported lazily by :mod:`.ops` once :func:`ndflow.backends.cpu.numba.kernels` has loaded numba; see
:mod:`._kernels` for the conventions).

Each output row is computed in three parts:

- interior positions of an interior row (every tap inside the input), unit dilation, width stride 1 or 2: four
  neighbouring positions at a time. The loop runs over the channels (vectorised: channels are contiguous in
  NHWC); per channel vector the nine weights are loaded once for the four positions, and the input columns
  that the four windows share are loaded once (six columns per input row at stride 1, nine at stride 2), so a
  vector of outputs costs about 7 loads instead of 18. The four sums stay in registers until stored;
- the other interior positions: one position at a time, the nine taps summed in registers;
- border positions (a tap outside the input): the taps inside the input accumulated in the output one at a
  time, vectorised over the channels (taps outside are skipped, as TF.js's kernels skip them).

Every output is the sum of its taps in row-major order, one rounding per multiply and per add (no fused
multiply-add), the order of the numpy path, so the compiled and numpy paths agree bit for bit (up to the sign of
a zero). Indexes into the flattened arrays are unsigned (``np.uint64``): numba then emits no wrap-around test,
and LLVM vectorises the channel loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._epilogue import epilogue_rows

# isort: split
from ._conv_kernels import _interior

U = np.uint64


@njit(cache=True, nogil=True)
def _blocks_s1(xf, wf, of, r0, r1, r2, xbs, obs, cu, n, last):  # pragma: no cover - compiled
    """Blocks of four positions at width stride 1, unit dilation: block ``i < n`` at offset ``j = 4i``, then one
    at ``j = last`` (which may overlap the one before: the same values are written again). A block writes
    ``of[obs + (j+p)*C + c]`` (``p < 4``) from the input columns at ``xbs + (j+p+kw)*C`` of the rows at ``r0``,
    ``r1``, ``r2``; ``wf`` is the ``(9, C)`` weights, flattened."""
    c1, c2, c3, c4, c5 = cu, cu + cu, U(3) * cu, U(4) * cu, U(5) * cu
    c6, c7, c8 = U(6) * cu, U(7) * cu, U(8) * cu
    for i in range(n + 1):
        j = U(4 * i) if i < n else U(last)
        xb = xbs + j * cu
        ob = obs + j * cu
        for c in range(cu):
            w0, w1, w2 = wf[c], wf[c1 + c], wf[c2 + c]
            w3, w4, w5 = wf[c3 + c], wf[c4 + c], wf[c5 + c]
            w6, w7, w8 = wf[c6 + c], wf[c7 + c], wf[c8 + c]
            a = r0 + xb + c
            x00, x01, x02, x03, x04, x05 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4], xf[a + c5]
            a = r1 + xb + c
            x10, x11, x12, x13, x14, x15 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4], xf[a + c5]
            a = r2 + xb + c
            x20, x21, x22, x23, x24, x25 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4], xf[a + c5]
            s0 = x00 * w0
            s0 += x01 * w1
            s0 += x02 * w2
            s0 += x10 * w3
            s0 += x11 * w4
            s0 += x12 * w5
            s0 += x20 * w6
            s0 += x21 * w7
            s0 += x22 * w8
            s1 = x01 * w0
            s1 += x02 * w1
            s1 += x03 * w2
            s1 += x11 * w3
            s1 += x12 * w4
            s1 += x13 * w5
            s1 += x21 * w6
            s1 += x22 * w7
            s1 += x23 * w8
            s2 = x02 * w0
            s2 += x03 * w1
            s2 += x04 * w2
            s2 += x12 * w3
            s2 += x13 * w4
            s2 += x14 * w5
            s2 += x22 * w6
            s2 += x23 * w7
            s2 += x24 * w8
            s3 = x03 * w0
            s3 += x04 * w1
            s3 += x05 * w2
            s3 += x13 * w3
            s3 += x14 * w4
            s3 += x15 * w5
            s3 += x23 * w6
            s3 += x24 * w7
            s3 += x25 * w8
            o = ob + c
            of[o] = s0
            of[o + c1] = s1
            of[o + c2] = s2
            of[o + c3] = s3


@njit(cache=True, nogil=True)
def _blocks_s2(xf, wf, of, r0, r1, r2, xbs, obs, cu, n, last):  # pragma: no cover - compiled
    """:func:`_blocks_s1` at width stride 2 with blocks of two positions (block ``i < n`` at ``j = 2i``):
    position ``p`` reads the input columns ``2(j+p) .. 2(j+p)+2``, five in all per row."""
    c1, c2, c3, c4 = cu, cu + cu, U(3) * cu, U(4) * cu
    c5, c6, c7, c8 = U(5) * cu, U(6) * cu, U(7) * cu, U(8) * cu
    for i in range(n + 1):
        j = U(2 * i) if i < n else U(last)
        xb = xbs + U(2) * j * cu
        ob = obs + j * cu
        for c in range(cu):
            w0, w1, w2 = wf[c], wf[c1 + c], wf[c2 + c]
            w3, w4, w5 = wf[c3 + c], wf[c4 + c], wf[c5 + c]
            w6, w7, w8 = wf[c6 + c], wf[c7 + c], wf[c8 + c]
            a = r0 + xb + c
            x00, x01, x02, x03, x04 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4]
            a = r1 + xb + c
            x10, x11, x12, x13, x14 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4]
            a = r2 + xb + c
            x20, x21, x22, x23, x24 = xf[a], xf[a + c1], xf[a + c2], xf[a + c3], xf[a + c4]
            s0 = x00 * w0
            s0 += x01 * w1
            s0 += x02 * w2
            s0 += x10 * w3
            s0 += x11 * w4
            s0 += x12 * w5
            s0 += x20 * w6
            s0 += x21 * w7
            s0 += x22 * w8
            s1 = x02 * w0
            s1 += x03 * w1
            s1 += x04 * w2
            s1 += x12 * w3
            s1 += x13 * w4
            s1 += x14 * w5
            s1 += x22 * w6
            s1 += x23 * w7
            s1 += x24 * w8
            o = ob + c
            of[o] = s0
            of[o + c1] = s1


@njit(cache=True, nogil=True)
def _position(xf, wf, of, r0, r1, r2, xb, d, ob, cu):  # pragma: no cover - compiled
    """One position with every tap inside the input (any stride; ``d`` = width dilation * C): the nine taps
    summed in registers, vectorised over the channels."""
    d2 = d + d
    for c in range(cu):
        a = xb + c
        acc = xf[r0 + a] * wf[c]
        acc += xf[r0 + a + d] * wf[cu + c]
        acc += xf[r0 + a + d2] * wf[U(2) * cu + c]
        acc += xf[r1 + a] * wf[U(3) * cu + c]
        acc += xf[r1 + a + d] * wf[U(4) * cu + c]
        acc += xf[r1 + a + d2] * wf[U(5) * cu + c]
        acc += xf[r2 + a] * wf[U(6) * cu + c]
        acc += xf[r2 + a + d] * wf[U(7) * cu + c]
        acc += xf[r2 + a + d2] * wf[U(8) * cu + c]
        of[ob + c] = acc


@njit(cache=True, nogil=True)
def _position_two_columns(xf, wf, of, r0, r1, r2, xa, xb, wa, wb, ob, cu):  # pragma: no cover - compiled
    """One position of an interior row whose window has two input columns inside (at offsets ``xa`` < ``xb``,
    weights of taps ``wa`` < ``wb`` of the first filter row, times C): six taps summed in registers."""
    c3, c6 = U(3) * cu, U(6) * cu
    for c in range(cu):
        acc = xf[r0 + xa + c] * wf[wa + c]
        acc += xf[r0 + xb + c] * wf[wb + c]
        acc += xf[r1 + xa + c] * wf[c3 + wa + c]
        acc += xf[r1 + xb + c] * wf[c3 + wb + c]
        acc += xf[r2 + xa + c] * wf[c6 + wa + c]
        acc += xf[r2 + xb + c] * wf[c6 + wb + c]
        of[ob + c] = acc


@njit(cache=True, nogil=True)
def _border(xf, wf, of, row0, ih0, iw0, height, width, dh, dw, ob, cu):  # pragma: no cover - compiled
    """One position with a tap outside the input: the taps inside, in row-major order, accumulated in the
    output (the first one assigned); 0 when none is inside. ``row0`` is the image's first input row offset."""
    first = True
    for kh in range(3):
        ih = ih0 + kh * dh
        if ih < 0 or ih >= height:
            continue
        for kw in range(3):
            iw = iw0 + kw * dw
            if iw < 0 or iw >= width:
                continue
            xs = row0 + U(ih * width + iw) * cu
            ws = U(kh * 3 + kw) * cu
            if first:
                for c in range(cu):
                    of[ob + c] = xf[xs + c] * wf[ws + c]
                first = False
            else:
                for c in range(cu):
                    of[ob + c] += xf[xs + c] * wf[ws + c]
    if first:
        for c in range(cu):
            of[ob + c] = 0


@njit(cache=True, nogil=True)
def _row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover - compiled
    """Output row ``r`` (= batch * out_height + y), epilogue included; ``w`` is ``(3, 3, C)``."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    b = r // out_h
    oh = r - b * out_h
    ih0 = oh * sh - pt
    lo, hi = _interior(width, 2 * dw, sw, pl, out_w)
    inside = ih0 >= 0 and ih0 + 2 * dh < height
    xf = x.reshape(-1)
    wf = w.reshape(-1)
    of = out.reshape(-1)
    cu = U(channels)
    row = U(width) * cu
    row0 = U(b * height) * row
    orow = U(r * out_w) * cu
    if inside and hi > lo:
        r0 = row0 + U(ih0) * row
        r1 = r0 + U(dh) * row
        r2 = r1 + U(dh) * row
        count = hi - lo
        xbs = U(lo * sw - pl) * cu
        obs = orow + U(lo) * cu
        if dw == 1 and sw == 1 and count >= 4:
            n = (count - 1) // 4
            _blocks_s1(xf, wf, of, r0, r1, r2, xbs, obs, cu, n, count - 4)
        elif dw == 1 and sw == 2 and count >= 2:
            n = (count - 1) // 2
            _blocks_s2(xf, wf, of, r0, r1, r2, xbs, obs, cu, n, count - 2)
        else:
            d = U(dw) * cu
            for ow in range(lo, hi):
                _position(xf, wf, of, r0, r1, r2, U(ow * sw - pl) * cu, d, orow + U(ow) * cu, cu)
    for ow in range(out_w):
        if inside and lo <= ow < hi:
            continue
        iw0 = ow * sw - pl
        if inside and dw == 1 and iw0 == -1 and width >= 2:  # left edge: filter columns 1 and 2 inside
            r0 = row0 + U(ih0) * row
            r1 = r0 + U(dh) * row
            r2 = r1 + U(dh) * row
            _position_two_columns(xf, wf, of, r0, r1, r2, U(0), cu, cu, cu + cu, orow + U(ow) * cu, cu)
        elif inside and dw == 1 and iw0 == width - 2 and width >= 2:  # right edge: filter columns 0 and 1
            r0 = row0 + U(ih0) * row
            r1 = r0 + U(dh) * row
            r2 = r1 + U(dh) * row
            xa = U(iw0) * cu
            _position_two_columns(xf, wf, of, r0, r1, r2, xa, xa + cu, U(0), cu, orow + U(ow) * cu, cu)
        else:
            _border(xf, wf, of, row0, ih0, iw0, height, width, dh, dw, orow + U(ow) * cu, cu)
    epilogue_rows(out[b, oh], 0, out_w, bias, add[b, oh] if add.size else add[0, 0], act, alpha, slopes)


@njit(cache=True, parallel=True)
def depthwise3x3_blocked(x, w, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """3x3 depthwise convolution (multiplier 1) ``x (B,H,W,C) * w (3,3,C) -> out (B,OH,OW,C)``, epilogue
    included, output rows split between numba's threads."""
    for r in prange(out.shape[0] * out.shape[1]):
        _row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)


@njit(cache=True, nogil=True)
def depthwise3x3_blocked_serial(x, w, out, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes):  # pragma: no cover
    """:func:`depthwise3x3_blocked` on the calling thread."""
    for r in range(out.shape[0] * out.shape[1]):
        _row(x, w, out, r, sh, sw, dh, dw, pt, pl, bias, add, act, alpha, slopes)
