"""The depthwise convolutions' output rows as C callbacks, for the native thread pool (``_gemm.run_rows``).

Each callback ``fn(ctx, r0, r1)`` computes output rows ``[r0, r1)`` (row = batch * out_height + y) of one
depthwise kernel, epilogue included, with the same compiled row function as the numba kernels of
:mod:`._conv_kernels`, :mod:`._dw_kernels`, :mod:`._dw3_kernels` and :mod:`._kernels`: a row has the same
bits whichever thread computes it. ``ctx`` is the pool's context of 64-bit slots (see the C module): the
arrays' data pointers (slots 0-7) and shapes (8-39, four per array), the integers (40-55) and the doubles
(56-63). The arrays come in the order ``x, wa, wb, out, bias, add, slopes``; the integers are the kernel's
static arguments, then the activation code; the one double is leaky relu's alpha.

Compiled when first imported (numba's ``cfunc``), cached on disk like the other kernels.
"""

from __future__ import annotations

from numba import cfunc, types

from ._context import INTS, alpha_of, array1, array2, array3, array4
from ._conv_kernels import _dw3_row
from ._dw3_kernels import _row as _dw3_blocked_row
from ._dw_kernels import _dw5_row
from ._kernels import _depthwise_row, _depthwise_row_flat

X, WA, WB, OUT, BIAS, ADD, SLOPES = range(7)

_SIGNATURE = types.void(types.CPointer(types.int64), types.int64, types.int64)


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw3_blocked_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_dw3_kernels.depthwise3x3_blocked``: arrays x, w (3, 3, C), -, out, bias, add, slopes."""
    x, w, out = array4(ctx, X), array3(ctx, WA), array4(ctx, OUT)
    bias, add, slopes, alpha = array1(ctx, BIAS), array4(ctx, ADD), array1(ctx, SLOPES), alpha_of(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw3_blocked_row(
            x, w, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw3_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_conv_kernels.depthwise3x3``: arrays x, w (3, 3, C), wt (tiled or empty 3-D), out, ..."""
    x, w, wt, out = array4(ctx, X), array3(ctx, WA), array3(ctx, WB), array4(ctx, OUT)
    bias, add, slopes, alpha = array1(ctx, BIAS), array4(ctx, ADD), array1(ctx, SLOPES), alpha_of(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw3_row(
            x, w, wt, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw5_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_dw_kernels.depthwise5x5``: arrays x, w2 (25, C), wl (period-tiled or empty 2-D), out, ..."""
    x, w2, wl, out = array4(ctx, X), array2(ctx, WA), array2(ctx, WB), array4(ctx, OUT)
    bias, add, slopes, alpha = array1(ctx, BIAS), array4(ctx, ADD), array1(ctx, SLOPES), alpha_of(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw5_row(
            x, w2, wl, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw_flat_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_kernels.depthwise_flat``: arrays x, wt (kh, kw, OW * C), -, out, ...; five static ints."""
    x, wt, out = array4(ctx, X), array3(ctx, WA), array4(ctx, OUT)
    bias, add, slopes, alpha = array1(ctx, BIAS), array4(ctx, ADD), array1(ctx, SLOPES), alpha_of(ctx)
    i = INTS
    for r in range(r0, r1):
        _depthwise_row_flat(
            x, wt, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4],
            bias, add, ctx[i + 5], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_kernels.depthwise``: arrays x, w (kh, kw, C, M), -, out, ..."""
    x, w, out = array4(ctx, X), array4(ctx, WA), array4(ctx, OUT)
    bias, add, slopes, alpha = array1(ctx, BIAS), array4(ctx, ADD), array1(ctx, SLOPES), alpha_of(ctx)
    i = INTS
    for r in range(r0, r1):
        _depthwise_row(
            x, w, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip
