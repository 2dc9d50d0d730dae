"""Per-call plans of the compiled 2-D convolutions: a call's shape-only work, done once per call signature.

A model calls each convolution node with the same shapes and attributes on every run, and at MobileNet sizes
the Python around a kernel (geometry from the attributes, the route, the epilogue's layout, argument checks)
costs a tenth of the numeric work. A :class:`ConvPlan` keeps what depends only on the call's signature (kernel
name, attributes, the inputs' shapes and dtypes): the geometry's route (a pointwise matrix product, blocked
im2col products, one of the depthwise kernels, with their integer arguments) and the epilogue's layout (which
inputs are the bias, the residual and the PReLU weights, and how they line up with the channels). Running a plan
reads the input arrays, allocates the output and calls BLAS and the compiled code; the results are those of the
unplanned path (the same calls in the same order).

Plans live in a small LRU cache (:data:`PLANS`) keyed by that signature; a signature whose values do not hash
(lists in the attributes, a numpy stride) is never planned. The flag ``CPU_CONV_PLANS`` turns plans off.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from ....core.flags import env
from ....core.replay_attrs import ReplayAttrs
from ..native import native_split
from ..native import parallel as cpu_parallel
from ..numba import ACTIVATION_CODES, kernels, parallel, plans_enabled
from ..numba.ops import (
    _NONE,
    _NONE2,
    _NONE4,
    BLOCKED,
    PARALLEL_MIN_WORK,
    POINTWISE,
    SIGMOID,
    Route,
    channel_layout,
    per_channel_values,
    run_blocked,
    run_depthwise,
    sigmoid_into,
)
from . import bound

PLAN_CACHE_SIZE = 1024

_ENV = env()


class EpiloguePlan(NamedTuple):
    """Where a fused kernel's bias, residual and PReLU weights are among its inputs (-1: none), how the bias and
    weights line up with the channels (``ops.FLAT`` or ``ops.WIDE``), and the activation (sigmoid split off)."""

    bias: int
    bias_layout: int
    add: int
    prelu: int
    prelu_layout: int
    act: int  # an ACTIVATION_CODES value other than sigmoid's
    alpha: np.float32  # leakyrelu's slope
    sigmoid: bool  # apply the sigmoid after the compiled epilogue (numpy's passes, as the unplanned path)

    @property
    def is_identity(self) -> bool:
        """No bias, no residual, no activation other than a sigmoid."""
        return self.act == 0 and self.bias < 0 and self.add < 0

    def args(self, arrays: Sequence[np.ndarray], channels: int, add_shape: tuple[int, ...]) -> tuple:
        """The compiled kernels' epilogue arguments for a call's input ``arrays`` (the residual as ``add_shape``)."""
        bias = _NONE if self.bias < 0 else per_channel_values(arrays[self.bias], self.bias_layout, channels)
        slopes = _NONE if self.prelu < 0 else per_channel_values(arrays[self.prelu], self.prelu_layout, channels)
        if self.add >= 0:
            add = np.ascontiguousarray(arrays[self.add]).reshape(add_shape)
        else:
            add = _NONE2 if len(add_shape) == 2 else _NONE4
        return bias, add, self.act, self.alpha, slopes


IDENTITY = EpiloguePlan(-1, 0, -1, -1, 0, 0, np.float32(0), False)


def epilogue_plan(
    slots: tuple[int, int, int],
    shapes: Sequence[tuple[int, ...]],
    dtypes: Sequence[str],
    activation: str,
    leakyrelu_alpha: float,
    out_shape: tuple[int, ...],
) -> EpiloguePlan | None:
    """The epilogue of a fused kernel whose inputs have ``shapes`` and ``dtypes``, with the bias, residual and
    PReLU weights at ``slots`` (-1: none), on a channels-last float32 output of ``out_shape``; None where the
    compiled epilogue does not apply (the same cases as :func:`ops.make_epilogue`)."""
    act = ACTIVATION_CODES.get(activation)
    if act is None:
        return None
    bias, add, prelu = slots
    channels, ndim = out_shape[-1], len(out_shape)
    bias_layout = prelu_layout = 0
    if bias >= 0:
        bias_layout = channel_layout(tuple(shapes[bias]), dtypes[bias] == "float32", channels, ndim)
        if bias_layout is None:
            return None
    if activation == "prelu":
        if prelu < 0:
            return None
        prelu_layout = channel_layout(tuple(shapes[prelu]), dtypes[prelu] == "float32", channels, ndim)
        if prelu_layout is None:
            return None
    else:
        prelu = -1
    if add >= 0 and (dtypes[add] != "float32" or tuple(shapes[add]) != tuple(out_shape)):
        return None
    sigmoid = act == SIGMOID
    return EpiloguePlan(
        bias, bias_layout, add, prelu, prelu_layout, 0 if sigmoid else act, np.float32(leakyrelu_alpha), sigmoid
    )


class ConvPlan:
    """What a convolution call needs beyond its input arrays: the route and the epilogue; and its bound call
    (:mod:`.bound`) for the flags of one ``env().version``."""

    __slots__ = ("route", "epilogue", "bound", "version")

    def __init__(self, route: Route, epilogue: EpiloguePlan) -> None:
        self.route = route
        self.epilogue = epilogue
        self.bound: bound.Runner | None = None
        self.version = -1  # no bound call made yet

    def __repr__(self) -> str:
        return f"ConvPlan({self.route!r}, {self.epilogue!r})"


def pointwise_route(out_shape: tuple[int, ...], in_channels: int) -> Route:
    """A 1x1 convolution without padding or strides: one matrix product of the (contiguous) input's rows."""
    rows = out_shape[0] * out_shape[1] * out_shape[2]
    return Route(POINTWISE, out_shape, rows * in_channels * out_shape[3], (rows, in_channels, out_shape[3]))


