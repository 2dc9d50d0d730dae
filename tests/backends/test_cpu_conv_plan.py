"""Per-call plans of the cpu convolution kernels (``ndflow.backends.cpu.plans.conv``).

Every planned call must give the unplanned path's result bit for bit (flag ``CPU_CONV_PLANS`` off: geometry,
route and epilogue worked out on each call), on every route (pointwise product, blocked im2col, the four
depthwise kernels) and epilogue (bias per channel or one for all, residual, each activation). Calls that cannot
be planned (NCHW, unhashable attributes, a non-contiguous input) fall back to the unplanned path; a signature
is planned once; errors are raised on every call and never cached; the cache evicts the least recently used.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from jit_util import plans_on_cpu

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.numba import conv_blocked
from ndflow.backends.cpu.numba import ops as jit_ops
from ndflow.backends.cpu.plans import conv as plans
from ndflow.core.engine import ENGINE

needs_numba = pytest.mark.skipif(not jit.numba_available(), reason="numba is not installed")

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def cpu():
    """The cpu backend with the compiled kernels, an empty plan cache; the flags restored afterwards."""
    yield from plans_on_cpu()


def _rand(shape, scale: float = 1.0) -> nf.Tensor:
    return nf.tensor((RNG.standard_normal(shape) * scale).astype(np.float32))


def _planned_and_not(fn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fn()`` with plans off, on (planning the call), and on again (the cached plan), as numpy."""
    results = []
    for on in (False, True, True):
        nf.env().set("CPU_CONV_PLANS", on)
        t = fn()
        results.append(t.numpy())
        nf.dispose(t)
    return results[0], results[1], results[2]


def _same(fn) -> None:
    off, first, cached = _planned_and_not(fn)
    assert off.dtype == first.dtype == cached.dtype and off.shape == first.shape == cached.shape
    np.testing.assert_array_equal(first, off)
    np.testing.assert_array_equal(cached, off)


ACTIVATIONS = ["linear", "relu", "relu6", "elu", "leakyrelu", "prelu", "sigmoid"]

CONV = [
    # (x shape, filter shape, strides, pad, dilations, route)
    ((1, 6, 7, 5), (1, 1, 5, 4), 1, "same", 1, jit_ops.POINTWISE),
    ((2, 5, 5, 3), (1, 1, 3, 6), 1, "valid", 1, jit_ops.POINTWISE),
    ((1, 9, 9, 3), (3, 3, 3, 8), 2, "same", 1, jit_ops.BLOCKED),
    ((2, 8, 7, 4), (3, 2, 4, 5), 1, "valid", (2, 1), jit_ops.BLOCKED),
    ((1, 6, 6, 3), (1, 1, 3, 4), 2, "same", 1, jit_ops.BLOCKED),  # 1x1 with a stride: im2col
    ((1, 7, 7, 2), (3, 3, 2, 3), 1, [[0, 0], [2, 1], [1, 2], [0, 0]], 1, jit_ops.BLOCKED),
    # the filter covers the whole input once: one product (batch, H*W*C) @ (KH*KW*C, out)
    ((2, 3, 3, 4), (3, 3, 4, 6), 2, "valid", 1, jit_ops.POINTWISE),
    ((1, 2, 3, 40), (2, 3, 40, 70), 1, "valid", 1, jit_ops.POINTWISE),
    ((1, 3, 3, 4), (3, 3, 4, 6), 1, "same", 1, jit_ops.BLOCKED),  # padded: nine positions
    ((1, 5, 5, 2), (3, 3, 2, 3), 1, "valid", 2, jit_ops.BLOCKED),  # dilated to the input's size: im2col
]

DEPTHWISE = [
    # (x shape, filter shape, strides, pad, dilations, route)
    ((1, 9, 9, 5), (3, 3, 5, 1), 1, "same", 1, jit_ops.DW3_FLAT),
    ((1, 7, 8, 70), (3, 3, 70, 1), 1, "same", 1, jit_ops.DW3_BLOCKED),
    ((1, 10, 11, 4), (3, 3, 4, 1), 2, "same", 1, jit_ops.DW3),
    ((2, 8, 8, 3), (5, 5, 3, 1), 1, "same", 1, jit_ops.DW_FLAT),
    ((1, 8, 8, 3), (4, 4, 3, 1), 2, "valid", 1, jit_ops.DW),
    ((1, 6, 6, 3), (3, 3, 3, 2), 1, "same", 1, jit_ops.DW),  # channel multiplier 2
    ((1, 5, 130, 80), (5, 5, 80, 1), 1, "same", 1, jit_ops.DW5_FLAT),  # rows too long for DW_FLAT
    ((1, 11, 9, 6), (5, 5, 6, 1), 2, "same", 1, jit_ops.DW5),
    ((1, 5, 17, 42), (5, 5, 42, 1), (1, 2), "valid", 1, jit_ops.DW5),
]


