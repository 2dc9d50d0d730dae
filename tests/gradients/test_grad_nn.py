"""Gradients of the convolution, pooling, normalization, image and fused kernels, checked two ways:
against TF.js 4.22's own gradients (``tests/fixtures/grad_nn.json``, from ``gen_grad_nn.py``) and
against central finite differences. Second-order gradients (the backprop kernels' own gradients)
are checked the same two ways.

Most kernels of this family round their results through float32 even when the cpu backend holds
float64 (``float64_cpu``), so the finite differences take a larger step: linear maps (convolutions,
pools, resizes) any step, smooth ones ``1e-2``, ones with kinks ``1e-3`` at inputs away from them.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_cases import _get, _substitute, _wrt_paths, check_finite_differences, check_grad_case
from oracle_cases import _build, _check_output, case_ids, load_cases, resolve_op

import ndflow as nf

# Where ndflow's gradient deliberately differs from TF.js 4.22 (checked by finite differences only).
_DILATION = "TF.js refuses dilations > 1 in the gradient ('not yet supported'); ndflow differentiates them"
_NO_GRAD = "TF.js has no gradient for the backprop kernel {}; ndflow has (linear in each input)"
_SWAPPED = "TF.js's ResizeBilinearGrad swaps height and width of a non-square image (shape error)"
BEYOND_TFJS = {
    "conv2d__round_ceil": "TF.js's Conv2D gradient drops dim_rounding_mode: the last row and column get no gradient",
    "conv2d__dilations": _DILATION,
    "conv1d__dilation": _DILATION,
    "conv3d__dilations": _DILATION,
    "depthwise_conv2d__dilations": _DILATION,
    "conv2d__fused_dilations_linear": _DILATION,
    "conv3d_transpose__same_stride2": _NO_GRAD.format("Conv3DBackpropInputV2"),
    "max_pool__round_ceil": "TF.js's MaxPool gradient drops dim_rounding_mode and misses the partial windows",
    "avg_pool__same": "TF.js's AvgPoolGrad divides by the filter size, the forward by the window's input positions",
    "avg_pool__round_ceil": "TF.js's AvgPoolGrad drops dim_rounding_mode and divides by the filter size",
    "max_pool3d__rect_filter": "TF.js's 3-D arg-max uses the filter height as the row stride (non-cubic filters)",
    "avg_pool3d__same": "TF.js's AvgPool3DGrad divides by the filter size, the forward by the input positions",
    "resize_nearest_neighbor__half_pixel": "TF.js's ResizeNearestNeighborGrad ignores half_pixel_centers",
    "resize_nearest_neighbor__batch2": "TF.js's ResizeNearestNeighborGrad reads each image's dy at the wrong offset",
    "batch_norm__no_offset_scale": "TF.js's FusedBatchNorm gradient reads the missing scale and throws",
    "batch_norm3d__params": "TF.js's FusedBatchNorm gradient reads the missing offset and throws",
    "batch_norm__rank4_params": "TF.js reshapes the [2, 2, 2, 3] gradient of a [1, 1, 1, 3] mean without summing",
    "resize_bilinear__up": _SWAPPED,
    "resize_bilinear__down": _SWAPPED,
    "resize_bilinear__half_pixel": _SWAPPED,
    "resize_bilinear__rank3": _SWAPPED,
    "conv2d__fused_nchw_linear": "TF.js's fused conv2d gradient refuses NCHW",
    "conv2d__fused_nchw_prelu": "TF.js's fused conv2d refuses NCHW with an activation under a gradient",
    "mat_mul__fused_batch_broadcast_b_sigmoid": "TF.js does not sum the broadcast batch of b back and throws",
    "fn__grad2_log_softmax": "TF.js treats log_softmax's saved output as a constant one order up",
    "fn__grad2_conv2d_filter": _NO_GRAD.format("Conv2DBackpropFilter"),
    "fn__grad2_conv3d": _NO_GRAD.format("Conv3DBackpropInputV2"),
    "fn__grad2_depthwise": _NO_GRAD.format("DepthwiseConv2dNativeBackpropInput"),
    "fn__grad2_max_pool": _NO_GRAD.format("MaxPoolGrad"),
    "fn__grad2_avg_pool": _NO_GRAD.format("AvgPoolGrad"),
    "fn__grad2_avg_pool3d": _NO_GRAD.format("AvgPool3DGrad"),
    "fn__grad2_resize_bilinear": _NO_GRAD.format("ResizeBilinearGrad"),
    "fn__grad2_resize_nearest": _NO_GRAD.format("ResizeNearestNeighborGrad"),
}


ALL = load_cases("grad_nn")
PLAIN = [c for c in ALL if c["op"] != "fn" and not c["op"].startswith("fused.") and c["id"] not in BEYOND_TFJS]
OTHER = [c for c in ALL if (c["op"] == "fn" or c["op"].startswith("fused.")) and c["id"] not in BEYOND_TFJS]
BEYOND_CASES = [c for c in ALL if c["id"] in BEYOND_TFJS]


def _snake(name: str) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in name)


def _fused_call(op: str, x, f, bias, prelu, cfg: dict) -> nf.Tensor:
    """``nf.fused.<op>(**kwargs)`` from a fused case's ``[x, filter, bias, prelu, {config}]``."""
    kwargs = {_snake(k): v for k, v in cfg.items()}
    if op == "fused.matMul":
        return nf.fused.mat_mul(a=x, b=f, bias=bias, prelu_activation_weights=prelu, **kwargs)
    fused = nf.fused.conv2d if op == "fused.conv2d" else nf.fused.depthwise_conv2d
    return fused(x=x, filter=f, bias=bias, prelu_activation_weights=prelu, **kwargs)


