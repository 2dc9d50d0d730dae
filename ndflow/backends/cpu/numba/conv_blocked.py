"""Convolutions run blocked: im2col and matrix products over blocks of output rows (each block's columns stay in
cache), on the native workers where they run (:func:`.native_split.conv_into`) or ndflow's threads; and the
im2col alone. Like :mod:`.ops`, each entry point returns None where the compiled path does not apply."""

from __future__ import annotations

import math
import threading

import numpy as np

from ..native import native_split
from ..native import parallel as cpu_parallel
from . import kernels
from .route import BLOCKED, Route

_modules: dict[str, object] = {}


def im2col(x: np.ndarray, info) -> np.ndarray | None:
    """The ``(batch * OH * OW, KH * KW * C)`` column matrix of a channels-last float32 2-D convolution, written
    in one compiled pass (no padded copy of the input); None when the compiled path does not apply."""
    if len(info.filter_size) != 2 or x.ndim != 4 or x.dtype != np.float32:
        return None
    k = kernels()
    if k is None:
        return None
    (kh, kw), (sh, sw), (dh, dw) = info.filter_size, info.strides, info.dilations
    out_h, out_w = info.out_size
    cols = np.empty((x.shape[0] * out_h * out_w, kh * kw * x.shape[-1]), dtype=np.float32)
    if cols.size:
        pt, pl = info.pads[0][0], info.pads[1][0]
        k.im2col2d(np.ascontiguousarray(x), cols, kh, kw, sh, sw, dh, dw, pt, pl, out_h, out_w, 0, x.shape[0] * out_h)
    return cols


# Column-matrix bytes per block of a blocked convolution: the block stays in L2 between im2col and the product.
CONV_BLOCK_BYTES = 512 * 1024

# Column buffers up to this many bytes are kept per thread and reused by the next blocked convolution.
SCRATCH_MAX_BYTES = 4 * CONV_BLOCK_BYTES

_scratch = threading.local()


def _scratch_cols(rows: int, n_cols: int) -> np.ndarray:
    """A ``(rows, n_cols)`` float32 work buffer: this thread's reused one when small enough (a thread's
    blocked convolution never runs twice at once: the compiled code and BLAS call back into no Python)."""
    size = rows * n_cols
    if 4 * size > SCRATCH_MAX_BYTES:
        return np.empty((rows, n_cols), dtype=np.float32)
    buf = getattr(_scratch, "cols", None)
    if buf is None or buf.size < size:
        buf = _scratch.cols = np.empty(max(size, 1024), dtype=np.float32)
    return buf[:size].reshape(rows, n_cols)


