"""Pooling: MaxPool, AvgPool, MaxPool3D, AvgPool3D, MaxPoolWithArgmax and the *Grad kernels.

The op computes the geometry (``ndflow/ops/pool_util.py``) and passes it in the attributes
``filter_size``, ``strides``, ``dilations``, ``pad_before`` and ``out_size``; the gradient kernels
take the forward attributes unchanged.

Forward pooling runs torch's pooling on the channels_last view of the NHWC data (no layout copy).
TF's windows start at ``i * stride - pad_before``; torch's at ``i * stride - pad`` with a
symmetric ``pad``, so ``pad = pad_before`` with ``ceil_mode`` (windows may run past the end, as
TF's 'same' windows do) gives TF's windows whenever torch accepts that pad; the extra windows
torch may add at the end are cropped. Otherwise the input is laid into an explicit *frame* that
holds every window (-inf or 0 outside the input) and pooled without padding.

TF.js semantics kept: max ignores NaN (NaN becomes -inf first; a window with no number gives
-Infinity, stored as 0 in int32/bool outputs); the 2D kernels return the input unchanged for a
1x1 filter that keeps the shape; avg divides by the number of input positions in the window (NaN
for an empty window in 2D, 0 in 3D). Arg-max positions: the first maximum in 2D, the last in 3D.
MaxPoolGrad scatters dy to torch's arg-max indices (the first maximum, as TF.js's 2D), the avg
gradients use torch's backward, both where torch expresses the geometry; MaxPool3DGrad (TF.js's
3D takes the *last* maximum), MaxPoolWithArgmax and the other geometries use a static loop over the
filter taps, each tap one strided slice of the frame (nothing loops over pixels).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as tnf

from ....core import kernel_names as kn
from ....core.engine import ENGINE
from ...shared.pool import Geometry, frame_extent, frame_taps, pool_geometry, pool_out_shape
from ..backend import TorchBackend
from .common import F, Output, keep, out, share, torch_kernel, values_of

_MAX = {2: torch.max_pool2d, 3: torch.max_pool3d}
_AVG = {2: tnf.avg_pool2d, 3: tnf.avg_pool3d}


def _nchw(v: torch.Tensor) -> torch.Tensor:
    """Channels-last data as torch's (N, C, *spatial) channels_last view."""
    n = v.dim() - 2
    return v.permute(0, n + 1, *range(1, n + 1))


def _nhwc(y: torch.Tensor) -> torch.Tensor:
    n = y.dim() - 2
    return y.permute(0, *range(2, n + 2), 1)


def _work(v: torch.Tensor) -> torch.Tensor:
    """float32 stays (the float dtype); int32 and bool pool in float64, as TF.js's JS numbers."""
    return v if v.is_floating_point() else v.double()


def store_like_tfjs(values: torch.Tensor, dtype: str) -> torch.Tensor:
    """Float results as TF.js's typed arrays keep them: int32 truncates (0 for NaN/±Inf), bool is
    a Uint8Array (truncation modulo 256, then non-zero)."""
    if dtype == "float32":
        return values
    finite = torch.where(torch.isfinite(values), torch.trunc(values), 0.0).double()
    if dtype == "int32":
        return torch.fmod(finite, 2.0**32).to(torch.int64).to(torch.int32)
    return torch.fmod(finite, 256.0) != 0


