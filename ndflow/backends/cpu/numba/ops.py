"""The cpu kernels' entry points to the compiled code: argument checks, layout, serial or parallel.

Each function returns ``None`` (or ``False``) when the compiled path does not apply (JIT off, numba
missing, a dtype or layout it does not handle); the caller then runs its numpy path. Nothing here
imports numba: :func:`ndflow.backends.cpu.numba.kernels` does, on first use.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..native import native_split
from ..native import parallel as cpu_parallel
from . import ACTIVATION_CODES, kernels, parallel
from .conv_blocked import conv2d, conv_route, im2col, run_blocked  # noqa: F401 (the blocked convolutions)
from .route import (  # noqa: F401 (the kinds, here for the kernels and plans)
    BLOCKED,
    DW,
    DW3,
    DW3_BLOCKED,
    DW3_BLOCKED_MIN_CHANNELS,
    DW3_FLAT,
    DW5,
    DW5_FLAT,
    DW_FLAT,
    POINTWISE,
    Route,
)

# Work (multiply-adds) below which a kernel runs on the calling thread: starting numba's workqueue
# threads costs ~50 us, more when OpenBLAS's threads still spin after a matrix product.
PARALLEL_MIN_WORK = 3_000_000

# Output rows (width * channels values) up to this length stay in L1 while every tap sweeps them.
FLAT_ROW_MAX = 10_000

_NONE = np.zeros(0, dtype=np.float32)
_NONE2 = np.zeros((0, 0), dtype=np.float32)  # no residual, for the 2-D epilogue
_NONE4 = np.zeros((1, 1, 0, 0), dtype=np.float32)  # no residual, for the depthwise kernels (read as [0, 0])
_NONE3 = np.zeros((0, 0, 0), dtype=np.float32)  # no tiled weights, for the 3x3 depthwise kernel


class Epilogue(NamedTuple):
    """What a compiled kernel applies where it writes its output: ``+ bias``, ``+ add``, then an activation."""

    bias: np.ndarray  # (channels,) float32, or empty for none
    act: int  # an ACTIVATION_CODES value
    alpha: np.float32  # leakyrelu's slope
    slopes: np.ndarray  # prelu's per-channel slopes (channels,), or empty
    add: np.ndarray = _NONE  # a residual of the output's shape (float32, C-contiguous), or empty

    @property
    def is_identity(self) -> bool:
        return self.act == 0 and self.bias.size == 0 and self.add.size == 0

    def args(self, add_shape: tuple[int, ...]) -> tuple:
        """The compiled kernels' epilogue arguments, the residual viewed as ``add_shape``."""
        if self.add.size:
            add = self.add.reshape(add_shape)
        else:
            add = _NONE2 if len(add_shape) == 2 else _NONE4
        return self.bias, add, self.act, self.alpha, self.slopes


IDENTITY = Epilogue(_NONE, 0, np.float32(0), _NONE)
SIGMOID = ACTIVATION_CODES["sigmoid"]


def sigmoid_into(x: np.ndarray, y: np.ndarray) -> None:
    """``y = 1 / (1 + exp(-x))`` (``y`` may be ``x``) in numpy's vectorised passes: numba calls a scalar ``exp``
    per element (7x slower), and these are the numpy paths' own operations, so both paths agree exactly."""
    np.negative(x, out=y)
    np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)


def _split_sigmoid(ep: Epilogue) -> tuple[Epilogue, bool]:
    """``ep`` without a sigmoid (applied afterwards by :func:`sigmoid_into`), and whether it had one."""
    return (ep._replace(act=0), True) if ep.act == SIGMOID else (ep, False)


# How a bias or PReLU weights line up with the output channels (channel_layout).
FLAT, WIDE = 1, 2


def channel_layout(shape: tuple[int, ...], is_float32: bool, channels: int, ndim: int) -> int | None:
    """FLAT (one value per channel) or WIDE (one value for every channel) when a float32 array of ``shape``
    broadcasts along the last axis of a rank-``ndim`` output only; else None."""
    if (
        not is_float32
        or len(shape) > ndim
        or any(d != 1 for d in shape[:-1])
        or (shape and shape[-1] not in (1, channels))
    ):
        return None
    return FLAT if math.prod(shape) == channels else WIDE


def per_channel_values(v: np.ndarray, layout: int, channels: int) -> np.ndarray:
    """``v`` (of a :func:`channel_layout`) as a contiguous (channels,) float32 vector."""
    flat = v.reshape(-1)
    if layout == FLAT:
        return np.ascontiguousarray(flat)
    return np.full(channels, flat[0], dtype=np.float32)


