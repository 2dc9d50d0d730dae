"""Op mappers where no TF.js reference exists: random ops, training-mode batch norm, errors that name
the node, and TF semantics that TF.js's converter lacks (checked against numpy)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import ndflow as nf
import ndflow.converter.mappers  # noqa: F401  (registers the mappers)
from ndflow.converter.load.graph import Node
from ndflow.converter.load.registry import get_mapper


def _attr(value):
    """A Python value as TF AttrValue JSON."""
    if isinstance(value, bool):
        return {"b": value}
    if isinstance(value, int):
        return {"i": str(value)}
    if isinstance(value, float):
        return {"f": value}
    if isinstance(value, str):
        return {"type": value} if value.startswith("DT_") else {"s": base64.b64encode(value.encode()).decode()}
    if all(isinstance(v, str) for v in value):
        return {"list": {"s": [base64.b64encode(v.encode()).decode() for v in value]}}
    return {"list": {"i": [str(v) for v in value]}}


def run(op: str, inputs: list, ctx=None, **attrs):
    """Run ``op``'s mapper on numpy/list inputs; returns its outputs as numpy arrays."""
    node = Node.from_json(
        {
            "name": "n",
            "op": op,
            "input": [f"in{i}" for i in range(len(inputs))],
            "attr": {k: _attr(v) for k, v in attrs.items()},
        }
    )
    tensors = [nf.tensor(np.asarray(x)) for x in inputs]
    try:
        out = get_mapper(op)(node, tensors, ctx)
        outs = list(out) if isinstance(out, list | tuple) else [out]
        values = [t.numpy() for t in outs]
        nf.dispose(outs)
        return values
    finally:
        nf.dispose(tensors)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ----------------------------------------------------------------------------- random ops


def test_random_ops_take_the_seed_as_tfjs_converter_does():
    """The node's seed goes to the op (seed2 ignored) so a graph gives TF.js's stream; RandomUniform is never
    seeded in TF.js, so it varies between runs whatever its attributes say."""
    shape = np.array([200], np.int32)
    a = run("RandomStandardNormal", [shape], dtype="DT_FLOAT", seed=7)[0]
    b = run("RandomStandardNormal", [shape], dtype="DT_FLOAT", seed=7)[0]
    c = run("RandomStandardNormal", [shape], dtype="DT_FLOAT", seed=7, seed2=1)[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    ref = nf.random_standard_normal([200], "float32", 7)
    np.testing.assert_array_equal(a, ref.numpy())
    ref.dispose()
    u1 = run("RandomUniform", [shape], dtype="DT_FLOAT", seed=5)[0]
    u2 = run("RandomUniform", [shape], dtype="DT_FLOAT", seed=5)[0]
    assert not np.array_equal(u1, u2), "TF.js's converter never seeds RandomUniform"
    i1 = run("RandomUniformInt", [shape, np.int32(0), np.int32(100)])[0]
    i2 = run("RandomUniformInt", [shape, np.int32(0), np.int32(100)])[0]
    np.testing.assert_array_equal(i1, i2)  # a missing seed is 0, a real seed for the uniform ops (as TF.js)
    assert a.dtype == np.float32 and abs(a.mean()) < 0.3 and 0.7 < a.std() < 1.3


def test_random_value_ranges():
    shape = np.array([50, 4], np.int32)
    u = run("RandomUniform", [shape], dtype="DT_FLOAT", minval=2.0, maxval=3.0, seed=1)[0]
    assert u.shape == (50, 4) and u.min() >= 2 and u.max() < 3
    t = run("TruncatedNormal", [shape], dtype="DT_FLOAT", seed=2)[0]
    assert np.abs(t).max() <= 2
    i = run("RandomUniformInt", [shape, np.int32(-3), np.int32(4)], seed=3)[0]
    # TF.js's values: its Int32Array store truncates towards zero, so -3 (almost) never comes and 0 comes twice as often
    assert i.dtype == np.int32 and i.min() >= -2 and i.max() < 4 and len(np.unique(i)) == 6
    m = run("Multinomial", [np.log(np.array([[0.1, 0.2, 0.7], [1, 0, 0]], np.float32) + 1e-9), np.int32(40)], seed=4)[0]
    assert m.shape == (2, 40) and m.min() >= 0 and m.max() <= 2 and (m[1] == 0).all()


# ----------------------------------------------------------------------------- TF semantics beyond TF.js


def test_fused_batch_norm_training_graph_uses_batch_moments():
    x = f32(2, 3, 3, 4)
    scale, offset = np.full(4, 2, np.float32), np.full(4, 0.5, np.float32)
    empty = np.zeros(0, np.float32)
    (y,) = run("FusedBatchNormV3", [x, scale, offset, empty, empty], epsilon=0.001, is_training=True)
    mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 0.001) * 2 + 0.5, atol=1e-4)


