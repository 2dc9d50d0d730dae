"""Pooling and normalization against real TF.js 4.22 (cpu), plus the gradient kernels.

Fixture: ``tests/fixtures/pool_norm.json`` (``python tests/fixtures/gen_pool_norm.py``). Cases with
``"grads"`` also carry TF.js's gradient for a seeded ``dy``; the cpu ``*Grad`` kernels
(``MaxPoolGrad``, ``AvgPoolGrad``, ``MaxPool3DGrad``, ``AvgPool3DGrad``, ``LRNGrad``) are checked
against it directly, with the forward op's attributes, as autodiff will call them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from oracle_cases import OP_ERRORS, _build, case_ids, load_cases, resolve_op, run_case

import ndflow as nf
from ndflow.core.engine import ENGINE
from ndflow.ops.pool_util import pool2d_info, pool3d_info

# Cases where ndflow deliberately differs from TF.js 4.22; each is checked below on its own terms.
BEYOND_TFJS = {
    "max_pool__pad_number_rect_filter": "with a numeric pad TF.js sizes the output width with the filter "
    "height and the stride height; ndflow uses each dimension's own",
    "max_pool__frac_pad": "TF.js accepts a fractional pad and reads between pixels; ndflow raises",
    "max_pool__filter0": "TF.js accepts a filter of size 0 and returns -Infinity; ndflow raises",
    "max_pool__filter_length3": "TF.js silently ignores a third filter size in a 2D pool; ndflow raises",
    "max_pool3d__filter_length2": "TF.js reads a missing third filter size as undefined (an empty "
    "result); ndflow raises",
    "max_pool3d__frac_pad": "TF.js accepts a fractional pad and reads between pixels; ndflow raises",
    "pool__unknown_type": "TF.js treats any pooling type but 'avg' as 'max'; ndflow raises",
    "pool__pad_number_with_dilation": "TF.js ignores a numeric pad when dilations > 1; ndflow raises",
    "batch_norm__param_column": "TF.js repeats mean/variance cyclically over x's flat values; ndflow "
    "broadcasts them (the same wherever the parameter's shape is a suffix of x's)",
    "batch_norm__param_not_broadcastable": "TF.js cycles parameters that do not broadcast; ndflow raises",
    "batch_norm__param_empty": "TF.js reads past empty parameters (NaN); ndflow raises",
    "log_softmax__axis0": "TF.js supports only the last axis; ndflow any axis (as nf.softmax)",
    "log_softmax__axis_minus2": "TF.js supports only the last axis; ndflow any axis (as nf.softmax)",
    "log_softmax__bool": "TF.js subtracts bools and returns -Infinity; ndflow takes true/false as 1/0",
}
BEYOND_RAISES = [k for k in BEYOND_TFJS if k.split("__")[1] in {
    "frac_pad", "filter0", "filter_length3", "filter_length2", "unknown_type", "pad_number_with_dilation",
    "param_not_broadcastable", "param_empty",
}]  # fmt: skip

# Cases that differ from TF.js because of another family's kernel (reported, not owned here).
ELSEWHERE = {
    "moments__empty_axis": "nf.mean over an empty axis gives NaN where TF.js gives 0 (the Mean kernel)",
}

# Gradients where TF.js 4.22 is wrong; ndflow's are checked against a loop reference instead.
GRAD_BEYOND = {
    "max_pool__round_ceil": "TF.js's MaxPool gradient drops dim_rounding_mode and misses windows",
    "avg_pool__same_border_average": "TF.js's AvgPoolGrad divides by the filter size, the forward by "
    "the number of input positions in the window",
    "avg_pool__round_ceil_partial_windows": "TF.js's AvgPoolGrad drops dim_rounding_mode and divides by "
    "the filter size",
    "avg_pool3d__same_border_average": "TF.js's AvgPool3DGrad divides by the filter size, the forward by "
    "the number of input positions in the window",
    "max_pool3d__rect_filter_grad": "TF.js's 3D arg-max positions use the filter height as the row "
    "stride; with height != width the gradient lands on the wrong input",
}

ALL = load_cases("pool_norm")
CASES = [c for c in ALL if c["id"] not in BEYOND_TFJS and c["id"] not in ELSEWHERE]
BY_ID = {c["id"]: c for c in ALL}
GRAD_CASES = [c for c in ALL if "grads" in c]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_pool_norm_matches_tfjs(case, backend):
    run_case(case)


@pytest.mark.parametrize("cid", list(ELSEWHERE))
@pytest.mark.xfail(reason="another family's kernel differs from TF.js; see ELSEWHERE", strict=False)
def test_elsewhere(cid, backend):
    run_case(BY_ID[cid])


# ----------------------------------------------------------------------------- loop references


def ref_pool(x: np.ndarray, geo: dict, kind: str, last: bool = False):
    """Pool a channels-last array window by window: (values, arg-max flat input index or -1)."""
    f, s, d, before, out = (geo[k] for k in ("filter_size", "strides", "dilations", "pad_before", "out_size"))
    batch, *size, channels = x.shape
    y = np.zeros((batch, *out, channels))
    arg = np.full(y.shape, -1)
    for b, c, *o in itertools.product(range(batch), range(channels), *(range(n) for n in out)):
        best, where, total, count = -np.inf, -1, 0.0, 0
        for tap in itertools.product(*(range(n) for n in f)):
            idx = [oi * si - bi + ti * di for oi, si, bi, ti, di in zip(o, s, before, tap, d, strict=True)]
            if not all(0 <= i < n for i, n in zip(idx, size, strict=True)):
                continue
            v = float(x[(b, *idx, c)])
            total, count = total + v, count + 1
            if v > best or (last and v >= best):
                best, where = v, np.ravel_multi_index(idx, size)
        y[(b, *o, c)] = best if kind == "max" else (total / count if count else np.nan)
        arg[(b, *o, c)] = where
    return y, arg


def ref_pool_grad(x: np.ndarray, dy: np.ndarray, geo: dict, kind: str, last: bool = False) -> np.ndarray:
    """dx from the loop reference: dy to each window's arg max, or shared by its input positions."""
    f, s, d, before, out = (geo[k] for k in ("filter_size", "strides", "dilations", "pad_before", "out_size"))
    batch, *size, channels = x.shape
    _, arg = ref_pool(x, geo, "max", last)
    dx = np.zeros(x.shape)
    for b, c, *o in itertools.product(range(batch), range(channels), *(range(n) for n in out)):
        g = dy[(b, *o, c)]
        if kind == "max":
            if arg[(b, *o, c)] >= 0:
                dx[(b, *np.unravel_index(arg[(b, *o, c)], size), c)] += g
            continue
        taps = []
        for tap in itertools.product(*(range(n) for n in f)):
            idx = [oi * si - bi + ti * di for oi, si, bi, ti, di in zip(o, s, before, tap, d, strict=True)]
            if all(0 <= i < n for i, n in zip(idx, size, strict=True)):
                taps.append(idx)
        for idx in taps:
            dx[(b, *idx, c)] += g / len(taps)
    return dx