def _sq_grad(f, wrt: int = 0):
    """``(*xs) -> d/dxs[wrt] sum(f(*xs) ** 2)``: a gradient as a function, to differentiate again."""

    def g(*xs):
        gs = nf.grads(lambda *a: nf.sum(nf.square(f(*a))))(list(xs))
        nf.dispose([t for i, t in enumerate(gs) if i != wrt])
        return gs[wrt]

    return g


def _grad_of(f):
    """Like TF.js's ``tf.grad(f)(x)`` of a closure over the other arguments."""
    return lambda x: nf.grad(lambda t: nf.sum(nf.square(f(t))))(x)


# The Python twins of the fixture's TF.js composites ("fn__" ids).
FNS = {
    "fn__grad2_conv2d": lambda x, f: _grad_of(lambda t: nf.conv2d(t, f, 1, "same"))(x),
    "fn__grad2_conv2d_filter": lambda x, f: _grad_of(lambda t: nf.conv2d(x, t, 2, "same"))(f),
    "fn__grad2_conv2d_transpose": lambda x, f: _grad_of(lambda t: nf.conv2d_transpose(t, f, [1, 5, 5, 2], 2, "same"))(
        x
    ),
    "fn__grad2_conv3d": lambda x, f: _grad_of(lambda t: nf.conv3d(t, f, 1, "same"))(x),
    "fn__grad2_depthwise": lambda x, f: _grad_of(lambda t: nf.depthwise_conv2d(t, f, 1, "same"))(x),
    "fn__grad2_max_pool": _grad_of(lambda t: nf.max_pool(t, 2, 1, "same")),
    "fn__grad2_avg_pool": _grad_of(lambda t: nf.avg_pool(t, 2, 2, "valid")),
    "fn__grad2_avg_pool3d": _grad_of(lambda t: nf.avg_pool3d(t, 2, 1, "valid")),
    "fn__grad2_resize_bilinear": _grad_of(lambda t: nf.image.resize_bilinear(t, [5, 4])),
    "fn__grad2_resize_nearest": _grad_of(lambda t: nf.image.resize_nearest_neighbor(t, [5, 4])),
    "fn__grad2_batch_norm": lambda x, v: _grad_of(
        lambda t: nf.batch_norm(x, nf.zeros([3]), t, nf.zeros([3]), nf.ones([3]))
    )(v),
    "fn__grad2_log_softmax": _grad_of(nf.log_softmax),
    "fn__grad2_fused_conv2d_relu": lambda x, f, b: _grad_of(
        lambda t: nf.fused.conv2d(x=t, filter=f, bias=b, strides=1, pad="same", activation="relu")
    )(x),
    "fn__grad2_fused_mat_mul_linear": lambda a, b, c: _grad_of(lambda t: nf.fused.mat_mul(a=t, b=b, bias=c))(a),
}