def test_one_hot_axis_and_select_rows():
    (y,) = run("OneHot", [np.array([[0, 2], [1, 1]], np.int32), np.int32(3), np.float32(1), np.float32(0)],
               T="DT_FLOAT", axis=1)  # fmt: skip
    np.testing.assert_array_equal(y, np.eye(3, dtype=np.float32)[[[0, 2], [1, 1]]].transpose(0, 2, 1))
    a, b = f32(2, 2, 3, seed=1), f32(2, 2, 3, seed=2)
    (s,) = run("Select", [np.array([False, True]), a, b])
    np.testing.assert_array_equal(s, np.where(np.array([False, True])[:, None, None], a, b))


def test_squeeze_reads_axis_or_squeeze_dims():
    x = np.zeros((1, 2, 1, 1), np.float32)
    assert run("Squeeze", [x], axis=[2])[0].shape == (1, 2, 1)
    assert run("Squeeze", [x], squeeze_dims=[0, 3])[0].shape == (2, 1)


def test_pool_and_conv_nchw_3d():
    x = f32(1, 2, 4, 4, 4)  # NCDHW
    attrs = {"ksize": [1, 1, 2, 2, 2], "strides": [1, 1, 2, 2, 2], "padding": "VALID", "data_format": "NCDHW"}
    (y,) = run("MaxPool3D", [x], **attrs)
    want = x.reshape(1, 2, 2, 2, 2, 2, 2, 2).max((3, 5, 7))
    np.testing.assert_allclose(y, want)


def test_irfft_default_length_and_rfft_without_length():
    x = f32(2, 8)
    (spec,) = run("RFFT", [x, np.array([8], np.int32)])
    assert spec.dtype == np.complex64 and spec.shape == (2, 5)
    np.testing.assert_allclose(spec, np.fft.rfft(x), atol=1e-5)
    (back,) = run("IRFFT", [spec, np.array([8], np.int32)])
    np.testing.assert_allclose(back, x, atol=1e-5)


# ----------------------------------------------------------------------------- errors name the node


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "message"),
    [
        (
            "_FusedConv2D",
            [f32(1, 3, 3, 1), f32(1, 1, 1, 1)],
            {"fused_ops": ["BiasAdd"], "num_args": 0, "strides": [1, 1, 1, 1], "padding": "SAME"},
            "needs 1 extra input",
        ),  # noqa: E501
        (
            "_FusedConv2D",
            [f32(1, 3, 3, 1), f32(1, 1, 1, 1), f32(1)],
            {"fused_ops": ["BiasAdd", "Softsign"], "num_args": 1, "strides": [1, 1, 1, 1], "padding": "SAME"},
            "unsupported fused activation",
        ),  # noqa: E501
        (
            "_FusedMatMul",
            [f32(2, 2), f32(2, 2), f32(2)],
            {"fused_ops": ["BiasAdd", "Relu", "Relu"], "num_args": 1},
            "unsupported fused_ops",
        ),  # noqa: E501
        (
            "Conv2D",
            [f32(1, 3, 3, 1), f32(1, 1, 1, 1)],
            {"strides": [1, 1, 1, 1], "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1]},
            "explicit_paddings holds 4 values",
        ),  # noqa: E501
        (
            "Conv2DBackpropInput",
            [np.array([1, 4, 4, 1], np.int32), f32(2, 2, 1, 1), f32(1, 3, 3, 1)],
            {"strides": [1, 1, 1, 1], "padding": "VALID", "dilations": [1, 2, 2, 1]},
            "dilations",
        ),  # noqa: E501
        ("Cast", [f32(2)], {}, "DstT"),
        ("Einsum", [f32(2)], {}, "equation"),
        ("LookupTableSizeV2", [np.int32(1)], {}, "ctx.resources"),
    ],
)
def test_mapper_errors_name_the_node(op, inputs, attrs, message):
    with pytest.raises(ValueError, match=message) as info:
        run(op, inputs, **attrs)
    assert "'n'" in str(info.value) and op in str(info.value)