def ref_log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ----------------------------------------------------------------------------- gradients

GRAD_KERNELS = {
    "max_pool": ("MaxPoolGrad", "max"),
    "avg_pool": ("AvgPoolGrad", "avg"),
    "max_pool3d": ("MaxPool3DGrad", "max"),
    "avg_pool3d": ("AvgPool3DGrad", "avg"),
}


def _pool_attrs(op_name: str, shape: tuple[int, ...], args: list) -> dict:
    """The attributes the forward op gives its kernel (what autodiff hands the *Grad kernel)."""
    filter_size, strides, pad, *rest = args
    mode = rest[0] if rest else None
    if op_name in ("max_pool", "avg_pool"):
        return pool2d_info(shape[1:3], filter_size, strides, 1, pad, mode, op_name).attrs(pad, mode)
    return pool3d_info(shape[1:4], filter_size, strides, pad, mode, op_name).attrs(pad, mode)


def _lrn_attrs(args: list) -> dict:
    radius, bias, alpha, beta = list(args) + [5, 1, 1, 0.5][len(args) :]
    return {"depth_radius": radius, "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}


def _ndflow_grad(case: dict, created: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, dy, ndflow's dx) for a gradient case, through the cpu *Grad kernel."""
    op_name, op = resolve_op(case)
    args = _build(case["args"], created)
    dy = _build(case["grad"]["dy"], created)
    x = args[0]
    y = op(*args)
    created.append(y)
    if op_name == "local_response_normalization":
        shape4 = (1,) * (4 - x.rank) + x.shape
        x4, y4, dy4 = (nf.reshape(t, shape4) for t in (x, y, dy))
        created += [x4, y4, dy4]
        dx = ENGINE.run_kernel("LRNGrad", (x4, y4, dy4), _lrn_attrs(args[1:]))
    else:
        kernel, kind = GRAD_KERNELS[op_name]
        attrs = _pool_attrs(op_name, x.shape, args[1:])
        inputs = (dy, x, y) if kind == "max" else (dy, x)
        dx = ENGINE.run_kernel(kernel, inputs, attrs)
    created.append(dx)
    assert dx.size == x.size and dx.dtype == "float32"
    return x.numpy(), dy.numpy(), dx.numpy().reshape(x.shape)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_ids(GRAD_CASES))
def test_gradient_kernel_matches_tfjs(case, backend):
    created: list = []
    try:
        x, dy, dx = _ndflow_grad(case, created)
        op_name = case["id"].split("__")[0]
        if case["id"] in GRAD_BEYOND:
            kernel, kind = GRAD_KERNELS[op_name]
            geo = _pool_attrs(op_name, x.shape, _build(case["args"], created)[1:])
            want = ref_pool_grad(x, dy, geo, kind, last=op_name.endswith("3d"))
            np.testing.assert_allclose(dx, want, atol=1e-5)
            tfjs = np.array(case["grads"][0]["values"], dtype=np.float64).reshape(x.shape)
            assert not np.allclose(dx, tfjs, atol=1e-3), "TF.js agrees now: move the case out of GRAD_BEYOND"
        else:
            want = np.array(case["grads"][0]["values"], dtype=np.float64).reshape(x.shape)
            np.testing.assert_allclose(dx, want, atol=1e-3, rtol=1e-5)
    finally:
        nf.dispose(created)


# ----------------------------------------------------------------------------- beyond TF.js


@pytest.mark.parametrize("cid", BEYOND_RAISES)
def test_beyond_tfjs_raises_instead_of_garbage(cid, backend):
    case = BY_ID[cid]
    op_name, op = resolve_op(case)
    created: list = []
    try:
        with pytest.raises(OP_ERRORS, match=op_name):
            op(*_build(case["args"], created))
    finally:
        nf.dispose(created)


def test_beyond_tfjs_numeric_pad_sizes_each_dim_on_its_own(backend):
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 3, 4, 1)
    t = nf.tensor(x)
    y = nf.max_pool(t, [2, 3], [1, 2], 1)
    geo = pool2d_info((3, 4), [2, 3], [1, 2], 1, 1, None, "max_pool").attrs(1, None)
    assert y.shape == (1, 4, 2, 1)  # TF.js: (1, 4, 5, 1), the width from filter 2 and stride 1
    np.testing.assert_array_equal(y.numpy(), ref_pool(x, geo, "max")[0])
    nf.dispose([t, y])


