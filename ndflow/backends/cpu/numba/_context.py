"""The native pool's job context, read from numba's C callbacks (``numba/_dw_rows.py``, ``numba/_conv_rows.py``).

The C module (``native/csrc/gemm_pool.c``) hands a callback 64 slots of 64 bits: the arrays' data pointers (slots
0-7), their shapes (8-39, four per array), integers (40-55) and doubles (56-63). These helpers view array ``i``
as a float32 array of its rank, and read the first double as a float32.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

SHAPES, INTS, REALS = 8, 40, 56


@intrinsic
def pointer(typingctx, address):  # pragma: no cover - compiled
    """An integer address as a ``void *`` (for :func:`numba.carray`)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(address), codegen


@intrinsic
def reals_pointer(typingctx, ctx):  # pragma: no cover - compiled
    """The context's slots as a ``void *`` (to read its doubles)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(ctx), codegen


@njit(cache=True, nogil=True)
def array1(ctx, i):  # pragma: no cover - compiled
    return carray(pointer(ctx[i]), (ctx[SHAPES + 4 * i],), np.float32)


@njit(cache=True, nogil=True)
def array2(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(pointer(ctx[i]), (ctx[s], ctx[s + 1]), np.float32)


@njit(cache=True, nogil=True)
def array3(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(pointer(ctx[i]), (ctx[s], ctx[s + 1], ctx[s + 2]), np.float32)


@njit(cache=True, nogil=True)
def array4(ctx, i):  # pragma: no cover - compiled
    s = SHAPES + 4 * i
    return carray(pointer(ctx[i]), (ctx[s], ctx[s + 1], ctx[s + 2], ctx[s + 3]), np.float32)


@njit(cache=True, nogil=True)
def alpha_of(ctx):  # pragma: no cover - compiled
    return np.float32(carray(reals_pointer(ctx), (REALS + 1,), np.float64)[REALS])
