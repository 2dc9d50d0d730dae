"""Bound convolution calls (``ndflow.backends.cpu.plans.bound``) and the plans of replayed calls.

A plan's bound call makes the C module call of the plan's route with every decision taken once (flags, split,
epilogue arrays): it must give :func:`plans.run`'s bits on every route it covers (pointwise, blocked im2col, the
AVX-512 depthwise rows) and epilogue, hand back to the plan where its inputs do not suit it (not contiguous, not
float32), and be made again when a flag changes. Replayed calls keep their plan with their attributes
(``ReplayAttrs.memo``), which are read-only; replayed pooling runs bound too, and replayed strided slices keep
their index (``memoized``): the plain calls' bits either way.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from jit_util import needs_avx512, plans_on_cpu

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.kernels import conv as conv_kernels
from ndflow.backends.cpu.native import native_split
from ndflow.backends.cpu.native import parallel as cpu_parallel
from ndflow.backends.cpu.numba import ops as jit_ops
from ndflow.backends.cpu.plans import bound
from ndflow.backends.cpu.plans import conv as plans
from ndflow.core.engine import ENGINE
from ndflow.core.replay_attrs import ReplayAttrs, memoized

needs_native = pytest.mark.skipif(
    not jit.numba_available() or not native_split.available(), reason="needs numba and the C module"
)
needs_avx512_dw = pytest.mark.skipif(
    not native_split.available() or not native_split.dw_address(3), reason="needs the C module and AVX-512F"
)

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def cpu():
    """The cpu backend with the compiled kernels, an empty plan cache; the flags restored afterwards."""
    yield from plans_on_cpu()


def _rand(shape) -> nf.Tensor:
    return nf.tensor(RNG.standard_normal(shape).astype(np.float32))


def _call(op: str, x: nf.Tensor, w: nf.Tensor, residual: nf.Tensor | None = None, **kw) -> tuple:
    """Run the op's kernel once (planning and binding its call), with a fused ``residual`` input if given (the
    graph-model converter's form); its plan and the input arrays of its kernel call."""
    calls = ENGINE.record_calls()
    try:
        fn = nf.fused.conv2d if op == "conv" else nf.fused.depthwise_conv2d
        out = fn(x=x, filter=w, **kw)
    finally:
        ENGINE.stop_recording()
    nf.dispose(out)
    ((kernel, inputs, attrs, _),) = [c for c in calls if c[0]]
    if residual is not None:
        kernel = "FusedConv2D" if op == "conv" else "FusedDepthwiseConv2D"
        inputs, attrs = (*inputs, residual), {**attrs, "residual": True}
        nf.dispose(ENGINE.run_kernel(kernel, inputs, attrs))
    plan = plans.PLANS.lookup(kernel, inputs, attrs, lambda *a: pytest.fail("the call was not planned"))
    assert plan is not None
    backend = nf.backend()
    return plan, [backend.data[t.data_id].values.reshape(t.shape) for t in inputs]


CASES = [  # op, x, filter, strides, kind
    ("conv", (1, 9, 11, 24), (1, 1, 24, 40), 1, jit_ops.POINTWISE),
    ("conv", (2, 20, 20, 8), (1, 1, 8, 16), 1, jit_ops.POINTWISE),
    ("conv", (1, 17, 15, 6), (3, 3, 6, 20), 2, jit_ops.BLOCKED),
    ("conv", (1, 40, 40, 16), (3, 3, 16, 32), 1, jit_ops.BLOCKED),  # above MIN_FLOPS: split over the workers
    ("dw", (1, 14, 13, 32), (3, 3, 32, 1), 1, None),
    ("dw", (1, 12, 12, 20), (5, 5, 20, 1), 1, None),
    ("dw", (1, 60, 60, 24), (3, 3, 24, 1), 1, None),  # above DW_SPLIT_MIN_WORK: split over the workers
]
EPILOGUES = ["relu6", "residual", "prelu", "sigmoid", "none"]


def _inputs(op, x_shape, w_shape, strides, epilogue) -> tuple[list[nf.Tensor], dict]:
    x, w = _rand(x_shape), _rand(w_shape)
    channels = w_shape[3] if op == "conv" else w_shape[2] * w_shape[3]
    made, kw = [x, w], {"strides": strides, "pad": "same"}
    if epilogue != "none":
        made.append(_rand((channels,)))
        kw["bias"] = made[-1]
        kw["activation"] = {"residual": "relu", "prelu": "prelu"}.get(epilogue, epilogue)
    if epilogue == "prelu":
        made.append(_rand((channels,)))
        kw["prelu_activation_weights"] = made[-1]
    return made, kw


