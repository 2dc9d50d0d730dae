"""Convolutions against real TF.js 4.22 (cpu): conv1d/2d/3d, transposes, depthwise, separable,
dilation2d, ``nf.fused.*``, and the backprop kernels against TF.js's gradients.

Fixture: ``tests/fixtures/conv.json`` (``python tests/fixtures/gen_conv.py``). Fused cases carry
TF.js's config object as their last argument (``[x, filter, bias, prelu_weights, {config}]``);
cases with ``grads`` hold TF.js's gradients for ``grad.dy``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle_cases import OP_ERRORS, _build, _check_output, _describe, _tensors_in, case_ids, load_cases, run_case

import ndflow as nf
from ndflow.core.conv_util import conv_info
from ndflow.core.engine import ENGINE

# Places where TF.js 4.22 computes garbage or refuses valid input; each is tested below against numpy.
BEYOND_TFJS = {
    "conv2d__numeric_pad_nonsquare_filter": "TF.js sizes the output width from the filter height (wrong shape)",
    "conv2d__numeric_pad_unequal_strides": "TF.js sizes the output width from the stride height (wrong shape)",
    "conv2d__fractional_pad": "TF.js indexes with a fractional pad and returns NaN; ndflow raises",
    "conv2d__fractional_stride": "TF.js indexes with a fractional stride and returns NaN; ndflow raises",
    "conv2d__negative_output_size": "TF.js returns a tensor of shape [1, -1, -1, 1]; ndflow raises",
    "conv1d__numeric_pad": "TF.js also pads the dummy height of its 4-D reshape and then fails to reshape",
    "conv1d__numeric_pad_zero": "TF.js sizes the width from the dummy filter height: wrong shape, garbage",
    "conv2d_transpose__output_shape_too_large": "x is smaller than output_shape implies: TF.js reads past it (NaN)",
    "conv2d_transpose__output_shape_too_small": "x is larger than output_shape implies: TF.js ignores the rest",
    "conv3d__int32_x_float_filter": "TF.js truncates every partial sum into the int32 output; ndflow once",
    "depthwise_conv2d__nchw": "TF.js's cpu kernel reads NCHW input as NHWC (garbage, NaN)",
    "conv2d__fused_leakyrelu_default_alpha": "TF.js leaves the conv ops' leakyreluAlpha undefined (NaN); 0.2",
    "depthwise_conv2d__fused_nchw": "TF.js checks NCHW channels on the last axis and rejects valid input",
    "mat_mul__fused_batch_broadcast_both": "TF.js flattens batch axes and cannot broadcast [2, 1] with [3]",
}
CASES = load_cases("conv", BEYOND_TFJS)
PLAIN = [c for c in CASES if not c["op"].startswith("fused.")]
FUSED = [c for c in CASES if c["op"].startswith("fused.")]
GRADS = [c for c in CASES if "grads" in c]
ALL = {c["id"]: c for c in load_cases("conv")}


@pytest.mark.parametrize("case", PLAIN, ids=case_ids(PLAIN))
def test_conv_matches_tfjs(case, backend):
    run_case(case)


def _snake(name: str) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in name)


def _fused_call(case: dict, args: list):
    """``nf.fused.<op>(**kwargs)`` from a fused case's ``[x, filter, bias, prelu, {config}]``."""
    x, f, bias, prelu, cfg = args
    kwargs = {_snake(k): v for k, v in cfg.items()}
    if case["op"] == "fused.matMul":
        kwargs.update(a=x, b=f)
        op = nf.fused.mat_mul
    else:
        kwargs.update(x=x, filter=f)
        op = nf.fused.conv2d if case["op"] == "fused.conv2d" else nf.fused.depthwise_conv2d
    return op(bias=bias, prelu_activation_weights=prelu, **kwargs)