def _per_channel(v: np.ndarray | None, channels: int, ndim: int) -> np.ndarray | None:
    """``v`` as a (channels,) float32 vector when it broadcasts along the last axis only, else None."""
    if v is None:
        return _NONE
    layout = channel_layout(v.shape, v.dtype == np.float32, channels, ndim)
    return None if layout is None else per_channel_values(v, layout, channels)


def make_epilogue(
    bias: np.ndarray | None,
    activation: str,
    leakyrelu_alpha: float,
    prelu: np.ndarray | None,
    channels: int,
    ndim: int,
    add: np.ndarray | None = None,
    out_shape: tuple[int, ...] | None = None,
) -> Epilogue | None:
    """The compiled form of a fused kernel's bias, residual ``add`` (of the output's shape ``out_shape``)
    and activation on a channels-last float32 output of rank ``ndim``, or None when it has none (a bias
    or PReLU weights that do not run along the channels, a residual of another shape or dtype)."""
    act = ACTIVATION_CODES.get(activation)
    if act is None:
        return None
    b = _per_channel(bias, channels, ndim)
    slopes = _per_channel(prelu, channels, ndim) if activation == "prelu" else _NONE
    if b is None or slopes is None or (activation == "prelu" and prelu is None):
        return None
    residual = _NONE
    if add is not None:
        if add.dtype != np.float32 or out_shape is None or tuple(add.shape) != tuple(out_shape):
            return None
        residual = np.ascontiguousarray(add)
    return Epilogue(b, act, np.float32(leakyrelu_alpha), slopes, residual)