def _op_of(case: dict):
    """The ndflow function of a fused or composite case, taking the case's arguments."""
    if case["op"] == "fn":
        return FNS[case["id"]]
    return lambda *args: _fused_call(case["op"], *args)


def _differentiable(op, args: list, paths: list):
    """``op`` as a function of the tensors at ``paths`` in ``args`` (the other arguments fixed)."""

    def f(*values):
        call_args = [list(a) if isinstance(a, list) else a for a in args]
        for p, v in zip(paths, values, strict=True):
            _substitute(call_args, p, v)
        return op(*call_args)

    return f


def check_against_tfjs(case: dict) -> None:
    """A fused or composite case: the forward result and the gradient against TF.js's."""
    op = _op_of(case)
    created: list = []
    results: list = []
    try:
        args = _build(case["args"], created)
        results.append(op(*args))
        _check_output(case["id"], 0, results[0], case["outputs"][0])
        paths = _wrt_paths(case["grad"]["wrt"])
        dy = _build(case["grad"]["dy"], created)
        grads = nf.grads(_differentiable(op, args, paths))([_get(args, p) for p in paths], dy)
        results += grads
        assert len(grads) == len(case["grads"])
        for k, (got, exp) in enumerate(zip(grads, case["grads"], strict=True)):
            _check_output(f"{case['id']} gradient", k, got, exp)
    finally:
        nf.dispose(created + results)


@pytest.mark.parametrize("case", PLAIN, ids=case_ids(PLAIN))
def test_gradient_matches_tfjs(case, backend):
    check_grad_case(case)


# The gradient cases of the op fixtures too, but those where TF.js is wrong (tests/ops/test_pool_norm.py).
OP_FIXTURE_BEYOND = {
    "max_pool__round_ceil", "avg_pool__same_border_average", "avg_pool__round_ceil_partial_windows",
    "max_pool3d__rect_filter_grad", "avg_pool3d__same_border_average",
}  # fmt: skip
OP_GRAD_CASES = [
    c
    for fixture in ("conv", "pool_norm")
    for c in load_cases(fixture)
    if "grads" in c and c["id"] not in OP_FIXTURE_BEYOND
]


@pytest.mark.parametrize("case", OP_GRAD_CASES, ids=case_ids(OP_GRAD_CASES))
def test_op_fixture_gradient_matches_tfjs(case, backend):
    check_grad_case(case)


@pytest.mark.parametrize("case", OTHER, ids=case_ids(OTHER))
def test_fused_and_higher_order_match_tfjs(case, backend):
    check_against_tfjs(case)


def test_fixture_names_every_composite():
    assert set(FNS) == {c["id"] for c in ALL if c["op"] == "fn"}


# ----------------------------------------------------------------------------- beyond TF.js

SMOOTH = {"eps": 1e-2, "rtol": 2e-3, "atol": 1e-4}
LINEAR = {"eps": 0.1}
KINKS = {"eps": 1e-3, "rtol": 2e-3, "atol": 2e-4}


def _array(spec: dict) -> np.ndarray:
    t = spec["tensor"]
    return np.asarray(t["values"], np.float64).reshape(t["shape"])


def _case_op(case: dict):
    """The ndflow function of any case of the fixture."""
    if case["op"] == "fn" or case["op"].startswith("fused."):
        return _op_of(case)
    return resolve_op(case)[1]


def check_case_by_finite_differences(case: dict, options: dict) -> None:
    """The case's op, differentiated by ndflow, against finite differences at the fixture's inputs."""
    paths = _wrt_paths(case["grad"]["wrt"])
    arrays = [_array(_get(case["args"], p)) for p in paths]
    created: list = []
    try:
        args = _build(case["args"], created)
        f = _differentiable(_case_op(case), args, paths)
        check_finite_differences(f, arrays, _array(case["grad"]["dy"]), **options)
    finally:
        nf.dispose(created)