def run(plan: ConvPlan, arrays: Sequence[np.ndarray]) -> np.ndarray | None:
    """The channels-last float32 output of a planned call on its input ``arrays`` (``x`` and the filter first),
    or None when the compiled path does not apply now (JIT off, an input that is not C-contiguous)."""
    k = kernels()
    if k is None:
        return None
    route, ep = plan.route, plan.epilogue
    x, w = arrays[0], arrays[1]
    kind = route.kind
    if kind == POINTWISE:
        if not x.flags.c_contiguous:
            return None
        rows, depth, channels = route.static
        y = np.empty((rows, channels), dtype=np.float32)
        xr, wr = x.reshape(rows, depth), w.reshape(depth, channels)
        args = None if ep.is_identity else ep.args(arrays, channels, y.shape)
        threads = cpu_parallel.threads()
        parts = threads if 2 * route.work >= cpu_parallel.MIN_SPLIT_FLOPS else 1
        native = 2 * route.work >= native_split.MIN_FLOPS or native_split.avx512_product(rows, depth)
        if native and _native(xr, wr, y, args, threads):
            pass
        elif native and args is not None and native_split.matmul_into(xr, wr, y, threads):
            # an epilogue the C module lacks (elu): its product, as the unplanned path computes it, then ours
            fn = k.epilogue if parallel() and y.size >= PARALLEL_MIN_WORK else k.epilogue_serial
            fn(y, *args)
        elif parts > 1:  # rows over the cores (cpu/native/parallel.py), each share's epilogue while it is in cache

            def span(_: int, start: int, stop: int) -> None:
                yb = y[start:stop]
                np.matmul(xr[start:stop], wr, out=yb)
                if args is not None:
                    bias, add, act, alpha, slopes = args
                    k.epilogue_serial(yb, bias, add[start:stop] if add.size else add, act, alpha, slopes)

            cpu_parallel.run_spans(span, rows, parts, align=16)
        else:
            np.matmul(xr, wr, out=y)
            if args is not None:
                fn = k.epilogue if parallel() and y.size >= PARALLEL_MIN_WORK else k.epilogue_serial
                fn(y, *args)
        y = y.reshape(route.out_shape)
    elif kind == BLOCKED:
        channels = route.out_shape[3]
        rows = route.out_shape[0] * route.out_shape[1] * route.out_shape[2]
        y = run_blocked(route, k, x, w, None if ep.is_identity else ep.args(arrays, channels, (rows, channels)))
    else:
        return run_depthwise(route, k, x, w, ep.args(arrays, route.out_shape[3], route.out_shape), ep.sigmoid)
    if ep.sigmoid:
        sigmoid_into(y, y)
    return y