def test_beyond_tfjs_batch_norm_broadcasts(backend):
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    mean, var = np.array([[1.0], [2.0]], np.float32), np.array([[1.0], [2.0]], np.float32)
    ts = [nf.tensor(a) for a in (x, mean, var)]
    y = nf.batch_norm(*ts)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 0.001), atol=1e-6)
    nf.dispose([*ts, y])


@pytest.mark.parametrize("cid", ["log_softmax__axis0", "log_softmax__axis_minus2", "log_softmax__bool"])
def test_beyond_tfjs_log_softmax(cid, backend):
    case = BY_ID[cid]
    created: list = []
    try:
        args = _build(case["args"], created)
        axis = args[1] if len(args) > 1 else -1
        y = nf.log_softmax(*args)
        created.append(y)
        assert y.dtype == "float32" and y.shape == args[0].shape
        want = ref_log_softmax(args[0].numpy().astype(np.float64), axis)
        np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
    finally:
        nf.dispose(created)


# ----------------------------------------------------------------------------- against loop references

RNG = np.random.default_rng(7)
CONFIGS_2D = [
    ((2, 5, 6, 3), (2, 3), (1, 2), "same", None),
    ((1, 7, 5, 2), 3, 2, "valid", None),
    ((1, 6, 6, 1), (3, 2), (2, 3), 1, "ceil"),
    ((2, 4, 5, 2), 2, 3, [[0, 0], [1, 2], [2, 0], [0, 0]], None),
    ((1, 5, 5, 1), 4, 3, "same", None),
    ((1, 6, 7, 1), 3, 4, 2, "round"),
]