def run_fused_case(case: dict) -> None:
    cid = case["id"]
    op_name = cid.split("__")[0]
    created: list = []
    result = None
    try:
        args = _build(case["args"], created)
        if "error" in case:
            try:
                result = _fused_call(case, args)
            except OP_ERRORS as exc:
                assert op_name in str(exc), f"{cid}: error should name {op_name!r}: {exc!r} (TF.js {case['error']!r})"
                return
            pytest.fail(f"{cid}: TF.js raises {case['error']!r}, ndflow returned {_describe(result)}")
        result = _fused_call(case, args)
        _check_output(cid, 0, result, case["outputs"][0])
    finally:
        nf.dispose(created + [t for t in _tensors_in(result) if all(t is not c for c in created)])


@pytest.mark.parametrize("case", FUSED, ids=case_ids(FUSED))
def test_fused_matches_tfjs(case, backend):
    run_fused_case(case)


# ----------------------------------------------------------------------------- backprop kernels


def _arg(args: list, i: int, default):
    return args[i] if len(args) > i and args[i] is not None else default


def _backprops(op: str, args: list, dy):
    """The backprop kernels' results for the gradients TF.js computed (w.r.t. args 0 and 1)."""
    run = ENGINE.run_kernel
    x, f = args[0], args[1]
    if op == "conv2d":
        attrs = {"strides": args[2], "pad": args[3], "data_format": _arg(args, 4, "NHWC"), "dilations": 1,
                 "dim_rounding_mode": _arg(args, 6, None)}  # fmt: skip
        return [
            run("Conv2DBackpropInput", (dy, f), {**attrs, "input_shape": x.shape}),
            run("Conv2DBackpropFilter", (x, dy), {**attrs, "filter_shape": f.shape}),
        ]
    if op == "conv2dTranspose":  # y = Conv2DBackpropInput(x, f): its gradients are Conv2D and the filter backprop
        attrs = {"strides": args[3], "pad": args[4], "data_format": "NHWC", "dim_rounding_mode": _arg(args, 5, None)}
        return [
            run("Conv2D", (dy, f), {**attrs, "dilations": 1}),
            run("Conv2DBackpropFilter", (dy, x), {**attrs, "filter_shape": f.shape}),
        ]
    if op == "conv3d":
        attrs = {"strides": args[2], "pad": args[3]}
        return [
            run("Conv3DBackpropInputV2", (dy, f), {**attrs, "input_shape": x.shape}),
            run("Conv3DBackpropFilterV2", (x, dy), {**attrs, "filter_shape": f.shape}),
        ]
    if op == "depthwiseConv2d":
        attrs = {"strides": args[2], "pad": args[3], "dilations": _arg(args, 5, 1),
                 "dim_rounding_mode": _arg(args, 6, None)}  # fmt: skip
        return [
            run("DepthwiseConv2dNativeBackpropInput", (dy, f), {**attrs, "input_shape": x.shape}),
            run("DepthwiseConv2dNativeBackpropFilter", (x, dy), {**attrs, "filter_shape": f.shape}),
        ]
    if op == "dilation2d":
        attrs = {"strides": args[2], "pad": args[3], "dilations": _arg(args, 4, 1)}
        return [run("Dilation2DBackpropInput", (x, f, dy), attrs), run("Dilation2DBackpropFilter", (x, f, dy), attrs)]
    raise AssertionError(f"no backprop mapping for {op}")


@pytest.mark.parametrize("case", GRADS, ids=case_ids(GRADS))
def test_backprop_kernels_match_tfjs_gradients(case, backend):
    created: list = []
    got: list = []
    try:
        args = _build(case["args"], created)
        (dy,) = _build([case["grad"]["dy"]], created)
        got = _backprops(case["op"], args, dy)
        for k, (g, want) in enumerate(zip(got, case["grads"], strict=True)):
            _check_output(case["id"] + " grad", k, g, want)
    finally:
        nf.dispose(created + got)


# ----------------------------------------------------------------------------- numpy references