def _route_of(kernel: str) -> int:
    """The route of the (one) plan of ``kernel`` in the cache."""
    (plan,) = [p for k, p in plans.PLANS._plans.items() if k[0] == kernel]
    return plan.route.kind


@needs_numba
@pytest.mark.parametrize("case", CONV + DEPTHWISE)
def test_plain_convolutions_are_the_unplanned_result(case):
    shape, fshape, strides, pad, dilations, route = case
    depthwise = case in DEPTHWISE
    x, w = _rand(shape), _rand(fshape)
    op = nf.depthwise_conv2d if depthwise else nf.conv2d
    try:
        _same(lambda: op(x, w, strides, pad, dilations=dilations))
        kernel = "DepthwiseConv2dNative" if depthwise else "Conv2D"
        assert _route_of(kernel) == route
    finally:
        nf.dispose([x, w])


@needs_numba
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("case", [CONV[0], CONV[2], CONV[7], *DEPTHWISE[:2], *DEPTHWISE[3:5], *DEPTHWISE[6:8]])
def test_fused_epilogues_are_the_unplanned_result(case, activation):
    shape, fshape, strides, pad, dilations, _ = case
    depthwise = case in DEPTHWISE
    x, w = _rand(shape), _rand(fshape)
    channels = fshape[2] * fshape[3] if depthwise else fshape[3]
    bias, slopes = _rand((channels,)), _rand((channels,), 0.3)
    op = nf.fused.depthwise_conv2d if depthwise else nf.fused.conv2d
    try:
        _same(
            lambda: op(
                x=x, filter=w, strides=strides, pad=pad, dilations=dilations, bias=bias, activation=activation,
                prelu_activation_weights=slopes if activation == "prelu" else None, leakyrelu_alpha=0.15,
            )
        )  # fmt: skip
    finally:
        nf.dispose([x, w, bias, slopes])


@needs_numba
@pytest.mark.parametrize("case", [CONV[1], CONV[3], DEPTHWISE[2], DEPTHWISE[5]])
def test_residual_and_broadcast_bias_are_the_unplanned_result(case):
    shape, fshape, strides, pad, dilations, _ = case
    depthwise = case in DEPTHWISE
    x, w = _rand(shape), _rand(fshape)
    op = nf.fused.depthwise_conv2d if depthwise else nf.fused.conv2d
    out_shape = op(x=x, filter=w, strides=strides, pad=pad, dilations=dilations)
    add = _rand(out_shape.shape)
    nf.dispose(out_shape)
    one_bias, prelu_one = _rand((1,)), _rand((1,), 0.3)  # one value for every channel
    try:
        for activation in ("relu", "prelu"):
            _same(
                lambda a=activation: op(
                    x=x, filter=w, strides=strides, pad=pad, dilations=dilations, bias=one_bias, activation=a,
                    prelu_activation_weights=prelu_one if a == "prelu" else None, add=add,
                )
            )  # fmt: skip
    finally:
        nf.dispose([x, w, add, one_bias, prelu_one])


@needs_numba
def test_a_signature_is_planned_once_and_shapes_get_their_own_plans():
    x, w, b = _rand((1, 5, 5, 4)), _rand((1, 1, 4, 3)), _rand((3,))
    x2 = _rand((1, 6, 5, 4))
    try:
        for _ in range(3):
            nf.dispose(nf.fused.conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="relu"))
        assert len(plans.PLANS) == 1
        nf.dispose(nf.fused.conv2d(x=x2, filter=w, strides=1, pad="same", bias=b, activation="relu"))
        nf.dispose(nf.fused.conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="relu6"))
        assert len(plans.PLANS) == 3
        nf.env().set("CPU_CONV_PLANS", False)
        nf.dispose(nf.fused.conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="elu"))
        assert len(plans.PLANS) == 3  # plans off: the cache is not touched
    finally:
        nf.dispose([x, w, b, x2])


class _FakeTensor:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape, self.dtype = shape, "float32"