@pytest.mark.parametrize("shape,f,s,pad,mode", CONFIGS_2D)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_and_grads_match_loop_reference(shape, f, s, pad, mode, kind, backend):
    x = RNG.standard_normal(shape).astype(np.float32)
    t = nf.tensor(x)
    geo = pool2d_info(shape[1:3], f, s, 1, pad, mode, "pool").attrs(pad, mode)
    y = (nf.max_pool if kind == "max" else nf.avg_pool)(t, f, s, pad, mode)
    want, _ = ref_pool(x, geo, kind)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
    dy_np = RNG.standard_normal(y.shape).astype(np.float32)
    dy = nf.tensor(dy_np)
    inputs = (dy, t, y) if kind == "max" else (dy, t)
    dx = ENGINE.run_kernel("MaxPoolGrad" if kind == "max" else "AvgPoolGrad", inputs, geo)
    np.testing.assert_allclose(dx.numpy(), ref_pool_grad(x, dy_np, geo, kind), atol=1e-5)
    nf.dispose([t, y, dy, dx])


CONFIGS_3D = [
    ((1, 4, 5, 3, 2), (2, 3, 1), (1, 2, 2), "same", None),
    ((2, 3, 4, 5, 1), 2, 1, "valid", None),
    ((1, 5, 5, 4, 1), (3, 2, 2), 2, 1, "ceil"),
    ((1, 5, 4, 4, 1), 1, 3, "same", None),
]


@pytest.mark.parametrize("shape,f,s,pad,mode", CONFIGS_3D)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_and_grads_match_loop_reference(shape, f, s, pad, mode, kind, backend):
    x = np.round(RNG.standard_normal(shape), 1).astype(np.float32)  # rounding makes ties (last wins)
    t = nf.tensor(x)
    geo = pool3d_info(shape[1:4], f, s, pad, mode, "pool3d").attrs(pad, mode)
    y = (nf.max_pool3d if kind == "max" else nf.avg_pool3d)(t, f, s, pad, mode)
    want, _ = ref_pool(x, geo, kind, last=True)
    np.testing.assert_allclose(y.numpy(), np.where(np.isnan(want), 0, want), atol=1e-5)
    dy_np = RNG.standard_normal(y.shape).astype(np.float32)
    dy = nf.tensor(dy_np)
    inputs = (dy, t, y) if kind == "max" else (dy, t)
    dx = ENGINE.run_kernel("MaxPool3DGrad" if kind == "max" else "AvgPool3DGrad", inputs, geo)
    np.testing.assert_allclose(dx.numpy(), ref_pool_grad(x, dy_np, geo, kind, last=True), atol=1e-5)
    nf.dispose([t, y, dy, dx])


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("window,dilation,pad", [(2, 2, "valid"), ((3, 2), (2, 3), "valid"), (2, (1, 2), "valid")])
def test_dilated_pool_matches_loop_reference(kind, window, dilation, pad, backend):
    x = RNG.standard_normal((2, 7, 8, 2)).astype(np.float32)
    t = nf.tensor(x)
    y = nf.pool(t, window, kind, pad, dilation)
    geo = pool2d_info((7, 8), window, 1, dilation, pad, None, "pool").attrs(pad, None)
    np.testing.assert_allclose(y.numpy(), ref_pool(x, geo, kind)[0], atol=1e-5)
    nf.dispose([t, y])


def test_max_pool_with_argmax_indexes_point_at_the_maxima(backend):
    x = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    t = nf.tensor(x)
    for include in (False, True):
        res = nf.max_pool_with_argmax(t, 3, 2, "same", include)
        assert isinstance(res, nf.ops.pooling.MaxPoolWithArgmaxResult)
        idx = res.indexes.numpy()
        if not include:
            idx = idx + np.arange(2).reshape(2, 1, 1, 1) * (5 * 6 * 3)
        np.testing.assert_array_equal(x.reshape(-1)[idx], res.result.numpy())
        nf.dispose(list(res))
    t.dispose()