def np_conv(x, f, strides, pads, dilations=(1, 1)):
    """Reference NHWC convolution in float64; ``pads`` ((top, bottom), (left, right)), may crop."""
    x = np.asarray(x, np.float64)
    (t, b), (l, r) = pads
    xp = np.pad(x, ((0, 0), (max(t, 0), max(b, 0)), (max(l, 0), max(r, 0)), (0, 0)))
    xp = xp[:, max(-t, 0) : xp.shape[1] - max(-b, 0), max(-l, 0) : xp.shape[2] - max(-r, 0)]
    kh, kw = f.shape[:2]
    oh = (xp.shape[1] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((x.shape[0], oh, ow, f.shape[-1]))
    for i, j in itertools.product(range(kh), range(kw)):
        win = xp[:, i * dilations[0] :: strides[0], j * dilations[1] :: strides[1]][:, :oh, :ow]
        y += win @ np.asarray(f[i, j], np.float64)
    return y


def np_depthwise(x, f, strides, pads):
    c, m = f.shape[2], f.shape[3]
    outs = [np_conv(x[..., k : k + 1], f[:, :, k : k + 1, :], strides, pads) for k in range(c)]
    return np.concatenate(outs, axis=-1).reshape(outs[0].shape[:3] + (c * m,))


def _arrays(case: dict) -> list[np.ndarray]:
    return [np.array(a["tensor"]["values"], np.float64).reshape(a["tensor"]["shape"]) for a in case["args"][:2]]


def test_beyond_tfjs_numeric_pad_uses_each_dimension(backend):
    for cid, strides in (
        ("conv2d__numeric_pad_nonsquare_filter", (1, 1)),
        ("conv2d__numeric_pad_unequal_strides", (2, 1)),
    ):
        x, f = _arrays(ALL[cid])
        y = nf.conv2d(x.astype(np.float32), f.astype(np.float32), list(strides), 1)
        want = np_conv(x, f, strides, ((1, 1), (1, 1)))
        assert y.shape == want.shape
        np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
        y.dispose()


def test_beyond_tfjs_conv1d_numeric_pad_pads_the_width(backend):
    for cid, p in (("conv1d__numeric_pad", 1), ("conv1d__numeric_pad_zero", 0)):
        x, f = _arrays(ALL[cid])
        y = nf.conv1d(x.astype(np.float32), f.astype(np.float32), 1, p)
        want = np_conv(x[:, None], f[None], (1, 1), ((0, 0), (p, p)))[:, 0]
        assert y.shape == want.shape == (1, 5 + 2 * p - 2, 1)
        np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
        y.dispose()


@pytest.mark.parametrize(
    "cid, match",
    [
        ("conv2d__fractional_pad", "pad"),
        ("conv2d__fractional_stride", "strides"),
        ("conv2d__negative_output_size", "negative"),
        ("conv2d_transpose__output_shape_too_large", "inconsistent"),
        ("conv2d_transpose__output_shape_too_small", "inconsistent"),
    ],
)
def test_beyond_tfjs_garbage_becomes_an_error(backend, cid, match):
    case = ALL[cid]
    created: list = []
    try:
        args = _build(case["args"], created)
        op = getattr(nf, cid.split("__")[0])
        with pytest.raises(ValueError, match=f"{cid.split('__')[0]}: .*{match}"):
            op(*args)
    finally:
        nf.dispose(created)


def test_beyond_tfjs_conv3d_int32_truncates_once(backend):
    x = nf.tensor([1, 1], [1, 1, 1, 2, 1], "int32")
    f = nf.tensor([0.5, 0.75], [1, 1, 2, 1, 1])
    y = nf.conv3d(x, f, 1, "valid")
    assert y.dtype == "int32" and y.numpy().ravel().tolist() == [1]  # trunc(0.5 + 0.75); TF.js: 0
    nf.dispose([x, f, y])


def test_beyond_tfjs_depthwise_nchw(backend):
    x, f = _arrays(ALL["depthwise_conv2d__nchw"])
    y = nf.depthwise_conv2d(x.astype(np.float32), f.astype(np.float32), 1, "valid", "NCHW")
    want = np_depthwise(np.transpose(x, (0, 2, 3, 1)), f, (1, 1), ((0, 0), (0, 0))).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
    y.dispose()


def test_beyond_tfjs_fused_leakyrelu_default_alpha(backend):
    x, f = _arrays(ALL["conv2d__fused_leakyrelu_default_alpha"])
    y = nf.fused.conv2d(
        x=x.astype(np.float32), filter=f.astype(np.float32), strides=1, pad="valid", activation="leakyrelu"
    )
    z = np_conv(x, f, (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_allclose(y.numpy(), np.where(z < 0, 0.2 * z, z), atol=1e-5)
    y.dispose()


def test_beyond_tfjs_fused_depthwise_nchw(backend):
    case = ALL["depthwise_conv2d__fused_nchw"]
    x, f = _arrays(case)
    bias = np.array(case["args"][2]["tensor"]["values"], np.float32)
    y = nf.fused.depthwise_conv2d(x=x.astype(np.float32), filter=f.astype(np.float32), strides=1, pad="valid",
                                  data_format="NCHW", bias=bias, activation="relu")  # fmt: skip
    z = np_depthwise(np.transpose(x, (0, 2, 3, 1)), f, (1, 1), ((0, 0), (0, 0))) + bias
    np.testing.assert_allclose(y.numpy(), np.maximum(z, 0).transpose(0, 3, 1, 2), atol=1e-5)
    y.dispose()


def test_beyond_tfjs_fused_mat_mul_broadcasts_batch_axes(backend):
    a, b = _arrays(ALL["mat_mul__fused_batch_broadcast_both"])
    y = nf.fused.mat_mul(a=a.astype(np.float32), b=b.astype(np.float32))
    assert y.shape == (2, 3, 2, 2)
    np.testing.assert_allclose(y.numpy(), np.matmul(a, b), atol=1e-5)
    y.dispose()


# ----------------------------------------------------------------------------- beyond the fixture

RNG = np.random.default_rng(11)


def _t(shape, dtype="float32"):
    return nf.tensor(RNG.uniform(-1, 1, shape).astype(np.float32), list(shape), dtype)


def _dot(a, b) -> float:
    return float(np.sum(np.asarray(a.numpy(), np.float64) * np.asarray(b.numpy(), np.float64)))


ADJOINT_2D = [  # x shape (as data_format), filter, strides, pad, data_format, dilations, rounding
    ((2, 7, 6, 3), (3, 2, 3, 4), (1, 1), "same", "NHWC", (2, 3), None),
    ((1, 8, 9, 2), (3, 3, 2, 2), (2, 3), "valid", "NHWC", (1, 1), None),
    ((1, 2, 7, 7), (3, 3, 2, 3), (1, 1), "same", "NCHW", (2, 2), None),
    ((1, 6, 6, 1), (2, 2, 1, 2), (3, 3), 1, "NHWC", (1, 1), "ceil"),
    ((1, 6, 7, 2), (3, 3, 2, 1), (1, 1), -1, "NHWC", (1, 1), None),
    ((2, 5, 5, 2), (1, 1, 2, 3), (1, 1), "valid", "NHWC", (1, 1), None),
    ((1, 3, 6, 5), (2, 3, 3, 2), (2, 1), ((0, 0), (0, 0), (2, 1), (0, 3)), "NCHW", (1, 1), "floor"),
]


@pytest.mark.parametrize("xs, fs, strides, pad, fmt, dil, mode", ADJOINT_2D)
def test_conv2d_backprops_are_adjoint(backend, xs, fs, strides, pad, fmt, dil, mode):
    """<conv(x, f), dy> = <x, backprop_input(dy)> = <f, backprop_filter(x, dy)>, dilations included."""
    attrs = {"strides": strides, "pad": pad, "data_format": fmt, "dilations": dil, "dim_rounding_mode": mode}
    x, f = _t(xs), _t(fs)
    y = ENGINE.run_kernel("Conv2D", (x, f), attrs)
    dy = _t(y.shape)
    dx = ENGINE.run_kernel("Conv2DBackpropInput", (dy, f), {**attrs, "input_shape": xs})
    df = ENGINE.run_kernel("Conv2DBackpropFilter", (x, dy), {**attrs, "filter_shape": fs})
    assert dx.shape == xs and df.shape == fs
    assert _dot(y, dy) == pytest.approx(_dot(x, dx), rel=1e-4, abs=1e-4)
    assert _dot(y, dy) == pytest.approx(_dot(f, df), rel=1e-4, abs=1e-4)
    nf.dispose([x, f, y, dy, dx, df])


ADJOINT_DW = [
    ((1, 6, 6, 2), (3, 3, 2, 2), (1, 1), "same", "NHWC", (2, 2), None),
    ((2, 7, 5, 3), (2, 3, 3, 1), (2, 1), "valid", "NHWC", (1, 1), None),
    ((1, 2, 5, 6), (3, 2, 2, 3), (1, 2), 1, "NCHW", (1, 1), "round"),
]


@pytest.mark.parametrize("xs, fs, strides, pad, fmt, dil, mode", ADJOINT_DW)
def test_depthwise_backprops_are_adjoint(backend, xs, fs, strides, pad, fmt, dil, mode):
    attrs = {"strides": strides, "pad": pad, "data_format": fmt, "dilations": dil, "dim_rounding_mode": mode}
    x, f = _t(xs), _t(fs)
    y = ENGINE.run_kernel("DepthwiseConv2dNative", (x, f), attrs)
    dy = _t(y.shape)
    dx = ENGINE.run_kernel("DepthwiseConv2dNativeBackpropInput", (dy, f), {**attrs, "input_shape": xs})
    df = ENGINE.run_kernel("DepthwiseConv2dNativeBackpropFilter", (x, dy), {**attrs, "filter_shape": fs})
    assert _dot(y, dy) == pytest.approx(_dot(x, dx), rel=1e-4, abs=1e-4)
    assert _dot(y, dy) == pytest.approx(_dot(f, df), rel=1e-4, abs=1e-4)
    nf.dispose([x, f, y, dy, dx, df])


@pytest.mark.parametrize(
    "xs, fs, strides, pad, dil",
    [
        ((1, 5, 6, 4, 2), (2, 3, 2, 2, 3), (1, 2, 1), "same", (1, 1, 1)),
        ((2, 5, 5, 5, 1), (2, 2, 2, 1, 2), (1, 1, 1), 1, (2, 1, 2)),
        ((1, 5, 1, 1, 1), (1, 1, 1, 1, 1), (3, 1, 1), "same", (1, 1, 1)),
    ],  # fmt: skip
)
def test_conv3d_backprops_are_adjoint(backend, xs, fs, strides, pad, dil):
    attrs = {"strides": strides, "pad": pad, "dilations": dil}
    x, f = _t(xs), _t(fs)
    y = ENGINE.run_kernel("Conv3D", (x, f), attrs)
    dy = _t(y.shape)
    dx = ENGINE.run_kernel("Conv3DBackpropInputV2", (dy, f), {**attrs, "input_shape": xs})
    df = ENGINE.run_kernel("Conv3DBackpropFilterV2", (x, dy), {**attrs, "filter_shape": fs})
    assert _dot(y, dy) == pytest.approx(_dot(x, dx), rel=1e-4, abs=1e-4)
    assert _dot(y, dy) == pytest.approx(_dot(f, df), rel=1e-4, abs=1e-4)
    nf.dispose([x, f, y, dy, dx, df])


def _np_dilation_grads(x, f, dy, strides, pads, dil):
    """Loop reference of TF.js's Dilation2D backprops (first maximum wins)."""
    dx, df = np.zeros_like(x), np.zeros_like(f)
    batch, out_h, out_w, depth = dy.shape
    for b, oh, ow, c in itertools.product(range(batch), range(out_h), range(out_w), range(depth)):
        best, where = -np.inf, None
        for i, j in itertools.product(range(f.shape[0]), range(f.shape[1])):
            h, w = oh * strides[0] - pads[0] + i * dil[0], ow * strides[1] - pads[1] + j * dil[1]
            if 0 <= h < x.shape[1] and 0 <= w < x.shape[2] and x[b, h, w, c] + f[i, j, c] > best:
                best, where = x[b, h, w, c] + f[i, j, c], (h, w, i, j)
        h, w, i, j = where
        dx[b, h, w, c] += dy[b, oh, ow, c]
        df[i, j, c] += dy[b, oh, ow, c]
    return dx, df


def test_dilation2d_backprops_with_strides_and_dilations(backend):
    x, f = _t((2, 7, 6, 2)), _t((2, 3, 2))
    attrs = {"strides": (1, 1), "pad": "same", "dilations": (2, 2)}
    y = ENGINE.run_kernel("Dilation2D", (x, f), attrs)
    dy = _t(y.shape)
    dx = ENGINE.run_kernel("Dilation2DBackpropInput", (x, f, dy), attrs)
    df = ENGINE.run_kernel("Dilation2DBackpropFilter", (x, f, dy), attrs)
    info = conv_info(x.shape, (2, 3, 2, 2), (1, 1), (2, 2), "same")
    want_dx, want_df = _np_dilation_grads(x.numpy(), f.numpy(), dy.numpy(), (1, 1), [p[0] for p in info.pads], (2, 2))
    np.testing.assert_allclose(dx.numpy(), want_dx, atol=1e-6)
    np.testing.assert_allclose(df.numpy(), want_df, atol=1e-6)
    nf.dispose([x, f, y, dy, dx, df])


@pytest.mark.parametrize(
    "call",
    [
        lambda x: nf.depthwise_conv2d(x, np.ones((2, 2, 1, 1), np.float32), 0, "valid"),
        lambda x: nf.dilation2d(x, np.ones((2, 2, 1), np.float32), 0, "valid"),
        lambda x: nf.conv2d_transpose(x, np.ones((2, 2, 1, 1), np.float32), [1, 5, 5, 1], 0, "valid"),
        lambda x: nf.conv2d(x, np.ones((2, 2, 1, 1), np.float32), [1, 1, 1], "valid"),
        lambda x: nf.conv2d(x, np.ones((2, 2, 1, 1), np.float32), 1, [[0, 0], [1, 1], [1, 1]]),
    ],
    ids=["depthwise_stride0", "dilation_stride0", "transpose_stride0", "three_strides", "three_pad_pairs"],
)
def test_bad_strides_and_pads_raise(backend, call):
    """TF.js loops forever on a zero stride of these ops; ndflow raises."""
    x = nf.zeros([1, 4, 4, 1])
    with pytest.raises(ValueError, match="strides|pad"):
        call(x)
    x.dispose()


def test_chained_methods(backend):
    x = _t((1, 4, 4, 2))
    f, dw, pw, k = _t((2, 2, 2, 3)), _t((2, 2, 2, 1)), _t((1, 1, 2, 2)), _t((2, 2, 2))
    results = [
        x.conv2d(f, 1, "same"),
        x.depthwise_conv2d(dw, 1, "valid"),
        x.separable_conv2d(dw, pw, 1, "same"),
        x.dilation2d(k, 1, "valid"),
    ]
    assert [r.shape for r in results] == [(1, 4, 4, 3), (1, 3, 3, 2), (1, 4, 4, 2), (1, 3, 3, 2)]
    nf.dispose([x, f, dw, pw, k, *results])


def test_fused_matches_unfused_composition(backend):
    """Bias and activation applied in place equal conv2d + bias + activation done one by one."""
    x, f, b = _t((2, 9, 9, 4)), _t((3, 3, 4, 8)), _t((8,))
    conv = nf.conv2d(x, f, 2, "same")
    z = conv.numpy() + b.numpy()
    conv.dispose()
    cases = {"relu": np.maximum(z, 0), "relu6": np.clip(z, 0, 6), "elu": np.where(z < 0, np.expm1(z), z),
             "sigmoid": 1 / (1 + np.exp(-z)), "leakyrelu": np.where(z < 0, 0.3 * z, z)}  # fmt: skip
    for activation, want in cases.items():
        y = nf.fused.conv2d(x=x, filter=f, strides=2, pad="same", bias=b, activation=activation, leakyrelu_alpha=0.3)
        np.testing.assert_allclose(y.numpy(), want, atol=1e-5, err_msg=activation)
        y.dispose()
    nf.dispose([x, f, b])


def test_fused_ops_take_keywords_only():
    with pytest.raises(TypeError):
        nf.fused.conv2d(np.zeros((1, 2, 2, 1)), np.zeros((1, 1, 1, 1)), 1, "valid")  # type: ignore[misc]