def _beyond_options(cid: str) -> dict:
    if "relu" in cid or "prelu" in cid or "max_pool" in cid or "dilation2d" in cid:
        return KINKS
    if cid.startswith(("batch_norm", "fn__grad2_batch_norm")) or "sigmoid" in cid:
        return SMOOTH
    return LINEAR


@pytest.mark.parametrize("case", BEYOND_CASES, ids=case_ids(BEYOND_CASES))
def test_beyond_tfjs_by_finite_differences(case, backend):
    assert "grad_error" in case or "grads" in case  # the fixture records what TF.js did
    check_case_by_finite_differences(case, _beyond_options(case["id"]))


@pytest.mark.parametrize("case", [c for c in BEYOND_CASES if "grads" in c], ids=lambda c: c["id"])
def test_beyond_tfjs_cases_still_differ(case, backend):
    """Where TF.js returns a gradient we call wrong, it still differs from ndflow's (else: move it back)."""
    created: list = []
    grads: list = []
    try:
        args = _build(case["args"], created)
        paths = _wrt_paths(case["grad"]["wrt"])
        f = _differentiable(_case_op(case), args, paths)
        grads = nf.grads(f)([_get(args, p) for p in paths], _build(case["grad"]["dy"], created))
        same = [np.allclose(g.numpy().reshape(-1), _array({"tensor": e}).reshape(-1), atol=1e-3)
                for g, e in zip(grads, case["grads"], strict=True)]  # fmt: skip
        assert not all(same)
    finally:
        nf.dispose(created + grads)


# ----------------------------------------------------------------------------- finite differences

rng = np.random.default_rng(7)


def N(*shape):
    return rng.standard_normal(shape)


def P(*shape):
    """Positive values away from zero (variances)."""
    return rng.uniform(0.5, 2.0, shape)