def test_lrn_and_grad_match_numpy(backend):
    x = RNG.standard_normal((2, 3, 2, 7)).astype(np.float32)
    radius, bias, alpha, beta = 2, 1.5, 0.3, 0.75
    xs = x.astype(np.float64)
    sq = np.stack([(xs[..., max(0, c - radius) : c + radius + 1] ** 2).sum(-1) for c in range(7)], -1)
    want = xs * (bias + alpha * sq) ** -beta
    t = nf.tensor(x)
    y = nf.local_response_normalization(t, radius, bias, alpha, beta)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    # the gradient against central differences of the float64 formula
    dy_np = RNG.standard_normal(x.shape)
    dy = nf.tensor(dy_np.astype(np.float32))
    dx = ENGINE.run_kernel("LRNGrad", (t, y, dy), _lrn_attrs([radius, bias, alpha, beta]))

    def loss(v):
        s = np.stack([(v[..., max(0, c - radius) : c + radius + 1] ** 2).sum(-1) for c in range(7)], -1)
        return float((v * (bias + alpha * s) ** -beta * dy_np).sum())

    eps, numeric = 1e-6, np.zeros_like(xs)
    for i in np.ndindex(xs.shape):
        hi, lo = xs.copy(), xs.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (loss(hi) - loss(lo)) / (2 * eps)
    np.testing.assert_allclose(dx.numpy(), numeric, atol=1e-3)
    nf.dispose([t, y, dy, dx])


# ----------------------------------------------------------------------------- API shape


def test_moments_is_a_named_tuple(backend):
    t = nf.tensor([[1.0, 2.0], [3.0, 5.0]])
    m = nf.moments(t, 0, True)
    assert m._fields == ("mean", "variance") and m.mean.shape == (1, 2)
    np.testing.assert_allclose(m.variance.numpy(), [[1.0, 2.25]])
    nf.dispose([t, *m])


def test_chained_methods(backend):
    t = nf.tensor(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))
    outs = [
        t.max_pool(2, 2, "valid"),
        t.avg_pool(2, 2, "valid"),
        t.pool(2, "max", "valid", None, 2),
        t.local_response_normalization(1),
        t.log_softmax(),
        t.batch_norm([1.0], [2.0]),
    ]
    assert outs[0].numpy().ravel().tolist() == [5, 7, 13, 15]
    assert outs[1].numpy().ravel().tolist() == [2.5, 4.5, 10.5, 12.5]
    assert outs[2].shape == (1, 2, 2, 1)
    nf.dispose([t, *outs])


def test_inputs_as_lists_and_errors_leak_nothing(backend):
    y = nf.avg_pool([[[1.0], [2.0]], [[3.0], [4.0]]], 2, 1, "valid")  # rank 3: a batch of one
    assert y.shape == (1, 1, 1) and y.numpy().item() == 2.5
    y.dispose()
    before = nf.memory().num_tensors
    with pytest.raises(ValueError, match="batch_norm"):
        nf.batch_norm([[1.0, 2.0]], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="pool"):
        nf.pool([[[[1.0]]]], 2, "avg", "same", 2, 2)
    with pytest.raises(TypeError, match="max_pool3d"):
        nf.max_pool3d([[[[[1.0]]]]], 1)
    assert nf.memory().num_tensors == before


def test_pool_kernels_are_vectorised(backend):
    """A 64x64x16 batch pools in well under a second (a per-pixel loop would take minutes)."""
    t = nf.tensor(RNG.standard_normal((4, 64, 64, 16)).astype(np.float32))
    y = nf.max_pool(t, 3, 1, "same")
    r = nf.reshape(t, [4, 16, 16, 16, 16])
    z = nf.avg_pool3d(r, 2, 2, "same")
    assert y.shape == (4, 64, 64, 16) and z.shape == (4, 8, 8, 8, 16)
    assert math.isfinite(float(y.numpy().sum()))
    nf.dispose([t, r, y, z])
