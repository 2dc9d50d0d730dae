"""A convolution's column rows as a C callback, for the native pool's convolution jobs (``_gemm.conv``).

``im2col_rows(ctx, p0, p1, dst)`` writes rows ``[p0, p1)`` of a 2-D convolution's column matrix (one row per
output position, ``kh * kw * C`` values) to ``dst``, with :func:`._conv_kernels.im2col2d`; the pool then
multiplies them while they are in the claiming thread's cache. Chunks are whole output rows: ``p0`` and
``p1`` are multiples of the output width. The context (:mod:`._context`) holds the input ``x`` (B, H, W, C)
and the integers ``kh, kw, sh, sw, dh, dw, pt, pl, out_h, out_w``.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, types

from ._context import INTS, array4
from ._conv_kernels import im2col2d

_SIGNATURE = types.void(types.CPointer(types.int64), types.int64, types.int64, types.voidptr)


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def im2col_rows(ctx, p0, p1, dst):  # pragma: no cover - compiled
    x = array4(ctx, 0)
    i = INTS
    kh, kw, out_w = ctx[i], ctx[i + 1], ctx[i + 9]
    cols = carray(dst, (p1 - p0, kh * kw * x.shape[3]), np.float32)
    im2col2d(
        x, cols, kh, kw, ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5], ctx[i + 6], ctx[i + 7], ctx[i + 8], out_w,
        p0 // out_w, p1 // out_w,
    )  # fmt: skip