@needs_native
@pytest.mark.parametrize("epilogue", EPILOGUES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2][:2]}-s{c[3]}")
def test_bound_calls_give_the_plans_bits(case, epilogue):
    op, x_shape, w_shape, strides, kind = case
    if op == "dw" and not native_split.dw_address(3):
        pytest.skip("the depthwise rows need AVX-512F")
    made, kw = _inputs(op, x_shape, w_shape, strides, epilogue)
    try:
        residual = None
        if epilogue == "residual":
            probe = (
                nf.fused.conv2d(x=made[0], filter=made[1], strides=strides, pad="same")
                if op == "conv"
                else (nf.fused.depthwise_conv2d(x=made[0], filter=made[1], strides=strides, pad="same"))
            )
            residual = _rand(probe.shape)
            nf.dispose(probe)
            made.append(residual)
        plan, arrays = _call(op, made[0], made[1], residual, **kw)
        if epilogue == "residual":
            assert plan.epilogue.add == len(arrays) - 1
        if kind is not None:
            assert plan.route.kind == kind
        if not native_split.avx512_enabled() and 2 * plan.route.work < native_split.MIN_FLOPS:
            pytest.skip("a route this small runs the C module only through its AVX-512 kernels")
        assert plan.bound is not None and plan.version == nf.env().version
        got = plan.bound(arrays)
        assert got is not None
        want = plans.run(plan, arrays)
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    finally:
        nf.dispose(made)


@needs_avx512
@needs_native
def test_inputs_that_do_not_suit_hand_back_to_the_plan():
    x, w, b = _rand((1, 12, 12, 16)), _rand((1, 1, 16, 24)), _rand((24,))
    try:
        plan, arrays = _call("conv", x, w, strides=1, pad="same", bias=b, activation="relu")
        strided = np.asfortranarray(arrays[0])  # same values, not C-contiguous
        assert plan.bound([strided, arrays[1], arrays[2]]) is None
        assert plan.bound([arrays[0].astype(np.float64), arrays[1], arrays[2]]) is None
        assert plan.bound([arrays[0], arrays[1], arrays[2].astype(np.float64)]) is None
        assert plans.run(plan, [strided, arrays[1], arrays[2]]) is None  # the kernel's unplanned path runs
        assert plans.run_bound(plan, [strided, arrays[1], arrays[2]]) is None
        wide = [arrays[0].astype(np.float64), arrays[1], arrays[2]]
        np.testing.assert_array_equal(plans.run_bound(plan, wide), plans.run(plan, wide))
        x64 = nf.tensor(arrays[0].astype(np.float64), x.shape, "float32")  # whatever the store holds
        try:
            want = nf.fused.conv2d(x=x, filter=w, strides=1, pad="same", bias=b, activation="relu")
            got = nf.fused.conv2d(x=x64, filter=w, strides=1, pad="same", bias=b, activation="relu")
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
            nf.dispose([want, got])
        finally:
            nf.dispose(x64)
    finally:
        nf.dispose([x, w, b])


@needs_avx512
@needs_native
def test_a_flag_change_binds_again():
    x, w = _rand((1, 12, 12, 16)), _rand((1, 1, 16, 24))
    try:
        plan, arrays = _call("conv", x, w, strides=1, pad="same")
        first, version = plan.bound, nf.env().version
        assert first is not None
        want = plans.run_bound(plan, arrays)
        nf.env().set("CPU_NATIVE_SPLIT", False)
        assert nf.env().version > version
        off = plans.run_bound(plan, arrays)  # numpy's product now, unbound
        assert plan.bound is None and plan.version == nf.env().version
        np.testing.assert_allclose(off, want, rtol=1e-5, atol=1e-5)
        nf.env().set("CPU_NATIVE_SPLIT", True)
        np.testing.assert_array_equal(plans.run_bound(plan, arrays), want)
        assert plan.bound is not None and plan.bound is not first
    finally:
        nf.dispose([x, w])


@needs_native
def test_routes_off_the_c_module_are_not_bound():
    cases = [((1, 12, 12, 8), (3, 3, 8, 2), 1), ((1, 16, 16, 8), (3, 3, 8, 1), 2)]  # multiplier 2; stride 2
    for x_shape, w_shape, strides in cases:
        x, w = _rand(x_shape), _rand(w_shape)
        try:
            plan, arrays = _call("dw", x, w, strides=strides, pad="same")
            assert plan.bound is None
            assert bound.bind(plan, arrays) is None
        finally:
            nf.dispose([x, w])