def _float32_c(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


_modules: dict[str, object] = {}


def _dw3_kernels():
    """The register-blocked 3x3 depthwise kernels (imported on first use, after :func:`kernels` loaded numba)."""
    module = _modules.get("dw3")
    if module is None:
        from . import _dw3_kernels as module

        _modules["dw3"] = module
    return module


def depthwise_route(info, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Route | None:
    """How a channels-last 2-D depthwise convolution runs compiled, or None when it cannot (not 2-D)."""
    if len(info.filter_size) != 2 or len(x_shape) != 4 or len(w_shape) != 4:
        return None
    shape = (x_shape[0], *info.out_size, x_shape[-1] * w_shape[-1])
    (sh, sw), (dh, dw), (pt, pl) = info.strides, info.dilations, (info.pads[0][0], info.pads[1][0])
    work = math.prod(shape) * math.prod(info.filter_size)
    static = (sh, sw, dh, dw, pt, pl)
    short_rows = shape[2] * shape[3] <= FLAT_ROW_MAX
    blockable = dw == 1 and sw in (1, 2) and shape[3] >= DW3_BLOCKED_MIN_CHANNELS
    if tuple(w_shape[:2]) == (3, 3) and w_shape[-1] == 1 and blockable:
        # 3x3, unit width dilation, width stride 1 or 2, enough channels: blocks of neighbouring positions share
        # weight and input loads
        return Route(DW3_BLOCKED, shape, work, static)
    if tuple(w_shape[:2]) == (3, 3) and w_shape[-1] == 1:
        # 3x3: the nine taps summed in registers; a unit width stride runs along whole rows (weights tiled)
        flat = sw == 1 and shape[3] < 64 and short_rows
        return Route(DW3_FLAT if flat else DW3, shape, work, static)
    if sw == 1 and w_shape[-1] == 1 and short_rows:
        # short rows: one contiguous multiply-add per tap over the whole output row (weights tiled)
        return Route(DW_FLAT, shape, work, (sh, dh, dw, pt, pl))
    if tuple(w_shape[:2]) == (5, 5) and w_shape[-1] == 1:
        # 5x5: the 25 taps summed in registers; a unit width stride runs along whole rows (period weights)
        return Route(DW5_FLAT if sw == 1 else DW5, shape, work, static)
    return Route(DW, shape, work, static)


def _tiled(w: np.ndarray, out_w: int) -> np.ndarray:
    """Taps ``(kh, kw, C)`` repeated along an output row: a C-contiguous ``(kh, kw, out_w * C)`` copy (what
    ``np.tile(w, (1, 1, out_w))`` gives, without its microseconds of Python)."""
    kh, kw, c = w.shape
    return np.repeat(w.reshape(kh * kw, 1, c), out_w, axis=1).reshape(kh, kw, out_w * c)


# Longest period of the 5x5 kernel's period-tiled weights (values per tap) when it is to be a multiple of 16.
PERIOD_MAX = 512


def weight_period(channels: int) -> int:
    """The period ``L`` of the 5x5 kernel's tiled weights: a multiple of the channels, and of 16 (one AVX-512
    vector) when that is at most PERIOD_MAX values, so that blocks of ``L`` vectorise whole."""
    period = channels * 16 // math.gcd(channels, 16)
    return period if period <= PERIOD_MAX else channels * max(1, PERIOD_MAX // channels)


def period_tiled(w2: np.ndarray) -> np.ndarray:
    """Taps ``(T, C)`` repeated along the channels to ``(T, L)`` (:func:`weight_period`), C-contiguous."""
    taps, channels = w2.shape
    reps = weight_period(channels) // channels
    return np.repeat(w2.reshape(taps, 1, channels), reps, axis=1).reshape(taps, reps * channels)


# Multiply-adds from which a depthwise convolution's rows are shared with the native workers (about 5 us of
# work on one core; handing a job over costs one or two).
DW_SPLIT_MIN_WORK = 100_000

# The C callbacks of :mod:`._dw_rows` by route kind.
_ROW_CALLBACKS = {
    DW3_BLOCKED: "dw3_blocked_rows",
    DW3: "dw3_rows",
    DW3_FLAT: "dw3_rows",
    DW5: "dw5_rows",
    DW5_FLAT: "dw5_rows",
    DW_FLAT: "dw_flat_rows",
    DW: "dw_rows",
}


def _row_callback(kind: int) -> int:
    """The address of the C callback computing rows of a depthwise route (compiled on first use)."""
    addresses = _modules.get("rows")
    if addresses is None:
        from . import _dw_rows

        addresses = _modules["rows"] = {k: getattr(_dw_rows, name).address for k, name in _ROW_CALLBACKS.items()}
    return addresses[kind]  # type: ignore[index]


def _split_rows(route: Route, x: np.ndarray, weights: tuple, y: np.ndarray, ep_args: tuple) -> bool:
    """Run a depthwise route's rows on the native workers (:func:`.native_split.run_rows`); False, with nothing
    run, where that does not apply (too little work, one thread, no workers)."""
    rows = route.out_shape[0] * route.out_shape[1]
    if route.work < DW_SPLIT_MIN_WORK or rows < 2:
        return False
    threads = cpu_parallel.threads()
    if threads < 2 or not native_split.available():
        return False
    bias, add, act, alpha, slopes = ep_args
    wb = weights[1] if len(weights) > 1 else _NONE
    arrays = (x, weights[0], wb, y, bias, add, slopes)
    ints, reals = (*route.static, act), (float(alpha),)
    return native_split.run_rows(_row_callback(route.kind), arrays, ints, reals, rows, threads)


def avx512_dw_static(route: Route, w_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The integer arguments (sh, sw, dh, dw, pt, pl) of a depthwise route on the C module's AVX-512 rows, or None
    where those do not run it (not 3x3 or 5x5 with multiplier 1, or a width stride other than 1: numba's blocked
    kernel is faster at stride 2)."""
    size = w_shape[0]
    if size not in (3, 5) or w_shape[1] != size or w_shape[3] != 1:
        return None
    static = route.static
    if route.kind == DW_FLAT:
        sh, dh, dw, pt, pl = static
        static = (sh, 1, dh, dw, pt, pl)
    return static if static[1] == 1 else None


def _dw_avx512(route: Route, x: np.ndarray, w: np.ndarray, y: np.ndarray, ep_args: tuple) -> bool:
    """A 3x3 or 5x5 depthwise convolution (multiplier 1, unit width stride; ``w`` the filter, (K, K, C, 1)) on
    the C module's AVX-512 rows (:func:`.native_split.dw_rows`), split over the native workers from
    :data:`DW_SPLIT_MIN_WORK`; False, with nothing run, where that does not apply."""
    bias, add, act, alpha, slopes = ep_args
    static = avx512_dw_static(route, w.shape)
    if act not in native_split.ACTS or static is None:
        return False
    size = w.shape[0]
    threads = cpu_parallel.threads() if route.work >= DW_SPLIT_MIN_WORK else 1
    arrays = (x, _float32_c(w.reshape(size * size, w.shape[2])), _NONE, y, bias, add, slopes)
    rows = route.out_shape[0] * route.out_shape[1]
    return native_split.dw_rows(size, arrays, (*static, act), (float(alpha),), rows, threads)


def run_depthwise(route: Route, k, x: np.ndarray, w: np.ndarray, ep_args: tuple, sigmoid: bool) -> np.ndarray:
    """Run a depthwise route with the compiled kernels ``k``; ``ep_args`` from :meth:`Epilogue.args` (the
    sigmoid split off: applied afterwards when ``sigmoid``). Rows go to the native workers where that applies,
    else to numba's threads (flag ``CPU_JIT_PARALLEL``) or the calling thread."""
    y = np.empty(route.out_shape, dtype=np.float32)
    if y.size == 0:
        return y
    x = _float32_c(x)
    kind = route.kind
    if kind != DW and _dw_avx512(route, x, w, y, ep_args):
        if sigmoid:
            sigmoid_into(y, y)
        return y
    if kind == DW3_BLOCKED:
        d3 = _dw3_kernels()
        weights: tuple = (_float32_c(w[:, :, :, 0]),)
        fns = d3.depthwise3x3_blocked, d3.depthwise3x3_blocked_serial
    elif kind == DW3 or kind == DW3_FLAT:
        w3 = _float32_c(w[:, :, :, 0])
        weights = (w3, _tiled(w3, route.out_shape[2]) if kind == DW3_FLAT else _NONE3)
        fns = k.depthwise3x3, k.depthwise3x3_serial
    elif kind == DW5 or kind == DW5_FLAT:
        w2 = _float32_c(w.reshape(25, w.shape[2]))
        weights = (w2, period_tiled(w2) if kind == DW5_FLAT else _NONE2)
        fns = k.depthwise5x5, k.depthwise5x5_serial
    elif kind == DW_FLAT:
        weights = (_tiled(w[:, :, :, 0].astype(np.float32, copy=False), route.out_shape[2]),)
        fns = k.depthwise_flat, k.depthwise_flat_serial
    else:
        weights = (_float32_c(w),)
        fns = k.depthwise, k.depthwise_serial
    if not _split_rows(route, x, weights, y, ep_args):
        fn = fns[0] if parallel() and route.work >= PARALLEL_MIN_WORK else fns[1]
        fn(x, *weights, y, *route.static, *ep_args)
    if sigmoid:
        sigmoid_into(y, y)
    return y


def depthwise(x: np.ndarray, w: np.ndarray, info, epilogue: Epilogue = IDENTITY) -> np.ndarray | None:
    """Channels-last 2-D depthwise convolution (``w`` is ``[kh, kw, in, multiplier]``) with ``epilogue``,
    or None when the compiled path does not apply."""
    route = depthwise_route(info, x.shape, w.shape)
    if route is None:
        return None
    k = kernels()
    if k is None:
        return None
    epilogue, sigmoid = _split_sigmoid(epilogue)
    return run_depthwise(route, k, x, w, epilogue.args(route.out_shape), sigmoid)


def epilogue(y: np.ndarray, ep: Epilogue) -> bool:
    """Apply ``ep`` in place to the channels-last float32 ``y``; False when the compiled path does not apply."""
    if ep.is_identity:
        return True
    if y.dtype != np.float32 or not y.flags.c_contiguous or not y.flags.writeable or y.ndim == 0:
        return False
    k = kernels()
    if k is None:
        return False
    ep, sigmoid = _split_sigmoid(ep)
    y2 = y.reshape(-1, y.shape[-1])
    if y2.size and not ep.is_identity:
        fn = k.epilogue if parallel() and y2.size >= PARALLEL_MIN_WORK else k.epilogue_serial
        fn(y2, *ep.args(y2.shape))
    if sigmoid:
        sigmoid_into(y, y)
    return True


# Column bytes of one product of a transposed convolution: the filter taps go in groups under this.
BACKPROP_COLS_BYTES = 8 << 20


def conv_backprop_input(dy: np.ndarray, w: np.ndarray, info) -> np.ndarray | None:
    """Gradient of a channels-last 2-D convolution for its input (a transposed convolution): one matrix
    product ``dy @ W`` to the columns of a group of filter taps (``W``: ``(out, taps * in)``; on the native
    workers where they run; groups of at most :data:`BACKPROP_COLS_BYTES`), then a compiled col2im adding tap
    after tap onto ``dx``. None when the compiled path does not apply."""
    if len(info.filter_size) != 2 or dy.ndim != 4:
        return None
    k = kernels()
    if k is None:
        return None
    fh, fw = info.filter_size
    channels = w.shape[-2]
    dx = np.zeros((dy.shape[0], *info.in_size, channels), dtype=np.float32)
    dy2 = _float32_c(dy).reshape(-1, dy.shape[-1])
    # (kh, kw, in, out) -> (out, kh, kw, in): column (kh * fw + kw) * in + c of the product is tap (kh, kw), channel c
    wall = np.moveaxis(w.astype(np.float32, copy=False), -1, 0).reshape(w.shape[-1], -1)
    taps = fh * fw
    group = max(1, min(taps, BACKPROP_COLS_BYTES // max(1, 4 * dy2.shape[0] * channels)))
    threads = cpu_parallel.threads()
    (sh, sw), (dh, dw), (pt, pl) = info.strides, info.dilations, (info.pads[0][0], info.pads[1][0])
    for t0 in range(0, taps, group):
        t1 = min(taps, t0 + group)
        wg = np.ascontiguousarray(wall[:, t0 * channels : t1 * channels])
        cols = np.empty((dy2.shape[0], wg.shape[1]), dtype=np.float32)
        if not native_split.matmul_into(dy2, wg, cols, threads):
            np.matmul(dy2, wg, out=cols)
        _add_taps(k, cols, dx, t0, t1, fw, dy.shape[1], dy.shape[2], (sh, sw, dh, dw, pt, pl), threads)
    return dx


def _add_taps(k, cols: np.ndarray, dx: np.ndarray, t0: int, t1: int, fw: int, out_h: int, out_w: int,
              geometry: tuple, threads: int) -> None:  # fmt: skip
    """``k.add_taps`` (col2im) with the batch split over ``threads`` where the work is large enough: each sample's
    rows of ``cols`` add onto its own rows of ``dx``, so the samples are independent (same values)."""
    batch, per = dx.shape[0], out_h * out_w
    parts = threads if cols.size >= DW_SPLIT_MIN_WORK * 4 else 1

    def span(_: int, b0: int, b1: int) -> None:
        k.add_taps(cols[b0 * per : b1 * per], dx[b0:b1], t0, t1, fw, out_h, out_w, *geometry)

    cpu_parallel.run_spans(span, batch, parts)


# Element counts below which the numpy expression is as fast (the call itself costs a microsecond or two).
ACTIVATE_MIN_SIZE = 2048


def activate(x: np.ndarray, activation: str, alpha: float = 0.0, prelu: np.ndarray | None = None) -> np.ndarray | None:
    """``activation(x)`` (one of ACTIVATION_CODES) of a float32 array in one compiled pass into a new
    array, or None when the compiled path does not apply (small, other dtype, PReLU weights that do
    not run along the last axis)."""
    if x.dtype != np.float32 or x.ndim == 0 or x.size < ACTIVATE_MIN_SIZE:
        return None
    channels = x.shape[-1]
    slopes = _NONE
    if activation == "prelu":
        slopes = _per_channel(prelu, channels, x.ndim)
        if slopes is None or prelu is None:
            return None
    k = kernels()
    if k is None:
        return None
    if activation == "sigmoid":
        y = np.empty(x.shape, dtype=np.float32)
        sigmoid_into(x, y)
        return y
    y = np.empty(x.shape, dtype=np.float32)
    x2 = np.ascontiguousarray(x).reshape(-1, channels)
    k.activate(x2, y.reshape(-1, channels), _NONE, _NONE2, ACTIVATION_CODES[activation], np.float32(alpha), slopes)
    return y


def pool2d(x: np.ndarray, geo: tuple, is_max: bool) -> np.ndarray | None:
    """2-D max or average pooling of a channels-last float32 array, geometry ``(filter, strides,
    dilations, pad_before, out_size)``; None when the compiled path does not apply."""
    (fh, fw), (sh, sw), (dh, dw), (pt, pl), out_size = geo
    if x.dtype != np.float32 or x.ndim != 4:
        return None
    k = kernels()
    if k is None:
        return None
    y = np.empty((x.shape[0], *out_size, x.shape[-1]), dtype=np.float32)
    xc = np.ascontiguousarray(x)
    if is_max and y.size:
        threads = cpu_parallel.threads() if x.size * fh * fw >= DW_SPLIT_MIN_WORK else 1
        if native_split.max_pool_rows(xc, y, (fh, fw, sh, sw, dh, dw, pt, pl), threads):
            return y
    k.pool2d(xc, y, is_max, fh, fw, sh, sw, dh, dw, pt, pl)
    return y