def replayed_bound(attrs: ReplayAttrs) -> bound.Runner | None:
    """The bound call of a replayed call's kept plan (``attrs.memo``, see :meth:`PlanCache.lookup`) where the
    plan is of this cache's generation and bound for the flags as they are; else None (the full path)."""
    memo = attrs.memo
    if memo is None or memo[0] is not PLANS or memo[1] != PLANS._generation:
        return None
    plan = memo[2]
    if plan is None or plan.version != _ENV.version:
        return None
    return plan.bound


def run_bound(plan: ConvPlan, arrays: Sequence[np.ndarray]) -> np.ndarray | None:
    """:func:`run`, through the plan's bound call where it has one for the flags as they are (made on the first
    call after they change)."""
    version = _ENV.version
    if plan.version != version:
        plan.bound = bound.bind(plan, arrays)
        plan.version = version
    runner = plan.bound
    if runner is not None:
        y = runner(arrays)
        if y is not None:
            return y
    return run(plan, arrays)


def _native(x: np.ndarray, w: np.ndarray, y: np.ndarray, args: tuple | None, threads: int) -> bool:
    """The product and its epilogue split over native threads (:mod:`..native.native_split`), where that applies
    (an epilogue of bias, residual and a linear, relu, relu6, leaky relu or PReLU activation)."""
    if args is None:
        return native_split.matmul_into(x, w, y, threads)
    bias, add, act, alpha, slopes = args
    bias, add, slopes = (v if v.size else None for v in (bias, add, slopes))
    return native_split.matmul_into(x, w, y, threads, bias, add, act, alpha, slopes)


_MISSING = object()


class PlanCache:
    """Plans (or None: not plannable) by call signature, least recently used evicted beyond ``size``."""

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.size = size
        self._plans: OrderedDict[tuple, ConvPlan | None] = OrderedDict()
        self._generation = 0

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        self._plans.clear()
        self._generation += 1  # the plans replayed calls keep (ReplayAttrs.memo) are dropped too

    def lookup(
        self, kernel: str, inputs: tuple, attrs: dict, build: Callable[[tuple, dict], ConvPlan | None]
    ) -> ConvPlan | None:
        """The plan of kernel ``kernel`` called on ``inputs`` (tensors) with ``attrs``, made by ``build(inputs,
        attrs)`` on a miss (whose errors propagate, and are not cached); None where plans are off, the
        signature does not hash, or ``build`` found nothing to plan."""
        if not plans_enabled():
            return None
        if attrs.__class__ is ReplayAttrs:  # a replayed call: same kernel and input signature every time
            memo = attrs.memo
            if memo is not None and memo[0] is self and memo[1] == self._generation:
                return memo[2]
            plan = self._lookup(kernel, inputs, attrs, build)
            attrs.memo = (self, self._generation, plan)
            return plan
        return self._lookup(kernel, inputs, attrs, build)

    def _lookup(
        self, kernel: str, inputs: tuple, attrs: dict, build: Callable[[tuple, dict], ConvPlan | None]
    ) -> ConvPlan | None:
        try:
            key = (kernel, tuple(attrs.items()), *[(t.shape, t.dtype) for t in inputs])
            plan = self._plans.get(key, _MISSING)
        except TypeError:  # an unhashable attribute value: not planned
            return None
        if plan is _MISSING:
            plan = build(inputs, attrs)
            self._plans[key] = plan
            if len(self._plans) > self.size:
                try:
                    self._plans.popitem(last=False)
                except KeyError:  # emptied meanwhile by another thread
                    pass
        else:
            try:
                self._plans.move_to_end(key)
            except KeyError:  # evicted meanwhile by another thread
                pass
        return plan  # type: ignore[return-value]


#: The cpu convolution kernels' plans.
PLANS = PlanCache()