def test_flag_versions_count_changes():
    env = nf.env()
    version = env.version
    env.set("CPU_CONV_PLANS", True)
    assert env.version == version + 1
    env.reset()
    assert env.version == version + 2


def test_replay_attrs_are_read_only():
    attrs = ReplayAttrs({"strides": (1, 1), "pad": "same"})
    assert attrs == {"strides": (1, 1), "pad": "same"} and attrs.memo is None
    for change in (
        lambda: attrs.__setitem__("pad", "valid"),
        lambda: attrs.__delitem__("pad"),
        lambda: attrs.update(pad="valid"),
        lambda: attrs.pop("pad"),
        lambda: attrs.popitem(),
        lambda: attrs.setdefault("x", 1),
        lambda: attrs.clear(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert attrs == {"strides": (1, 1), "pad": "same"}
    copy = attrs.copy()
    copy["pad"] = "valid"
    assert type(copy) is dict and attrs["pad"] == "same"
    again = pickle.loads(pickle.dumps(attrs))
    assert type(again) is ReplayAttrs and again == attrs


@needs_native
def test_replayed_calls_keep_their_plan(monkeypatch):
    x, w = _rand((1, 8, 8, 16)), _rand((1, 1, 16, 8))
    looked = []
    real = plans.PLANS._lookup
    monkeypatch.setattr(plans.PLANS, "_lookup", lambda *a: looked.append(a[0]) or real(*a))
    try:
        calls = ENGINE.record_calls()
        try:
            nf.dispose(nf.conv2d(x, w, 1, "same"))
        finally:
            ENGINE.stop_recording()
        ((kernel, inputs, attrs, _),) = [c for c in calls if c[0]]
        looked.clear()
        replayed = ReplayAttrs(attrs)
        outs = [ENGINE.run_kernel(kernel, inputs, replayed) for _ in range(3)]
        assert looked == [kernel]  # looked up by signature once, then kept with the attributes
        plans.PLANS.clear()
        outs.append(ENGINE.run_kernel(kernel, inputs, replayed))
        assert looked == [kernel, kernel]  # a cleared cache drops the kept plans too
        for out in outs[1:]:
            np.testing.assert_array_equal(out.numpy(), outs[0].numpy())
        nf.dispose(outs)
    finally:
        nf.dispose([x, w])


def test_unplannable_replayed_calls_stay_unplanned():
    """An NCHW call has no plan; replayed, it is not planned either (the memo keeps None)."""
    x, w = _rand((1, 4, 6, 6)), _rand((3, 3, 4, 8))
    try:
        attrs = ReplayAttrs({"strides": (1, 1), "pad": "same", "data_format": "NCHW", "dilations": (1, 1),
                             "dim_rounding_mode": None})  # fmt: skip
        builder = conv_kernels._BUILDERS["Conv2D", False, False]
        assert plans.PLANS.lookup("Conv2D", (x, w), attrs, builder) is None
        assert attrs.memo is not None and attrs.memo[2] is None
        assert plans.PLANS.lookup("Conv2D", (x, w), attrs, builder) is None
    finally:
        nf.dispose([x, w])


# --------------------------------------------------------------------------- pooling and memoized call values


POOLS = [  # filter, strides, pad, input
    ((3, 3), (2, 2), "same", (1, 17, 15, 24)),
    ((2, 2), (2, 2), "valid", (2, 16, 16, 8)),
    ((3, 3), (1, 1), "same", (1, 60, 60, 32)),  # enough work to split over the threads
    ((5, 3), (2, 1), "valid", (1, 11, 9, 5)),
]


def _kernel_call(fn) -> tuple:
    calls = ENGINE.record_calls()
    try:
        out = fn()
    finally:
        ENGINE.stop_recording()
    nf.dispose(out)
    ((kernel, inputs, attrs, _),) = [c for c in calls if c[0]]
    return kernel, inputs, attrs


@pytest.mark.parametrize("is_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("case", POOLS, ids=lambda c: f"{c[0]}-s{c[1]}-{c[2]}-{c[3]}")
def test_replayed_pooling_gives_the_plain_calls_bits(case, is_max):
    size, strides, pad, shape = case
    x = _rand(shape)
    fn = nf.max_pool if is_max else nf.avg_pool
    try:
        kernel, inputs, attrs = _kernel_call(lambda: fn(x, size, strides, pad))
        replayed = ReplayAttrs(attrs)
        for avx512 in (True, False):
            nf.env().set("CPU_AVX512", avx512)
            plain = ENGINE.run_kernel(kernel, inputs, attrs)
            runs = [ENGINE.run_kernel(kernel, inputs, replayed) for _ in range(2)]
            if jit.numba_available():
                assert replayed.memo is not None and replayed.memo[0] == nf.env().version
                assert replayed.memo[1] is not None  # bound
            for got in runs:
                np.testing.assert_array_equal(got.numpy().view(np.int32), plain.numpy().view(np.int32))
            nf.dispose([plain, *runs])
    finally:
        nf.dispose(x)


def test_replayed_pooling_that_keeps_the_shape_shares_the_input():
    x = _rand((1, 6, 6, 4))
    try:
        kernel, inputs, attrs = _kernel_call(lambda: nf.max_pool(x, 1, 1, "same"))
        replayed = ReplayAttrs(attrs)
        y = ENGINE.run_kernel(kernel, inputs, replayed)
        assert replayed.memo[1] is None  # nothing bound: TF.js's shortcut returns the input
        np.testing.assert_array_equal(y.numpy(), x.numpy())
        nf.dispose(y)
    finally:
        nf.dispose(x)


def test_replayed_strided_slices_give_the_plain_calls_values():
    x = _rand((2, 7, 9, 5))
    cases = [
        lambda: nf.strided_slice(x, [0, 1, 0, 1], [2, 6, 9, 4], [1, 2, 3, 1]),
        lambda: nf.strided_slice(x, [0, -1, 0, 0], [1, 0, 9, 5], [1, -1, 1, 1], shrink_axis_mask=1),
        lambda: nf.strided_slice(x, [0, 0], [0, 3], [1, 1], begin_mask=1, end_mask=1, ellipsis_mask=1),
    ]
    try:
        for make in cases:
            kernel, inputs, attrs = _kernel_call(make)
            replayed = ReplayAttrs(attrs)
            want = make()
            for _ in range(2):
                got = ENGINE.run_kernel(kernel, inputs, replayed)
                assert got.shape == want.shape
                np.testing.assert_array_equal(got.numpy(), want.numpy())
                nf.dispose(got)
            assert replayed.memo is not None
            nf.dispose(want)
    finally:
        nf.dispose(x)


def test_memoized_values_are_made_once_per_flag_version():
    made = []

    def make() -> int:
        made.append(1)
        return len(made)

    plain = {"a": 1}
    assert memoized(plain, make) == 1 and memoized(plain, make) == 2  # other calls: made every time
    replayed = ReplayAttrs(plain)
    assert memoized(replayed, make) == 3 and memoized(replayed, make) == 3
    nf.env().set("CPU_CONV_PLANS", True)  # any flag set: made again
    assert memoized(replayed, make) == 4 and memoized(replayed, make) == 4

    def fails() -> int:
        raise ValueError("bad call")

    again = ReplayAttrs(plain)
    for _ in range(2):  # errors are raised on every call, never kept
        with pytest.raises(ValueError, match="bad call"):
            memoized(again, fails)
    assert again.memo is None


@pytest.mark.parametrize("activation", ["linear", "relu", "relu6", "elu", "prelu"])
@pytest.mark.parametrize("shape", [(1, 90, 3), (7, 16, 5), (300, 300, 300)], ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_replayed_small_products_give_the_plain_calls_bits(shape, activation, with_bias):
    m, k, n = shape
    a, b, bias, slopes = _rand((m, k)), _rand((k, n)), _rand((n,)), _rand((n,))
    kw = {"bias": bias} if with_bias else {}
    if activation == "prelu":
        kw["prelu_activation_weights"] = slopes
    try:
        kernel, inputs, attrs = _kernel_call(lambda: nf.fused.mat_mul(a=a, b=b, activation=activation, **kw))
        replayed = ReplayAttrs(attrs)
        plain = ENGINE.run_kernel(kernel, inputs, attrs)
        got = [ENGINE.run_kernel(kernel, inputs, replayed) for _ in range(2)]
        one_product = cpu_parallel.threads() == 1 or 2 * m * k * n < native_split.MIN_FLOPS
        small = activation in ("linear", "relu", "relu6") and one_product
        assert (replayed.memo[1] is not None) == small
        for y in got:
            np.testing.assert_array_equal(y.numpy().view(np.int32), plain.numpy().view(np.int32))
        nf.dispose([plain, *got])
    finally:
        nf.dispose([a, b, bias, slopes])


@pytest.mark.parametrize("bias_shape", [(7,), (1, 7), (5, 7), (5, 1), ()], ids=str)
@pytest.mark.parametrize("activation", ["linear", "relu6"])
def test_small_products_with_any_broadcast_bias_give_the_plain_calls_bits(bias_shape, activation):
    """The C module's product takes a bias of one value per column in its epilogue and a full one as its
    residual; other biases keep numpy's calls. Each gives the bits of the plain call."""
    a, b, bias = _rand((5, 40)), _rand((40, 7)), _rand(bias_shape)
    made: list[nf.Tensor] = []
    try:
        kernel, inputs, attrs = _kernel_call(lambda: nf.fused.mat_mul(a=a, b=b, bias=bias, activation=activation))
        replayed = ReplayAttrs(attrs)
        made.append(ENGINE.run_kernel(kernel, inputs, attrs))
        plain = made[-1]
        for _ in range(2):
            made.append(ENGINE.run_kernel(kernel, inputs, replayed))
        assert replayed.memo[1] is not None
        # the replayed call runs the plain call's kernels (the C module's product where the plain call's
        # parallel.matmul takes it, else numpy's): the same bits on every processor
        for y in made[1:]:
            np.testing.assert_array_equal(y.numpy().view(np.int32), plain.numpy().view(np.int32))
        expected = a.numpy().astype(np.float64) @ b.numpy() + bias.numpy()
        if activation == "relu6":
            expected = np.clip(expected, 0, 6)
        np.testing.assert_allclose(plain.numpy(), expected, rtol=1e-5, atol=1e-5)
    finally:
        nf.dispose([a, b, bias, *made])


@needs_avx512
@needs_native
def test_pointwise_runners_take_the_arrays_as_they_are():
    """With one bias and slope per channel, a pointwise call's arrays go to the C module in their own shapes
    (``_gemm.product``); one that does not fit (a strided residual) hands back to the plan; a single slope for
    every channel (WIDE) is spread out first. All give the plan's bits."""
    x, w, b, r = _rand((1, 5, 6, 16)), _rand((1, 1, 16, 24)), _rand((24,)), _rand((1, 5, 6, 24))
    slopes, one = _rand((1, 1, 24)), _rand((1,))
    try:
        backend = nf.backend()
        for alpha in (slopes, one):
            inputs = (x, w, b, r, alpha)  # bias, residual, then the PReLU weights
            attrs = {"strides": (1, 1), "pad": "valid", "data_format": "NHWC", "dilations": (1, 1),
                     "dim_rounding_mode": None, "residual": True, "activation": "prelu",
                     "leakyrelu_alpha": 0.2}  # fmt: skip
            nf.dispose(ENGINE.run_kernel("FusedConv2D", inputs, attrs))
            plan = plans.PLANS.lookup("FusedConv2D", inputs, attrs, lambda *a: pytest.fail("not planned"))
            arrays = [backend.data[t.data_id].values.reshape(t.shape) for t in inputs]
            got = plan.bound(arrays)
            assert got is not None and got.shape == (1, 5, 6, 24)
            np.testing.assert_array_equal(got.view(np.int32), plans.run(plan, arrays).view(np.int32))
            strided = list(arrays)
            strided[plan.epilogue.add] = np.asfortranarray(arrays[plan.epilogue.add])
            if alpha is slopes:
                assert plan.bound(strided) is None  # the C module refused it, before any work
            np.testing.assert_array_equal(plans.run_bound(plan, strided), plans.run(plan, arrays))
    finally:
        nf.dispose([x, w, b, r, slopes, one])


@needs_native
def test_depthwise_runners_take_the_arrays_as_they_are():
    if not native_split.dw_address(3):
        pytest.skip("the depthwise rows need AVX-512F")
    x, w, b, r = _rand((1, 7, 9, 20)), _rand((3, 3, 20, 1)), _rand((1, 1, 20)), _rand((1, 7, 9, 20))
    try:
        inputs = (x, w, b, r)
        attrs = {"strides": (1, 1), "pad": "same", "data_format": "NHWC", "dilations": (1, 1),
                 "dim_rounding_mode": None, "residual": True, "activation": "relu6"}  # fmt: skip
        nf.dispose(ENGINE.run_kernel("FusedDepthwiseConv2D", inputs, attrs))
        plan = plans.PLANS.lookup("FusedDepthwiseConv2D", inputs, attrs, lambda *a: pytest.fail("not planned"))
        arrays = [nf.backend().data[t.data_id].values.reshape(t.shape) for t in inputs]
        got = plan.bound(arrays)
        assert got is not None
        np.testing.assert_array_equal(got.view(np.int32), plans.run(plan, arrays).view(np.int32))
        assert plan.bound([*arrays[:3], np.asfortranarray(arrays[3])]) is None  # refused before any work
        assert plan.bound([arrays[0], arrays[1], arrays[2].astype(np.float64), arrays[3]]) is None
    finally:
        nf.dispose([x, w, b, r])