def DISTINCT(*shape):
    """Values at least 0.1 apart (max pooling, dilation: no ties within a step)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 1


def fused_conv(activation: str, **kw):
    def f(x, w, b, *p):
        prelu = p[0] if p else None
        geometry = {"strides": 1, "pad": "same", **kw}
        return nf.fused.conv2d(x=x, filter=w, bias=b, activation=activation, prelu_activation_weights=prelu, **geometry)

    return f


def fused_depthwise(activation: str, **kw):
    def f(x, w, b, *p):
        return nf.fused.depthwise_conv2d(x=x, filter=w, bias=b, activation=activation,
                                         prelu_activation_weights=p[0] if p else None,
                                         **{"strides": 1, "pad": "same", **kw})  # fmt: skip

    return f


def fused_mat_mul(activation: str, **kw):
    def f(a, b, c, *p):
        return nf.fused.mat_mul(a=a, b=b, bias=c, activation=activation, prelu_activation_weights=p[0] if p else None,
                                **kw)  # fmt: skip

    return f


# name: (function of tensors, input arrays, check_finite_differences options)
FD = {
    "conv2d_same_stride2": (lambda x, w: nf.conv2d(x, w, 2, "same"), [N(2, 5, 5, 2), N(3, 3, 2, 3)], LINEAR),
    "conv2d_dilations": (
        lambda x, w: nf.conv2d(x, w, 1, "valid", "NHWC", [2, 1]),
        [N(1, 6, 5, 2), N(2, 3, 2, 2)],
        LINEAR,
    ),  # fmt: skip
    "conv2d_nchw": (lambda x, w: nf.conv2d(x, w, [1, 2], "same", "NCHW"), [N(1, 2, 5, 5), N(2, 3, 2, 3)], LINEAR),
    "conv2d_explicit_pad_ceil": (
        lambda x, w: nf.conv2d(x, w, 2, [[0, 0], [1, 0], [0, 2], [0, 0]], "NHWC", 1, "ceil"),
        [N(1, 5, 4, 1), N(2, 2, 1, 2)],
        LINEAR,
    ),  # fmt: skip
    "conv1d": (lambda x, w: nf.conv1d(x, w, 2, "same"), [N(2, 7, 2), N(3, 2, 3)], LINEAR),
    "conv2d_transpose": (
        lambda x, w: nf.conv2d_transpose(x, w, [1, 6, 5, 2], [2, 2], "same"),
        [N(1, 3, 3, 3), N(3, 2, 2, 3)],
        LINEAR,
    ),  # fmt: skip
    "conv3d_same_stride2": (lambda x, w: nf.conv3d(x, w, 2, "same"), [N(1, 5, 4, 3, 2), N(3, 2, 3, 2, 2)], LINEAR),
    "conv3d_dilations": (
        lambda x, w: nf.conv3d(x, w, 1, "valid", "NDHWC", [1, 2, 1]),
        [N(1, 3, 5, 3, 1), N(2, 2, 2, 1, 2)],
        LINEAR,
    ),  # fmt: skip
    "conv3d_transpose": (
        lambda x, w: nf.conv3d_transpose(x, w, [1, 4, 3, 4, 2], [2, 1, 2], "same"),
        [N(1, 2, 3, 2, 3), N(2, 2, 2, 2, 3)],
        LINEAR,
    ),  # fmt: skip
    "depthwise_mult2": (lambda x, w: nf.depthwise_conv2d(x, w, 2, "same"), [N(2, 5, 5, 2), N(3, 3, 2, 2)], LINEAR),
    "depthwise_dilations_nchw": (
        lambda x, w: nf.depthwise_conv2d(x, w, 1, "same", "NCHW", 2),
        [N(1, 2, 5, 5), N(2, 2, 2, 1)],
        LINEAR,
    ),  # fmt: skip
    "separable_conv2d": (
        lambda x, d, p: nf.separable_conv2d(x, d, p, 1, "same"),
        [N(1, 4, 4, 2), N(2, 2, 2, 2), N(1, 1, 4, 3)],
        SMOOTH,
    ),  # fmt: skip
    "dilation2d": (
        lambda x, w: nf.dilation2d(x, w, 1, "same", 2),
        [DISTINCT(1, 5, 5, 2), DISTINCT(2, 2, 2) * 0.37],
        KINKS,
    ),  # fmt: skip
    "max_pool_same": (lambda x: nf.max_pool(x, 3, 2, "same"), [DISTINCT(2, 5, 5, 2)], KINKS),
    "max_pool_round": (lambda x: nf.max_pool(x, 2, 2, 0, "round"), [DISTINCT(1, 5, 5, 1)], KINKS),
    "avg_pool_same": (lambda x: nf.avg_pool(x, 3, 2, "same"), [N(2, 5, 5, 2)], LINEAR),
    "avg_pool_explicit_pad": (
        lambda x: nf.avg_pool(x, [2, 3], 1, [[0, 0], [1, 0], [2, 1], [0, 0]]),
        [N(1, 3, 4, 1)],
        LINEAR,
    ),  # fmt: skip
    "pool_max_dilated_same": (lambda x: nf.pool(x, 2, "max", "same", 2), [DISTINCT(1, 5, 5, 1) + 2], KINKS),
    "pool_avg_dilated": (lambda x: nf.pool(x, [2, 2], "avg", "valid", [2, 1]), [N(1, 5, 4, 2)], LINEAR),
    "max_pool3d_rect": (lambda x: nf.max_pool3d(x, [1, 2, 3], [1, 1, 2], "same"), [DISTINCT(1, 2, 3, 5, 2)], KINKS),
    "avg_pool3d_same": (lambda x: nf.avg_pool3d(x, [2, 3, 2], 2, "same"), [N(1, 3, 4, 3, 2)], LINEAR),
    "avg_pool3d_pad_ceil": (lambda x: nf.avg_pool3d(x, 2, 2, 1, "ceil"), [N(1, 3, 3, 4, 1)], LINEAR),
    "batch_norm_rank1": (nf.batch_norm, [N(2, 3, 4), N(4), P(4), N(4), N(4)], SMOOTH),
    "batch_norm_broadcast": (
        lambda x, m, v, o, s: nf.batch_norm(x, m, v, o, s, 0.1),
        [N(2, 3, 4), N(1, 3, 4), P(1, 3, 1), N(1, 1, 4), N(1, 3, 4)],
        SMOOTH,
    ),  # fmt: skip
    "batch_norm_scalar_params": (lambda x, m, v: nf.batch_norm(x, m, v), [N(3, 2), N(1), P(1)], SMOOTH),
    "batch_norm_param_rank_above_x": (lambda x, m, v: nf.batch_norm(x, m, v), [N(3), N(1, 1, 3), P(1, 1, 3)], SMOOTH),
    "lrn_defaults": (nf.local_response_normalization, [N(1, 2, 2, 8)], SMOOTH),
    "lrn_custom": (lambda x: nf.local_response_normalization(x, 2, 1.5, 0.3, 0.75), [N(2, 2, 3, 6)], SMOOTH),
    "log_softmax_last": (nf.log_softmax, [N(3, 4)], SMOOTH),
    "log_softmax_axis0": (lambda x: nf.log_softmax(x, 0), [N(3, 2, 2)], SMOOTH),
    "resize_bilinear_half_pixel": (
        lambda x: nf.image.resize_bilinear(x, [5, 3], False, True),
        [N(2, 3, 4, 2)],
        LINEAR,
    ),  # fmt: skip
    "resize_bilinear_align": (lambda x: nf.image.resize_bilinear(x, [2, 7], True), [N(1, 4, 3, 1)], LINEAR),
    "resize_nearest_half_pixel": (
        lambda x: nf.image.resize_nearest_neighbor(x, [5, 7], False, True),
        [N(2, 3, 4, 2)],
        LINEAR,
    ),  # fmt: skip
    "resize_nearest_align_rank3": (lambda x: nf.image.resize_nearest_neighbor(x, [2, 5], True), [N(3, 4, 2)], LINEAR),
    "fused_conv_linear": (fused_conv("linear"), [N(1, 4, 4, 2), N(2, 2, 2, 3), N(3)], LINEAR),
    "fused_conv_relu": (fused_conv("relu"), [N(1, 4, 4, 2), N(2, 2, 2, 3), N(3)], KINKS),
    "fused_conv_relu6": (fused_conv("relu6"), [N(1, 4, 4, 2) * 3, N(2, 2, 2, 3), N(3)], KINKS),
    "fused_conv_elu": (fused_conv("elu", strides=2), [N(1, 5, 5, 2), N(3, 3, 2, 2), N(1, 1, 2)], KINKS),
    "fused_conv_sigmoid": (fused_conv("sigmoid"), [N(1, 3, 3, 2), N(2, 2, 2, 2), N(2)], SMOOTH),
    "fused_conv_leakyrelu": (
        fused_conv("leakyrelu", leakyrelu_alpha=0.3),
        [N(1, 4, 4, 1), N(2, 2, 1, 2), N(2)],
        KINKS,
    ),  # fmt: skip
    "fused_conv_leakyrelu_negative_alpha": (
        fused_conv("leakyrelu", leakyrelu_alpha=-0.4),
        [N(1, 4, 4, 1), N(2, 2, 1, 2), N(2)],
        KINKS,
    ),  # fmt: skip
    "fused_conv_prelu_3d": (fused_conv("prelu"), [N(1, 3, 3, 2), N(2, 2, 2, 3), N(3), N(3, 1, 3)], KINKS),
    "fused_conv_nchw_prelu": (
        fused_conv("prelu", data_format="NCHW"),
        [N(1, 2, 4, 4), N(2, 2, 2, 3), N(3), N(3)],
        KINKS,
    ),  # fmt: skip
    "fused_conv_dilated_elu": (fused_conv("elu", dilations=2), [N(1, 5, 5, 1), N(2, 2, 1, 2), N(2)], SMOOTH),
    "fused_depthwise_relu6": (fused_depthwise("relu6", strides=2), [N(1, 5, 5, 2) * 3, N(3, 3, 2, 2), N(4)], KINKS),
    "fused_depthwise_prelu_nchw": (
        fused_depthwise("prelu", data_format="NCHW"),
        [N(1, 2, 4, 4), N(2, 2, 2, 1), N(2), N(2)],
        KINKS,
    ),  # fmt: skip
    "fused_depthwise_sigmoid": (fused_depthwise("sigmoid"), [N(1, 3, 3, 2), N(2, 2, 2, 1), N(2)], SMOOTH),
    "fused_mat_mul_relu": (fused_mat_mul("relu", transpose_a=True), [N(3, 2), N(3, 4), N(4)], KINKS),
    "fused_mat_mul_batch_bcast_elu": (
        fused_mat_mul("elu", transpose_b=True),
        [N(2, 1, 2, 3), N(3, 4, 3), N(3, 1, 4)],
        SMOOTH,
    ),  # fmt: skip
    "fused_mat_mul_prelu": (
        fused_mat_mul("prelu", transpose_a=True, transpose_b=True),
        [N(3, 2), N(4, 3), N(4), N(4)],
        KINKS,
    ),  # fmt: skip
    "fused_mat_mul_leakyrelu_negative_alpha": (
        fused_mat_mul("leakyrelu", leakyrelu_alpha=-0.5),
        [N(2, 3), N(3, 2), N(2)],
        KINKS,
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(FD))
def test_finite_differences(name):
    fn, arrays, options = FD[name]
    check_finite_differences(fn, arrays, **options)


# Second order: the gradient function itself, differentiated, against finite differences of it.
SECOND = {
    "conv2d_x": (_sq_grad(lambda x, w: nf.conv2d(x, w, 2, "same")), [N(1, 5, 5, 2), N(3, 3, 2, 2)], SMOOTH),
    "conv2d_filter": (
        _sq_grad(lambda x, w: nf.conv2d(x, w, 1, "same", "NHWC", 2), 1),
        [N(1, 5, 5, 2), N(2, 2, 2, 2)],
        SMOOTH,
    ),  # fmt: skip
    "conv2d_transpose": (
        _sq_grad(lambda x, w: nf.conv2d_transpose(x, w, [1, 5, 5, 2], 2, "same"), 1),
        [N(1, 3, 3, 3), N(3, 3, 2, 3)],
        SMOOTH,
    ),  # fmt: skip
    "conv3d_x": (_sq_grad(lambda x, w: nf.conv3d(x, w, 1, "same")), [N(1, 3, 3, 3, 2), N(2, 2, 2, 2, 2)], SMOOTH),
    "conv3d_filter": (
        _sq_grad(lambda x, w: nf.conv3d(x, w, 2, "same"), 1),
        [N(1, 4, 3, 3, 1), N(2, 2, 2, 1, 2)],
        SMOOTH,
    ),  # fmt: skip
    "depthwise_x": (
        _sq_grad(lambda x, w: nf.depthwise_conv2d(x, w, 1, "same")),
        [N(1, 4, 4, 2), N(3, 3, 2, 2)],
        SMOOTH,
    ),  # fmt: skip
    "depthwise_filter": (
        _sq_grad(lambda x, w: nf.depthwise_conv2d(x, w, 2, "valid"), 1),
        [N(1, 5, 5, 2), N(2, 2, 2, 1)],
        SMOOTH,
    ),  # fmt: skip
    "max_pool": (_sq_grad(lambda x: nf.max_pool(x, 2, 1, "same")), [DISTINCT(1, 4, 4, 2)], KINKS),
    "avg_pool": (_sq_grad(lambda x: nf.avg_pool(x, 3, 2, "same")), [N(1, 5, 5, 2)], LINEAR),
    "avg_pool3d": (_sq_grad(lambda x: nf.avg_pool3d(x, 2, 1, "same")), [N(1, 3, 3, 3, 1)], LINEAR),
    "resize_bilinear": (
        _sq_grad(lambda x: nf.image.resize_bilinear(x, [5, 3], False, True)),
        [N(2, 3, 4, 2)],
        LINEAR,
    ),  # fmt: skip
    "resize_nearest": (
        _sq_grad(lambda x: nf.image.resize_nearest_neighbor(x, [5, 7], True)),
        [N(2, 3, 4, 2)],
        LINEAR,
    ),  # fmt: skip
    "batch_norm_variance": (_sq_grad(nf.batch_norm, 2), [N(2, 3, 4), N(4), P(4), N(4), N(4)], SMOOTH),
    "batch_norm_x": (_sq_grad(nf.batch_norm, 0), [N(2, 3, 4), N(4), P(4), N(4), N(4)], SMOOTH),
    "fused_conv_relu_filter": (_sq_grad(fused_conv("relu"), 1), [N(1, 4, 4, 2), N(2, 2, 2, 3), N(3)], KINKS),
    "fused_conv_prelu_weights": (
        _sq_grad(fused_conv("prelu"), 3),
        [N(1, 3, 3, 2), N(2, 2, 2, 2), N(2), N(2)],
        KINKS,
    ),  # fmt: skip
    "fused_mat_mul_linear": (_sq_grad(fused_mat_mul("linear"), 0), [N(2, 3), N(3, 4), N(4)], SMOOTH),
    "log_softmax": (_sq_grad(nf.log_softmax), [N(2, 4)], SMOOTH),
    "fused_conv_sigmoid": (_sq_grad(fused_conv("sigmoid")), [N(1, 3, 3, 1), N(2, 2, 1, 2), N(2)], SMOOTH),
    "fused_mat_mul_elu_bias": (_sq_grad(fused_mat_mul("elu"), 2), [N(2, 3), N(3, 2), N(2)], SMOOTH),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_derivative_by_finite_differences(name):
    f, arrays, options = SECOND[name]
    check_finite_differences(f, arrays, **options)


# Kernels whose gradients are not differentiated again (neither are they in TF.js): not linear in x.
NOT_TWICE = {
    "LRNGrad": lambda t: nf.local_response_normalization(t, 1),
    "MaxPool3DGrad": lambda t: nf.max_pool3d(t, 2, 1, "same"),
    "Dilation2DBackpropInput": lambda t: nf.dilation2d(t, nf.zeros([2, 2, 3]), 1, "same"),
}


@pytest.mark.parametrize("kernel", list(NOT_TWICE))
def test_second_order_that_does_not_exist_says_so(kernel):
    x = nf.tensor(DISTINCT(1, 2, 2, 3))
    try:
        with pytest.raises(NotImplementedError, match=kernel):
            nf.grad(nf.grad(lambda t: nf.sum(nf.square(NOT_TWICE[kernel](t)))))(x)
    finally:
        x.dispose()


def test_every_kernel_of_the_family_has_a_gradient():
    from ndflow.core.kernel_registry import get_gradient

    kernels = """Conv2D Conv2DBackpropInput Conv2DBackpropFilter Conv3D Conv3DBackpropInputV2 Conv3DBackpropFilterV2
    DepthwiseConv2dNative DepthwiseConv2dNativeBackpropInput DepthwiseConv2dNativeBackpropFilter Dilation2D
    FusedConv2D FusedDepthwiseConv2D _FusedMatMul MaxPool AvgPool MaxPool3D AvgPool3D MaxPoolGrad AvgPoolGrad
    AvgPool3DGrad FusedBatchNorm LRN LogSoftmax ResizeBilinear ResizeNearestNeighbor ResizeBilinearGrad
    ResizeNearestNeighborGrad""".split()
    assert [k for k in kernels if get_gradient(k) is None] == []


def test_small_convnet_end_to_end():
    """conv -> fused depthwise -> pools -> batch norm -> LRN -> resize -> fused mat_mul -> log_softmax."""

    def net(x, w1, w2, b2, gamma, w3):
        h = nf.conv2d(x, w1, 1, "same")
        h = nf.fused.depthwise_conv2d(x=h, filter=w2, bias=b2, strides=1, pad="same", activation="elu")
        h = nf.avg_pool(nf.max_pool(h, 2, 1, "same"), 2, 2, "valid")
        h = nf.batch_norm(h, nf.mean(h, [0, 1, 2]), nf.moments(h, [0, 1, 2]).variance, None, gamma)
        h = nf.image.resize_bilinear(nf.local_response_normalization(h, 1), [3, 3])
        logits = nf.fused.mat_mul(a=nf.reshape(h, [2, -1]), b=w3, activation="linear")
        return nf.log_softmax(logits)

    r = np.random.default_rng(26)  # max-pool windows' top two values >= 0.03 apart: no kink within a step
    arrays = [r.standard_normal(s) for s in ((2, 4, 4, 2), (2, 2, 2, 3), (2, 2, 3, 1), (3,))]
    arrays += [r.uniform(0.5, 2.0, 3), r.standard_normal((27, 4))]
    check_finite_differences(net, arrays, **KINKS)