@functools.lru_cache(maxsize=1024)
def torch_plan(in_size: tuple[int, ...], geo: Geometry) -> tuple[list[int], tuple[int, ...]] | None:
    """(symmetric pads, torch's output sizes) for which torch's ``ceil_mode`` windows start where
    TF's do and number at least ``out``; None when torch cannot express the geometry."""
    f, s, d, before, o = geo
    pads, sizes = [], []
    for n, fi, si, di, b, oi in zip(in_size, f, s, d, before, o, strict=True):
        k = (fi - 1) * di + 1
        if b < 0 or 2 * b > k or n + 2 * b < k:
            return None
        count = -(-(n + 2 * b - k) // si) + 1
        if (count - 1) * si >= n + b:
            count -= 1
        if count < oi:
            return None
        pads.append(b)
        sizes.append(count)
    return pads, tuple(sizes)


def torch_padding(in_size: tuple[int, ...], geo: Geometry) -> list[int] | None:
    """The symmetric pads of :func:`torch_plan`, or None."""
    plan = torch_plan(in_size, geo)
    return None if plan is None else plan[0]


@functools.lru_cache(maxsize=1024)
def _frame_pads(in_size: tuple[int, ...], geo: Geometry) -> list[int]:
    """``F.pad`` amounts (last dim first) that turn the input into the frame (negative crops)."""
    amounts: list[int] = []
    for n, b, extent in zip(in_size, geo[3], frame_extent(geo), strict=True):
        amounts = [b, extent - n - b, *amounts]
    return amounts


def _crop(y: torch.Tensor, out_size: tuple[int, ...]) -> torch.Tensor:
    if tuple(y.shape[2:]) == tuple(out_size):
        return y
    return y[(slice(None), slice(None), *(slice(0, o) for o in out_size))]


def _max_pool(x: torch.Tensor, geo: Geometry) -> torch.Tensor:
    n = x.dim() - 2
    f, s, d, _, o = geo
    in_size = tuple(x.shape[2:])
    pads = torch_padding(in_size, geo)
    if pads is not None:
        return _crop(_MAX[n](x, f, s, pads, d, True), o)
    frame = tnf.pad(x, _frame_pads(in_size, geo), value=-math.inf)
    return _MAX[n](frame, f, s, [0] * n, d, False)


def max_values(v: torch.Tensor, geo: Geometry) -> torch.Tensor:
    """Window maxima ignoring NaN (torch-layout result); -inf where a window holds no number.

    torch's max lets NaN win; TF.js's never picks it. On CPU the sum of the pooled result tells
    whether any window held a NaN (then the input is pooled again with NaN as -inf); on a GPU NaN
    is replaced up front (no synchronisation)."""
    x = _nchw(_work(v))
    if x.device.type != "cpu":
        return _max_pool(torch.nan_to_num(x, nan=-math.inf, posinf=math.inf, neginf=-math.inf), geo)
    y = _max_pool(x, geo)
    if bool(torch.isnan(y.sum())):  # a NaN (or +inf and -inf together): pool again without NaN
        y = _max_pool(torch.nan_to_num(x, nan=-math.inf, posinf=math.inf, neginf=-math.inf), geo)
    return y


def _counts(in_size: tuple[int, ...], geo: Geometry, device: torch.device) -> torch.Tensor:
    """Number of input positions in each window, shaped (1, 1, *out) (separable per dim)."""
    f, s, d, before, o = geo
    total = torch.ones((1, 1) + (1,) * len(o), dtype=torch.float64, device=device)
    for axis, (n, fi, si, di, b, oi) in enumerate(zip(in_size, f, s, d, before, o, strict=True)):
        idx = torch.arange(oi, device=device)[:, None] * si - b + torch.arange(fi, device=device)[None, :] * di
        count = ((idx >= 0) & (idx < n)).sum(dim=1).double()
        shape = [1] * (len(o) + 2)
        shape[axis + 2] = oi
        total = total * count.reshape(shape)
    return total


def avg_values(v: torch.Tensor, geo: Geometry, empty_is_zero: bool) -> torch.Tensor:
    """Window means over the input positions only (torch-layout result)."""
    v = _work(v)
    x = _nchw(v)
    n = x.dim() - 2
    f, s, d, _, o = geo
    in_size = tuple(x.shape[2:])
    pads = torch_padding(in_size, geo) if all(di == 1 for di in d) else None
    if pads is not None:
        return _crop(_AVG[n](x, f, s, pads, ceil_mode=True, count_include_pad=False), o)
    frame = tnf.pad(x, _frame_pads(in_size, geo))
    if all(di == 1 for di in d):
        sums = _AVG[n](frame, f, s, 0, divisor_override=1)
    else:  # window sums with holes: a depthwise convolution with ones
        channels = frame.shape[1]
        ones = torch.ones((channels, 1, *f), dtype=frame.dtype, device=frame.device)
        conv = tnf.conv2d if n == 2 else tnf.conv3d
        sums = conv(frame, ones, None, s, 0, d, channels)
    count = _counts(in_size, geo, v.device)
    if empty_is_zero:
        count = count.clamp(min=1)
    return sums / count.to(sums.dtype)


def _keeps_shape(x, geo: Geometry) -> bool:
    """TF.js's 2D shortcut: a 1x1 filter that keeps the shape returns the input itself."""
    return _keeps_shape_of(x.shape, geo)


def _empty(x, geo: Geometry) -> bool:
    return math.prod(pool_out_shape(x.shape, geo)) == 0 or x.size == 0


def _zeros(backend: TorchBackend, x, geo: Geometry) -> torch.Tensor:
    return torch.zeros(pool_out_shape(x.shape, geo), dtype=F(), device=backend.device)


# The direct 2D plan of a call: (filter, strides, symmetric pads, dilations, ceil_mode, crop to or None, output
# shape), for float32 NHWC pooling that torch's own windows express; None where the general path is needed.
Plan2D = tuple[tuple[int, ...], tuple[int, ...], list[int], tuple[int, ...], bool, tuple[int, ...] | None, tuple]
_PLANS_2D: dict[tuple, Plan2D | None] = {}


def _make_plan_2d(x_shape: tuple[int, ...], geo: Geometry) -> Plan2D | None:
    if len(x_shape) != 4 or _keeps_shape_of(x_shape, geo) or math.prod(geo[4]) == 0 or math.prod(x_shape) == 0:
        return None
    plan = torch_plan(tuple(x_shape[1:3]), geo)
    if plan is None:
        return None
    f, s, d, _, o = geo
    pads = plan[0]
    floor = tuple(
        (n + 2 * p - (fi - 1) * di - 1) // si + 1 for n, p, fi, si, di in zip(x_shape[1:3], pads, f, s, d, strict=True)
    )
    if floor == tuple(o):  # the same windows without ceil_mode: nothing to crop
        return f, s, pads, d, False, None, (x_shape[0], *o, x_shape[3])
    return f, s, pads, d, True, tuple(o), (x_shape[0], *o, x_shape[3])


def _plan_2d(x, attrs: dict) -> Plan2D | None:
    """The cached :data:`Plan2D` of a float32 2D pooling call (None: take the general path)."""
    if x.dtype != "float32":
        return None
    try:
        key = (x.shape, attrs["filter_size"], attrs["strides"], attrs["dilations"], attrs["pad_before"],
               attrs["out_size"])  # fmt: skip
        return _PLANS_2D[key]
    except KeyError:
        pass
    except TypeError:  # list-valued attributes: no caching
        return None
    if len(_PLANS_2D) > 4096:
        _PLANS_2D.clear()
    plan = _PLANS_2D[key] = _make_plan_2d(x.shape, pool_geometry(attrs))
    return plan


def _keeps_shape_of(x_shape: tuple[int, ...], geo: Geometry) -> bool:
    return all(f == 1 for f in geo[0]) and tuple(geo[4]) == tuple(x_shape[1:-1])


def _max_pool_2d(x: torch.Tensor, plan: Plan2D, indices: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """torch's max pool of the plan (uncropped), with its arg-max indices when asked for."""
    f, s, pads, d, ceil = plan[:5]
    if indices:
        return tnf.max_pool2d(x, f, s, pads, d, ceil, return_indices=True)
    return torch.max_pool2d(x, f, s, pads, d, ceil), None


@torch_kernel(kn.MaxPool)
def max_pool(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    plan = None if backend.is_cuda else _plan_2d(x, attrs)
    if plan is not None:  # torch's max pool on the channels_last view; pooled again without NaN if one won
        f, s, pads, d, ceil, crop, shape = plan
        xv = values_of(backend, x).permute(0, 3, 1, 2)
        taped = ENGINE.gradient_depth > 0  # the arg-max positions are kept for MaxPoolGrad (see there)
        y, idx = _max_pool_2d(xv, plan, taped)
        total = float(y.sum())
        if total != total:
            y, idx = _max_pool_2d(_no_nan(xv), plan, taped)
        full = y
        if crop is not None:
            y = y[:, :, : crop[0], : crop[1]]
        result = keep(backend, y.permute(0, 2, 3, 1), shape, "float32")
        if taped:
            backend.data[result[0]].prepared = {"argmax": (x.data_id, plan, full, idx)}
        return result
    geo = pool_geometry(attrs)
    if _keeps_shape(x, geo):
        return share(backend, x.data_id, x.shape, x.dtype)
    if _empty(x, geo):
        return out(backend, _zeros(backend, x, geo), x.dtype)
    y = _nhwc(max_values(values_of(backend, x), geo))
    return out(backend, store_like_tfjs(y, x.dtype), x.dtype, pool_out_shape(x.shape, geo))


@torch_kernel(kn.AvgPool)
def avg_pool(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    plan = _plan_2d(x, attrs)
    if plan is not None and plan[3] == (1, 1):  # torch's mean over the real values of each window
        f, s, pads, _, ceil, crop, shape = plan
        y = tnf.avg_pool2d(values_of(backend, x).permute(0, 3, 1, 2), f, s, pads, ceil, False)
        if crop is not None:
            y = y[:, :, : crop[0], : crop[1]]
        return keep(backend, y.permute(0, 2, 3, 1), shape, "float32")
    geo = pool_geometry(attrs)
    if _keeps_shape(x, geo):
        return share(backend, x.data_id, x.shape, x.dtype)
    if _empty(x, geo):
        return out(backend, _zeros(backend, x, geo), x.dtype)
    y = _nhwc(avg_values(values_of(backend, x), geo, False))
    return out(backend, store_like_tfjs(y, x.dtype), x.dtype, pool_out_shape(x.shape, geo))


@torch_kernel(kn.MaxPool3D)
def max_pool3d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    geo = pool_geometry(attrs)
    if _empty(x, geo):
        return out(backend, _zeros(backend, x, geo), "float32")
    return out(backend, _nhwc(max_values(values_of(backend, x), geo)), "float32", pool_out_shape(x.shape, geo))


@torch_kernel(kn.AvgPool3D)
def avg_pool3d(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    (x,) = inputs
    geo = pool_geometry(attrs)
    if _empty(x, geo):
        return out(backend, _zeros(backend, x, geo), "float32")
    return out(backend, _nhwc(avg_values(values_of(backend, x), geo, True)), "float32", pool_out_shape(x.shape, geo))


# ----------------------------------------------------------------------------- tap loops


def _frame(v: torch.Tensor, geo: Geometry, fill: float) -> torch.Tensor:
    """Channels-last frame holding every window, ``fill`` outside the input."""
    frame = _nhwc(tnf.pad(_nchw(v), _frame_pads(tuple(v.shape[1:-1]), geo), value=fill))
    return frame


def max_positions(v: torch.Tensor, geo: Geometry, last: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(maxima, flat tap index of the maximum in each window, -1 where none); ``last`` picks the
    last of equal maxima (``>=``, TF.js 3D) instead of the first (``>``, TF.js 2D)."""
    frame = _frame(_work(v), geo, math.nan)
    shape = pool_out_shape(tuple(v.shape), geo)
    best = torch.full(shape, -math.inf, dtype=frame.dtype, device=v.device)
    pos = torch.full(shape, -1, dtype=torch.int32, device=v.device)
    compare = torch.ge if last else torch.gt
    for t, sl in frame_taps(geo):
        tap = frame[sl]
        better = compare(tap, best)
        best = torch.where(better, tap, best)
        pos = torch.where(better, t, pos)
    return best, pos


def _scatter(x_shape: tuple[int, ...], geo: Geometry, per_tap: Callable[[int], torch.Tensor], device) -> torch.Tensor:
    """dx: each tap's contribution ``per_tap(t)`` (shape of dy) added back at the window positions."""
    dframe = torch.zeros((x_shape[0], *frame_extent(geo), x_shape[-1]), dtype=torch.float64, device=device)
    for t, sl in frame_taps(geo):
        dframe[sl] += per_tap(t)
    # the frame back onto the input: the inverse pad (crop where the frame padded)
    return _nhwc(tnf.pad(_nchw(dframe), [-a for a in _frame_pads(x_shape[1:-1], geo)]))


def max_grad(x: torch.Tensor, dy: torch.Tensor, geo: Geometry, last: bool) -> torch.Tensor:
    """dx of a max pool: each window's dy goes to its arg-max position."""
    if dy.numel() == 0 or x.numel() == 0:
        return torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    _, pos = max_positions(x, geo, last)
    dy = dy.double()
    return _scatter(tuple(x.shape), geo, lambda t: torch.where(pos == t, dy, 0.0), x.device)


def avg_grad(x_shape: tuple[int, ...], dy: torch.Tensor, geo: Geometry) -> torch.Tensor:
    """dx of an avg pool: each window's dy shared by the input positions it averaged."""
    if dy.numel() == 0 or math.prod(x_shape) == 0:
        return torch.zeros(x_shape, dtype=torch.float64, device=dy.device)
    count = _nhwc(_counts(x_shape[1:-1], geo, dy.device))
    share_ = torch.where(count > 0, dy.double() / count.clamp(min=1), 0.0)
    return _scatter(x_shape, geo, lambda t: share_, dy.device)


@torch_kernel(kn.MaxPoolWithArgmax)
def max_pool_with_argmax(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Maxima and their flat indexes ``((b * H + y) * W + x) * C + c`` (``b`` only with
    ``include_batch_in_index``); -1 where a window holds no number."""
    (x,) = inputs
    geo = pool_geometry(attrs)
    shape = pool_out_shape(x.shape, geo)
    if _empty(x, geo):
        zeros = _zeros(backend, x, geo)
        return [out(backend, zeros, x.dtype, shape), out(backend, zeros, "int32", shape)]
    best, pos = max_positions(values_of(backend, x), geo, last=False)
    batch, height, width, channels = x.shape
    (fh, fw), (sh, sw), (dh, dw), (ph, pw), (oh, ow) = geo
    dev = backend.device
    pos = pos.long()
    row = torch.arange(oh, device=dev).reshape(1, oh, 1, 1) * sh - ph + torch.div(pos, fw, rounding_mode="floor") * dh
    col = torch.arange(ow, device=dev).reshape(1, 1, ow, 1) * sw - pw + (pos % fw) * dw
    index = (row * width + col) * channels + torch.arange(channels, device=dev).reshape(1, 1, 1, channels)
    if attrs.get("include_batch_in_index"):
        index = index + torch.arange(batch, device=dev).reshape(batch, 1, 1, 1) * (height * width * channels)
    index = torch.where(pos < 0, -1, index)
    return [out(backend, store_like_tfjs(best, x.dtype), x.dtype, shape), out(backend, index, "int32", shape)]


def _no_nan(x: torch.Tensor) -> torch.Tensor:
    return torch.nan_to_num(x, nan=-math.inf, posinf=math.inf, neginf=-math.inf)


def _disjoint(geo: Geometry) -> bool:
    """Windows that do not overlap: each input position gets at most one dy."""
    f, s, d = geo[0], geo[1], geo[2]
    return all(di == 1 and si >= fi for fi, si, di in zip(f, s, d, strict=True))


def _native_max_grad(
    x: torch.Tensor, dy: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, call: tuple, out_size: tuple[int, ...]
) -> torch.Tensor:
    """dx (torch layout) by torch's own backward from the uncropped pooling ``y``/``idx`` made by
    ``call`` = (filter, strides, pads, dilations, ceil_mode) on ``x``; for disjoint windows (exact in float32)."""
    g = dy.to(x.dtype)
    if tuple(y.shape[2:]) != tuple(out_size):  # torch's extra windows at the end get no gradient
        g = tnf.pad(g, [0, y.shape[3] - out_size[1], 0, y.shape[2] - out_size[0]])
    if x.is_cuda or float(y.amin()) == -math.inf:  # a window without a number sends nothing (rare)
        g = torch.where(y == -math.inf, 0.0, g)
    return torch.ops.aten.max_pool2d_with_indices_backward(g, x, *call, idx)


def max_grad_2d(x: torch.Tensor, dy: torch.Tensor, geo: Geometry) -> torch.Tensor | None:
    """dx of a 2D max pool through torch's arg-max indices (the first maximum, NaN never picked,
    no gradient for a window without a number); None when torch cannot express the geometry."""
    in_size = tuple(x.shape[1:-1])
    plan = torch_plan(in_size, geo)
    if plan is None or dy.numel() == 0 or x.numel() == 0:
        return None
    f, s, d, _, o = geo
    xt = _nchw(_work(x))
    # NaN never wins (TF.js): the input without NaN, unless its sum says it holds none (the CPU's common case)
    total = math.nan if x.is_cuda else float(xt.sum())
    if total != total:
        xt = _no_nan(xt)
    y, idx = tnf.max_pool2d(xt, f, s, plan[0], d, ceil_mode=True, return_indices=True)
    # Windows that do not overlap send at most one dy to each position: torch's own backward is exact there.
    # Otherwise the sums run in float64 (TF.js adds in JS numbers).
    if _disjoint(geo):
        return _nhwc(_native_max_grad(xt, _nchw(dy), y, idx, (f, s, plan[0], d, True), o))
    y, idx = _crop(y, o), _crop(idx, o)
    n, c, hw = xt.shape[0], xt.shape[1], math.prod(in_size)
    g = torch.where(y == -math.inf, 0.0, _nchw(dy).to(torch.float64)).reshape(n, c, -1)
    dx = torch.zeros((n, c, hw), dtype=torch.float64, device=x.device)
    dx.scatter_add_(2, idx.reshape(n, c, -1).clamp(0, hw - 1), g)
    return _nhwc(dx.reshape(n, c, *in_size))


_AVG_BACKWARD = {2: torch.ops.aten.avg_pool2d_backward, 3: torch.ops.aten.avg_pool3d_backward}


def avg_grad_native(x_shape: tuple[int, ...], dy: torch.Tensor, geo: Geometry) -> torch.Tensor | None:
    """dx of an avg pool through torch's backward (its windows padded back to torch's output size);
    None when torch cannot express the geometry."""
    in_size = x_shape[1:-1]
    plan = torch_plan(in_size, geo) if all(di == 1 for di in geo[2]) else None
    if plan is None or dy.numel() == 0 or math.prod(x_shape) == 0:
        return None
    pads, sizes = plan
    n, c = x_shape[0], x_shape[-1]
    g = torch.zeros((n, c, *sizes), dtype=torch.float64, device=dy.device)
    g[(slice(None), slice(None), *(slice(0, o) for o in geo[4]))] = _nchw(dy)
    stand_in = torch.empty((n, c, *in_size), dtype=torch.float64, device=dy.device)
    dx = _AVG_BACKWARD[len(in_size)](g, stand_in, geo[0], geo[1], pads, True, False, None)
    return _nhwc(dx)


@torch_kernel(kn.MaxPoolGrad)
def max_pool_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the first maximum of each window."""
    dy, x, y = inputs
    geo = pool_geometry(attrs)
    xv, dyv = values_of(backend, x), values_of(backend, dy)
    # The forward kernel, run under a gradient tape, kept its arg-max positions on y's buffer: no second pooling.
    prepared = backend.data[y.data_id].prepared
    kept = prepared.get("argmax") if prepared else None
    if kept is not None and kept[0] == x.data_id and kept[1] == _plan_2d(x, attrs) and _disjoint(geo):
        _, plan, full, idx = kept
        dx = _native_max_grad(xv.permute(0, 3, 1, 2), _nchw(dyv), full, idx, plan[:5], geo[4])
        return out(backend, _nhwc(dx), "float32", x.shape)
    dx = max_grad_2d(xv, dyv, geo)
    if dx is None:
        dx = max_grad(xv, dyv, geo, last=False)
    return out(backend, dx, "float32", x.shape)


@torch_kernel(kn.AvgPoolGrad)
def avg_pool_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    dy, x = inputs
    geo, dyv = pool_geometry(attrs), values_of(backend, dy)
    dx = avg_grad_native(x.shape, dyv, geo)
    return out(backend, avg_grad(x.shape, dyv, geo) if dx is None else dx, "float32", x.shape)


@torch_kernel(kn.MaxPool3DGrad)
def max_pool3d_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x, y): dy goes to the last maximum of each window (TF.js's 3D convention)."""
    dy, x, _ = inputs
    dx = max_grad(values_of(backend, x), values_of(backend, dy), pool_geometry(attrs), last=True)
    return out(backend, dx, "float32", x.shape)


@torch_kernel(kn.AvgPool3DGrad)
def avg_pool3d_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """inputs (dy, x): dy shared by the input positions each window averaged."""
    dy, x = inputs
    geo, dyv = pool_geometry(attrs), values_of(backend, dy)
    dx = avg_grad_native(x.shape, dyv, geo)
    return out(backend, avg_grad(x.shape, dyv, geo) if dx is None else dx, "float32", x.shape)