def test_the_cache_evicts_the_least_recently_used():
    cache = plans.PlanCache(size=2)
    built = []

    def build(inputs, attrs):
        built.append(inputs[0].shape)
        return None

    a, b, c = (_FakeTensor((3,)),), (_FakeTensor((4,)),), (_FakeTensor((5,)),)
    for inputs in (a, b, a, c, a, b):  # c evicts b (a was used after b); then b is built again
        cache.lookup("K", inputs, {"pad": "same"}, build)
    assert built == [(3,), (4,), (5,), (4,)]
    assert len(cache) == 2


@needs_numba
def test_unplannable_calls_take_the_unplanned_path():
    x, w, b = _rand((1, 6, 6, 4)), _rand((3, 3, 4, 5)), _rand((5,))
    xc = _rand((1, 4, 6, 6))
    f = np.asfortranarray(RNG.standard_normal((1, 6, 6, 4)).astype(np.float32))
    xf = ENGINE.make_tensor(f, (1, 6, 6, 4), "float32")  # stored as given: not C-contiguous
    pw = _rand((1, 1, 4, 5))
    try:
        assert not nf.backend().data[xf.data_id].values.flags.c_contiguous
        _same(lambda: nf.fused.conv2d(x=xc, filter=w, strides=1, pad="same", data_format="NCHW", bias=b))
        _same(lambda: nf.fused.conv2d(x=xf, filter=pw, strides=1, pad="same", bias=b, activation="relu"))
        attrs = {"strides": [1, 1], "pad": [[0, 0], [1, 1], [1, 1], [0, 0]], "data_format": "NHWC",
                 "dilations": [1, 1], "dim_rounding_mode": None}  # fmt: skip
        _same(lambda: ENGINE.run_kernel("Conv2D", (x, w), dict(attrs)))
        # NCHW: no plan; the 1x1 convolution has one, which declines the F-ordered input; lists: not cached
        assert sorted(p is None for p in plans.PLANS._plans.values()) == [False, True]
    finally:
        nf.dispose([x, w, b, xc, xf, pw])


@needs_numba
def test_errors_are_raised_on_every_call():
    x, w, b = _rand((1, 5, 5, 4)), _rand((1, 1, 4, 3)), _rand((3,))
    attrs = {"strides": (1, 1), "pad": "same", "data_format": "NHWC", "dilations": (1, 1),
             "dim_rounding_mode": None, "activation": "relu", "residual": True}  # fmt: skip
    try:
        for _ in range(2):
            with pytest.raises(ValueError, match="residual"):
                ENGINE.run_kernel("FusedConv2D", (x, w), dict(attrs))
            with pytest.raises(ValueError, match="strides"):
                ENGINE.run_kernel("Conv2D", (x, w), {**attrs, "strides": (0, 1)})
        assert len(plans.PLANS) == 0
    finally:
        nf.dispose([x, w, b])


@needs_numba
def test_block_size_changes_still_apply(monkeypatch):
    x, w = _rand((1, 12, 12, 3)), _rand((3, 3, 3, 4))
    try:
        ref = nf.conv2d(x, w, 1, "same")
        monkeypatch.setattr(conv_blocked, "CONV_BLOCK_BYTES", 64)  # one output row per block, same plan
        y = nf.conv2d(x, w, 1, "same")
        np.testing.assert_array_equal(y.numpy(), ref.numpy())
        nf.dispose([y, ref])
    finally:
        nf.dispose([x, w])


@needs_numba
def test_threads_share_plans_but_not_buffers(monkeypatch):
    """Blocked convolutions reuse a per-thread column buffer: threads running one plan at once must not mix
    (BLAS releases the GIL: another thread's im2col would overwrite the columns of a running product)."""
    monkeypatch.setattr(conv_blocked, "CONV_BLOCK_BYTES", 64 * 1024)  # many blocks: many switches between threads
    x, w, b = _rand((1, 48, 48, 16)), _rand((3, 3, 16, 32)), _rand((32,))
    try:
        ref = nf.fused.conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="relu6")
        want = ref.numpy()
        nf.dispose(ref)
        (plan,) = plans.PLANS._plans.values()
        assert plan.route.kind == jit_ops.BLOCKED
        backend = nf.backend()
        arrays = [backend.data[t.data_id].values for t in (x, w, b)]
        errors: list[BaseException] = []

        def work(scale: float) -> None:
            try:
                mine = [arrays[0] * np.float32(scale), arrays[1], arrays[2]]
                first = plans.run(plan, mine)
                for _ in range(10):
                    np.testing.assert_array_equal(plans.run(plan, mine), first)
                if scale == 1:
                    np.testing.assert_array_equal(first, want)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s,)) for s in (1.0, 2.0, -1.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
    finally:
        nf.dispose([x, w, b])
