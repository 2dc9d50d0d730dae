"""Bound matrix products: ``a @ b`` of two float32 matrices with the route decided once per shapes and flags.

:func:`..native.parallel.matmul` decides on every call where a product runs: the thread count (two flags read),
whether the C module's product applies (its kernel, the flags, the row split) and how it is split, then checks
the arrays. For an 8x8 product that is about 2 us of Python, twice numpy's whole product. :func:`product` makes
those decisions once per ``(m, k, n)`` for the flags of one ``env().version`` and keeps a call that only
allocates the output and calls the chosen routine: the same routine with the same arguments as
``parallel.matmul``, so the same bits. An array the C module does not take as it is (not C-contiguous float32)
runs ``parallel.matmul``.

The cpu backend's ``BatchMatMul`` uses it for 2-D float32 products, and registers it as the kernel's direct
product form (``register_direct_product``), which compiled dispatch calls for ``nf.mat_mul(a, b)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....core.flags import env
from ..native import native_split, parallel

#: A bound product: ``a @ b`` for arrays of the shapes it was bound for.
Product = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Shapes bound at most (a program with more distinct product shapes starts over).
MAX_BOUND = 4096

_F32 = np.float32
_ENV = env()
_bound: dict[tuple[tuple[int, ...], tuple[int, ...]], Product] = {}
_version = [-1]  # the flags version the bound products were decided at


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 2-D float32 ``a`` ``(m, k)`` and ``b`` ``(k, n)``, as ``parallel.matmul(a, b)`` computes it."""
    if _ENV.version != _version[0]:
        _bound.clear()
        _version[0] = _ENV.version
    key = (a.shape, b.shape)
    run = _bound.get(key)
    if run is None:
        if len(_bound) >= MAX_BOUND:
            _bound.clear()
        run = _bound[key] = bind(a.shape[0], a.shape[1], b.shape[1])
    return run(a, b)


def bind(m: int, k: int, n: int) -> Product:
    """The call ``parallel.matmul`` makes for float32 ``(m, k) @ (k, n)`` under the flags as they are now."""
    parts = parallel.threads()
    if parallel.native_product_applies(m, k, n, parts):
        split = native_split.product_split(m, k, n, parts)
        if split is not None and min(m, k, n) >= 1:
            return _native(m, k, n, split)
    return parallel.matmul if parallel.splits_rows(m, k, n, parts) else np.matmul


def _native(m: int, k: int, n: int, split: tuple[int, int, bool]) -> Product:
    """The C module's product (``matmul_into``'s call, through ``_gemm.product``) into a new output."""
    threads, chunk, by_cols = split
    gemm, shape, params = native_split.module().product, (m, n), (m, k, n, 0, threads, chunk, 0.0, by_cols)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        y = np.empty(shape, _F32)
        try:
            gemm(a, b, y, None, None, None, *params)
        except (ValueError, BufferError):  # refused before any work: not C-contiguous float32
            return parallel.matmul(a, b)
        return y

    return run
