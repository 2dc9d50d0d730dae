"""Bound convolution calls: a plan's C module call with everything but the arrays decided.

A plan (:mod:`.conv`) keeps a call's geometry, but running it still decides, on every call, what depends on
the flags and the thread count: whether the compiled code runs, whether the product goes to the C module and
how it is split (threads, chunk, rows or columns), which epilogue arrays are passed, plus the argument checks.
That is 5-10 us of Python per call, as long as the C product of a small layer (a 15x15x32 -> 64 pointwise
convolution takes 4-7 us). A bound call makes those decisions once, for the flags of one
``env().version``, and keeps a closure that only reads the arrays, allocates the output and calls the C module.

Bound are the routes that run on the C module: a pointwise product (``_gemm.matmul``), a blocked im2col product
(``_gemm.conv``) and a 3x3 or 5x5 depthwise convolution on the AVX-512 rows (``_gemm.run_rows``). They make the
same calls with the same arguments as :func:`.conv.run`, so the outputs are the same bits. Everything else (and
a call whose input is not C-contiguous float32) runs :func:`.conv.run`.

2-D pooling (:func:`pool2d`) binds the same way for replayed calls (:func:`replayed`): the AVX-512 max pooling
rows or numba's kernel, as :func:`.ops.pool2d` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ....core.replay_attrs import ReplayAttrs, memoized
from ..native import native_split
from ..native import parallel as cpu_parallel
from ..numba import kernels
from ..numba.ops import (
    _NONE,
    _NONE4,
    BLOCKED,
    DW,
    DW_SPLIT_MIN_WORK,
    FLAT,
    POINTWISE,
    avx512_dw_static,
    per_channel_values,
    sigmoid_into,
)

#: A bound call: the channels-last output of a plan's call on its input arrays, or None (run the plan instead).
Runner = Callable[[Sequence[np.ndarray]], "np.ndarray | None"]


def bind(plan, arrays: Sequence[np.ndarray]) -> Runner | None:
    """The bound call of ``plan`` (a :class:`.conv.ConvPlan`) for the flags as they are now, made from one
    call's input ``arrays`` (a plan's calls all have the same shapes); None where its route does not run on the
    C module now."""
    route, ep = plan.route, plan.epilogue
    if kernels() is None or not native_split.available() or ep.act not in native_split.ACTS:
        return None
    if route.kind == POINTWISE:
        return _pointwise(plan)
    if route.kind == BLOCKED:
        return _blocked(plan, arrays[0].shape[-1])
    if route.kind != DW:
        return _depthwise(plan, arrays[1].shape)
    return None


_F32 = np.dtype(np.float32)


def _usable(x: np.ndarray, w: np.ndarray) -> bool:
    """Whether the input and the filter go to the C module as they are (C-contiguous float32)."""
    return x.dtype is _F32 and w.dtype is _F32 and x.flags.c_contiguous and w.flags.c_contiguous


def _residual(v: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | bool:
    """The residual input as a C-contiguous array of ``shape``, or False where it is not float32."""
    return np.ascontiguousarray(v).reshape(shape) if v.dtype is _F32 else False


def _epilogue(ep, channels: int) -> Callable[[Sequence[np.ndarray]], tuple]:
    """``(bias, slopes)`` of a call, None for those it lacks (as the C module takes them); None where one is not
    float32 (the plan's path converts it)."""
    bias, bias_layout, prelu, prelu_layout = ep.bias, ep.bias_layout, ep.prelu, ep.prelu_layout

    def values(arrays: Sequence[np.ndarray]) -> tuple | None:
        b = None if bias < 0 else per_channel_values(arrays[bias], bias_layout, channels)
        s = None if prelu < 0 else per_channel_values(arrays[prelu], prelu_layout, channels)
        if (b is not None and b.dtype is not _F32) or (s is not None and s.dtype is not _F32):
            return None
        return b, s

    return values


def _pointwise(plan) -> Runner | None:
    """A 1x1 convolution as one product on the C module (:func:`.native_split.matmul_into`)."""
    route, ep = plan.route, plan.epilogue
    rows, depth, channels = route.static
    threads = cpu_parallel.threads()
    if not (2 * route.work >= native_split.MIN_FLOPS or native_split.avx512_product(rows, depth)):
        return None
    split = native_split.product_split(rows, depth, channels, threads)
    if split is None:
        return None
    threads, chunk, by_cols = split
    if ep.sigmoid or (ep.bias >= 0 and ep.bias_layout != FLAT) or (ep.prelu >= 0 and ep.prelu_layout != FLAT):
        matmul, act, alpha = native_split.module().matmul, ep.act, float(ep.alpha)

        def call(x: np.ndarray, w: np.ndarray, y: np.ndarray, bias, add, slopes) -> None:
            matmul(x.reshape(rows, depth), w.reshape(depth, channels), y, bias, add, act, threads, chunk, alpha,
                   slopes, by_cols)  # fmt: skip

        return _product(ep, rows, channels, route.out_shape, call)
    return _flat_product(ep, route.out_shape, (rows, depth, channels, ep.act, threads, chunk, float(ep.alpha), by_cols))


def _flat_product(ep, out_shape: tuple[int, ...], params: tuple) -> Runner:
    """A pointwise runner whose arrays all go to the C module as they are (``_gemm.product`` takes any shape of
    the right size): the bias and slopes one value per channel (FLAT), no sigmoid after. An array that does not
    fit (not C-contiguous float32) makes the C module refuse the call before any work: the plan's path then."""
    product, bias, add, prelu = native_split.module().product, ep.bias, ep.add, ep.prelu
    f32 = np.float32

    def run(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
        y = np.empty(out_shape, f32)
        try:
            product(arrays[0], arrays[1], y, None if bias < 0 else arrays[bias], None if add < 0 else arrays[add],
                    None if prelu < 0 else arrays[prelu], *params)  # fmt: skip
        except (ValueError, BufferError):
            return None
        return y

    return run


def _product(ep, rows: int, channels: int, out_shape: tuple[int, ...], call: Callable[..., None]) -> Runner:
    """A runner around ``call(x, w, y, bias, add, slopes)``, the C module's product into the ``(rows, channels)``
    output ``y`` with the epilogue's arrays (None for those the call lacks)."""
    epilogue, add_at, sigmoid = _epilogue(ep, channels), ep.add, ep.sigmoid

    def run(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
        x, w = arrays[0], arrays[1]
        extra = epilogue(arrays)
        if extra is None or not _usable(x, w):
            return None
        add = None if add_at < 0 else _residual(arrays[add_at], (rows, channels))
        if add is False:
            return None
        y = np.empty((rows, channels), dtype=np.float32)
        call(x, w, y, extra[0], add, extra[1])
        if sigmoid:
            sigmoid_into(y, y)
        return y.reshape(out_shape)

    return run


def _blocked(plan, in_channels: int) -> Runner | None:
    """An im2col convolution on the C module's workers (:func:`.conv_blocked._blocked_native`)."""
    from ..numba import conv_blocked

    route, ep = plan.route, plan.epilogue
    batch, out_h, out_w, channels = route.out_shape
    n_cols = route.static[0] * route.static[1] * in_channels
    split = conv_blocked.native_split_of(route, n_cols)
    if split is None:
        return None
    threads, chunk = split
    conv, address, act, alpha = native_split.module().conv, conv_blocked.cols_address(), ep.act, float(ep.alpha)
    ints = route.static

    def call(x: np.ndarray, w: np.ndarray, y: np.ndarray, bias, add, slopes) -> None:
        conv(address, (x,), ints, w.reshape(n_cols, channels), y, bias, add, act, threads, chunk, alpha, slopes)

    return _product(ep, batch * out_h * out_w, channels, route.out_shape, call)


def _depthwise(plan, w_shape: tuple[int, ...]) -> Runner | None:
    """A 3x3 or 5x5 depthwise convolution on the C module's AVX-512 rows (:func:`.ops._dw_avx512`)."""
    route, ep = plan.route, plan.epilogue
    static = avx512_dw_static(route, w_shape)
    if static is None:
        return None
    size = w_shape[0]
    address = native_split.dw_address(size)
    if not address:
        return None
    rows = route.out_shape[0] * route.out_shape[1]
    threads = max(1, cpu_parallel.threads()) if route.work >= DW_SPLIT_MIN_WORK else 1
    chunk = native_split.rows_chunk(rows, threads)
    run_rows, epilogue = native_split.module().run_rows, _epilogue(ep, route.out_shape[3])
    taps, channels = size * size, w_shape[2]
    ints, reals = (*static, ep.act), (float(ep.alpha),)
    add_at, sigmoid, out_shape = ep.add, ep.sigmoid, route.out_shape
    if not sigmoid and (ep.bias < 0 or ep.bias_layout == FLAT) and (ep.prelu < 0 or ep.prelu_layout == FLAT):
        return _flat_depthwise(ep, address, ints, reals, rows, chunk, threads, out_shape)

    def run(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
        x, w = arrays[0], arrays[1]
        extra = epilogue(arrays)
        if extra is None or not _usable(x, w):
            return None
        bias, slopes = extra
        add = _NONE4 if add_at < 0 else _residual(arrays[add_at], out_shape)
        if add is False:
            return None
        y = np.empty(out_shape, dtype=np.float32)
        work = (x, w.reshape(taps, channels), _NONE, y, _NONE if bias is None else bias, add,
                _NONE if slopes is None else slopes)  # fmt: skip
        run_rows(address, work, ints, reals, rows, chunk, threads)
        if sigmoid:
            sigmoid_into(y, y)
        return y

    return run


def _flat_depthwise(ep, address: int, ints: tuple, reals: tuple, rows: int, chunk: int, threads: int,
                    out_shape: tuple[int, ...]) -> Runner:  # fmt: skip
    """A depthwise runner whose arrays go to the AVX-512 rows as they are: the row function reads the filter's
    taps, and the bias and slopes (one value per channel, FLAT), from their buffers whatever their shapes. An
    array that does not fit (not C-contiguous float32) makes the C module refuse the call before any work."""
    run_rows, bias, add, prelu, f32 = native_split.module().run_rows, ep.bias, ep.add, ep.prelu, np.float32

    def run(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
        y = np.empty(out_shape, f32)
        work = (arrays[0], arrays[1], _NONE, y, _NONE if bias < 0 else arrays[bias],
                _NONE4 if add < 0 else arrays[add], _NONE if prelu < 0 else arrays[prelu])  # fmt: skip
        try:
            run_rows(address, work, ints, reals, rows, chunk, threads)
        except (ValueError, BufferError):
            return None
        return y

    return run


def replayed(attrs: object, make: Callable[[], Callable | None]) -> Callable | None:
    """The bound call of a replayed kernel call (``attrs`` a :class:`ReplayAttrs`: same input signature every
    time) for the flags as they are: ``make()``'s, kept with the attributes (:func:`memoized`); None for any
    other call, or where ``make`` found nothing to bind."""
    return memoized(attrs, make) if attrs.__class__ is ReplayAttrs else None


def pool2d(x_shape: tuple[int, ...], geo: tuple, is_max: bool) -> Callable[[np.ndarray], np.ndarray | None] | None:
    """The bound form of :func:`.ops.pool2d` for inputs of ``x_shape``: ``run(x)``, the pooled channels-last
    float32 array (None where ``x`` is not C-contiguous float32); None where the compiled path does not apply."""
    (fh, fw), (sh, sw), (dh, dw), (pt, pl), out_size = geo
    k = kernels()
    if k is None or len(x_shape) != 4:
        return None
    out_shape = (x_shape[0], *out_size, x_shape[-1])
    if math.prod(out_shape) == 0:
        return None
    ints = (fh, fw, sh, sw, dh, dw, pt, pl)
    address = native_split.max_pool_address() if is_max else 0
    if address:
        threads = max(1, cpu_parallel.threads()) if math.prod(x_shape) * fh * fw >= DW_SPLIT_MIN_WORK else 1
        rows = out_shape[0] * out_shape[1]
        chunk, run_rows = native_split.rows_chunk(rows, threads), native_split.module().run_rows

        def rows_of(x: np.ndarray) -> np.ndarray | None:
            if x.dtype is not _F32 or not x.flags.c_contiguous:
                return None
            y = np.empty(out_shape, dtype=np.float32)
            run_rows(address, (x, _NONE, _NONE, y), ints, (), rows, chunk, threads)
            return y

        return rows_of
    pool = k.pool2d

    def pooled(x: np.ndarray) -> np.ndarray | None:
        if x.dtype is not _F32 or not x.flags.c_contiguous:
            return None
        y = np.empty(out_shape, dtype=np.float32)
        pool(x, y, is_max, *ints)
        return y

    return pooled
