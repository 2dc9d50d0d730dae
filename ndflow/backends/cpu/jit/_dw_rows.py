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

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

from ._conv_kernels import _dw3_row
from ._dw3_kernels import _row as _dw3_blocked_row
from ._dw_kernels import _dw5_row
from ._kernels import _depthwise_row, _depthwise_row_flat

X, WA, WB, OUT, BIAS, ADD, SLOPES = range(7)
SHAPES, INTS, REALS = 8, 40, 56

_SIGNATURE = types.void(types.CPointer(types.int64), types.int64, types.int64)


@intrinsic
def _pointer(typingctx, address):  # pragma: no cover - compiled
    """An integer address as a ``void *`` (for :func:`numba.carray`)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(address), codegen


@intrinsic
def _reals(typingctx, ctx):  # pragma: no cover - compiled
    """The context's slots as a ``void *`` (to read its doubles)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(ctx), codegen


@njit(cache=True, nogil=True)
def _a1(ctx, i):  # pragma: no cover - compiled
    return carray(_pointer(ctx[i]), (ctx[SHAPES + 4 * i],), np.float32)


@njit(cache=True, nogil=True)
def _a2(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(_pointer(ctx[i]), (ctx[s], ctx[s + 1]), np.float32)


@njit(cache=True, nogil=True)
def _a3(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(_pointer(ctx[i]), (ctx[s], ctx[s + 1], ctx[s + 2]), np.float32)


@njit(cache=True, nogil=True)
def _a4(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(_pointer(ctx[i]), (ctx[s], ctx[s + 1], ctx[s + 2], ctx[s + 3]), np.float32)


@njit(cache=True, nogil=True)
def _alpha(ctx):  # pragma: no cover - compiled
    return np.float32(carray(_reals(ctx), (REALS + 1,), np.float64)[REALS])


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw3_blocked_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_dw3_kernels.depthwise3x3_blocked``: arrays x, w (3, 3, C), -, out, bias, add, slopes."""
    x, w, out = _a4(ctx, X), _a3(ctx, WA), _a4(ctx, OUT)
    bias, add, slopes, alpha = _a1(ctx, BIAS), _a4(ctx, ADD), _a1(ctx, SLOPES), _alpha(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw3_blocked_row(
            x, w, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw3_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_conv_kernels.depthwise3x3``: arrays x, w (3, 3, C), wt (tiled or empty 3-D), out, ..."""
    x, w, wt, out = _a4(ctx, X), _a3(ctx, WA), _a3(ctx, WB), _a4(ctx, OUT)
    bias, add, slopes, alpha = _a1(ctx, BIAS), _a4(ctx, ADD), _a1(ctx, SLOPES), _alpha(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw3_row(
            x, w, wt, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw5_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_dw_kernels.depthwise5x5``: arrays x, w2 (25, C), wl (period-tiled or empty 2-D), out, ..."""
    x, w2, wl, out = _a4(ctx, X), _a2(ctx, WA), _a2(ctx, WB), _a4(ctx, OUT)
    bias, add, slopes, alpha = _a1(ctx, BIAS), _a4(ctx, ADD), _a1(ctx, SLOPES), _alpha(ctx)
    i = INTS
    for r in range(r0, r1):
        _dw5_row(
            x, w2, wl, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw_flat_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_kernels.depthwise_flat``: arrays x, wt (kh, kw, OW * C), -, out, ...; five static ints."""
    x, wt, out = _a4(ctx, X), _a3(ctx, WA), _a4(ctx, OUT)
    bias, add, slopes, alpha = _a1(ctx, BIAS), _a4(ctx, ADD), _a1(ctx, SLOPES), _alpha(ctx)
    i = INTS
    for r in range(r0, r1):
        _depthwise_row_flat(
            x, wt, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4],
            bias, add, ctx[i + 5], alpha, slopes,
        )  # fmt: skip


@cfunc(_SIGNATURE, cache=True, error_model="numpy")
def dw_rows(ctx, r0, r1):  # pragma: no cover - compiled
    """Rows of ``_kernels.depthwise``: arrays x, w (kh, kw, C, M), -, out, ..."""
    x, w, out = _a4(ctx, X), _a4(ctx, WA), _a4(ctx, OUT)
    bias, add, slopes, alpha = _a1(ctx, BIAS), _a4(ctx, ADD), _a1(ctx, SLOPES), _alpha(ctx)
    i = INTS
    for r in range(r0, r1):
        _depthwise_row(
            x, w, out, r, ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3], ctx[i + 4], ctx[i + 5],
            bias, add, ctx[i + 6], alpha, slopes,
        )  # fmt: skip