def conv_route(info, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Route | None:
    """How a channels-last 2-D convolution runs blocked (im2col and matrix products over blocks of output rows),
    or None when it cannot (not 2-D, or nothing to compute)."""
    if len(info.filter_size) != 2 or len(x_shape) != 4:
        return None
    (kh, kw), (sh, sw), (dh, dw) = info.filter_size, info.strides, info.dilations
    out_h, out_w = info.out_size
    n_cols = kh * kw * x_shape[-1]
    shape = (x_shape[0], out_h, out_w, w_shape[-1])
    if math.prod(shape) == 0 or n_cols == 0:
        return None
    static = (kh, kw, sh, sw, dh, dw, info.pads[0][0], info.pads[1][0], out_h, out_w)
    return Route(BLOCKED, shape, math.prod(shape) * n_cols, static)


def run_blocked(route: Route, k, x: np.ndarray, w: np.ndarray, ep_args: tuple | None = None) -> np.ndarray:
    """Run a blocked route with the compiled kernels ``k``: per block of output rows, im2col into a reused
    buffer, one matrix product, then (``ep_args``, from :meth:`Epilogue.args` for the 2-D output, sigmoid
    excluded) the epilogue while the block's output is still in cache."""
    batch, out_h, out_w, out_channels = route.out_shape
    rows = batch * out_h
    n_cols = route.static[0] * route.static[1] * x.shape[-1]
    block = max(1, CONV_BLOCK_BYTES // (4 * out_w * n_cols))
    y = np.empty((rows * out_w, out_channels), dtype=np.float32)
    w2 = np.ascontiguousarray(w.reshape(n_cols, out_channels))
    xc = np.ascontiguousarray(x)

    def span(_: int, start: int, stop: int) -> None:  # output rows [start, stop): one thread's blocks
        cols = _scratch_cols(min(block, stop - start) * out_w, n_cols)
        for r0 in range(start, stop, block):
            r1 = min(stop, r0 + block)
            c = cols[: (r1 - r0) * out_w]
            k.im2col2d(xc, c, *route.static, r0, r1)
            yb = y[r0 * out_w : r1 * out_w]
            np.matmul(c, w2, out=yb)
            if ep_args is not None:
                bias, add, act, alpha, slopes = ep_args
                k.epilogue_serial(yb, bias, add[r0 * out_w : r1 * out_w] if add.size else add, act, alpha, slopes)

    # Large convolutions over the cores (ndflow's threads, cpu/native/parallel.py): the compiled code releases the GIL.
    if _blocked_native(route, xc, w2, y, ep_args):
        return y.reshape(route.out_shape)
    parts = cpu_parallel.threads() if 2 * route.work >= cpu_parallel.MIN_SPLIT_FLOPS else 1
    cpu_parallel.run_spans(span, rows, parts)
    return y.reshape(route.out_shape)


# Column-matrix bytes per chunk of a convolution on the native workers: written and multiplied in one core's L2.
NATIVE_CHUNK_BYTES = 256 * 1024


def native_split_of(route: Route, n_cols: int) -> tuple[int, int] | None:
    """``(threads, chunk)`` of a blocked route on the native workers (chunks of ``chunk`` column-matrix rows,
    whole output rows each, sized to stay in one core's L2), or None where it does not run there (no workers,
    or too little work for a split and no AVX-512 kernel for one thread)."""
    if not native_split.available():
        return None
    threads = cpu_parallel.threads()
    batch, out_h, out_w, _ = route.out_shape
    if threads < 2 or 2 * route.work < native_split.MIN_FLOPS:
        if not native_split.avx512_product(batch * out_h * out_w, n_cols):
            return None
        threads = 1  # the C module's own kernel, on this thread
    rows = batch * out_h
    chunk = max(
        1, min(-(-rows // (threads * native_split.CHUNKS_PER_THREAD)), NATIVE_CHUNK_BYTES // (4 * out_w * n_cols))
    )
    return threads, chunk * out_w


def cols_address() -> int:
    """The address of the im2col rows callback (numba, :mod:`._conv_rows`; compiled on first use)."""
    address = _modules.get("cols")
    if address is None:
        from . import _conv_rows

        address = _modules["cols"] = _conv_rows.im2col_rows.address
    return address  # type: ignore[return-value]


def _blocked_native(route: Route, x: np.ndarray, w2: np.ndarray, y: np.ndarray, ep_args) -> bool:
    """A blocked convolution on the native workers (:func:`.native_split.conv_into`): chunks of whole output
    rows, each one's im2col (a numba C callback, :mod:`._conv_rows`) then its product and epilogue on the thread
    that claimed it. False, with nothing written, where that does not apply (the caller runs the blocks)."""
    if ep_args is not None and ep_args[2] not in native_split.ACTS:
        return False
    split = native_split_of(route, w2.shape[0])
    if split is None:
        return False
    threads, chunk = split
    if ep_args is None:
        return native_split.conv_into(cols_address(), x, route.static, w2, y, threads, chunk)  # type: ignore[arg-type]
    bias, add, act, alpha, slopes = ep_args
    bias, add, slopes = (v if v.size else None for v in (bias, add, slopes))
    return native_split.conv_into(
        cols_address(),
        x,
        route.static,
        w2,
        y,
        threads,
        chunk,
        bias,
        add,
        act,
        alpha,
        slopes,  # type: ignore[arg-type]
    )


def conv2d(x: np.ndarray, w: np.ndarray, info) -> np.ndarray | None:
    """Channels-last float32 2-D convolution (``w`` is ``[kh, kw, in, out]``) as im2col and matrix products over
    blocks of output rows (each block's columns stay in cache); None when the compiled path does not apply."""
    if len(info.filter_size) != 2 or x.ndim != 4 or x.dtype != np.float32 or w.dtype != np.float32:
        return None
    k = kernels()
    if k is None:
        return None
    route = conv_route(info, x.shape, w.shape)
    if route is None:
        return np.zeros((x.shape[0], *info.out_size, w.shape[-1]), dtype=np.float32)
    return run_blocked(route, k, x, w)
