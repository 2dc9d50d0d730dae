"""Mappers that remember per-node work between runs (paddings, reshape targets, pooling and convolution
geometry): one node run again on other inputs must recompute, never reuse a stale answer, and bad inputs
still get the ops layer's errors."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import ndflow as nf
import ndflow.converter.mappers  # noqa: F401  (registers the mappers)
from ndflow.converter.load.graph import Node
from ndflow.converter.load.registry import get_mapper


def _attr(value):
    if isinstance(value, int):
        return {"i": str(value)}
    if isinstance(value, str):
        return {"type": value} if value.startswith("DT_") else {"s": base64.b64encode(value.encode()).decode()}
    if all(isinstance(v, str) for v in value):
        return {"list": {"s": [base64.b64encode(v.encode()).decode() for v in value]}}
    return {"list": {"i": [str(v) for v in value]}}


def _node(op: str, n_inputs: int, **attrs) -> Node:
    return Node.from_json(
        {
            "name": "n",
            "op": op,
            "input": [f"in{i}" for i in range(n_inputs)],
            "attr": {k: _attr(v) for k, v in attrs.items()},
        }
    )


def _run(node: Node, inputs: list) -> np.ndarray:
    """``node``'s mapper on these inputs (numpy arrays or tensors, the latter kept), as numpy."""
    tensors = [x if isinstance(x, nf.Tensor) else nf.tensor(x) for x in inputs]
    try:
        out = get_mapper(node.op)(node, tensors, None)
        value = out.numpy()
        out.dispose()
        return value
    finally:
        nf.dispose([t for t, x in zip(tensors, inputs, strict=True) if t is not x])


@pytest.fixture(autouse=True)
def _each_backend(backend):
    """Every test here runs on each available backend (conftest's ``backend``)."""
    return backend


def f32(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("op", ["Pad", "PadV2"])
def test_pad_follows_new_paddings_and_inputs(op):
    node = _node(op, 3 if op == "PadV2" else 2)
    value = [np.float32(2.5)] if op == "PadV2" else []
    fill = 2.5 if op == "PadV2" else 0.0
    x = f32(2, 3)
    for paddings in ([[1, 0], [0, 2]], [[0, 1], [2, 0]]):
        got = _run(node, [x, np.array(paddings, np.int32), *value])
        np.testing.assert_array_equal(got, np.pad(x, paddings, constant_values=fill))
    # the same paddings tensor, run twice (remembered), then an input of another shape
    paddings = nf.tensor(np.array([[1, 1], [0, 1]], np.int32))
    try:
        for x in (f32(2, 3), f32(2, 3, seed=1), f32(4, 1)):
            got = _run(node, [x, paddings, *value])
            np.testing.assert_array_equal(got, np.pad(x, [[1, 1], [0, 1]], constant_values=fill))
        with pytest.raises(ValueError, match="pad"):  # rank 3 against 2 pairs: the ops layer's error
            _run(node, [f32(1, 2, 3), paddings, *value])
    finally:
        paddings.dispose()
    with pytest.raises((TypeError, ValueError), match="pad"):
        _run(node, [f32(2, 3), np.array([[1, -1], [0, 0]], np.int32), *value])


def test_pad_keeps_int_dtype():
    node = _node("Pad", 2)
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = _run(node, [x, np.array([[0, 1], [1, 0]], np.int32)])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.pad(x, [[0, 1], [1, 0]]))


def test_reshape_resolves_minus_one_per_input_shape():
    node = _node("Reshape", 2)
    shape = nf.tensor(np.array([-1, 4], np.int32))
    try:
        for x in (f32(2, 4), f32(3, 2, 2), f32(8, 1)):
            np.testing.assert_array_equal(_run(node, [x, shape]), x.reshape(-1, 4))
        with pytest.raises(ValueError, match="reshape"):
            _run(node, [f32(3, 3), shape])
    finally:
        shape.dispose()
    np.testing.assert_array_equal(_run(node, [f32(2, 4), np.array([4, -1], np.int32)]), f32(2, 4).reshape(4, -1))


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
def test_pool_geometry_follows_the_input_shape(op):
    node = _node(op, 1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    for shape in ((1, 4, 4, 3), (2, 6, 2, 1), (1, 4, 4, 3)):
        x = f32(*shape)
        n, h, w, c = shape
        blocks = x.reshape(n, h // 2, 2, w // 2, 2, c)
        want = blocks.max((2, 4)) if op == "MaxPool" else blocks.mean((2, 4))
        np.testing.assert_allclose(_run(node, [x]), want, rtol=1e-6)
    # an int32 input takes the ops layer's path: max pooling keeps it, average pooling refuses it
    xi = np.arange(16, dtype=np.int32).reshape(1, 4, 4, 1)
    if op == "MaxPool":
        np.testing.assert_array_equal(_run(node, [xi]), xi.reshape(1, 2, 2, 2, 2, 1).max((2, 4)))
    else:
        with pytest.raises(TypeError, match="avg_pool"):
            _run(node, [xi])


def test_pool_same_padding_and_nchw():
    node = _node("MaxPool", 1, ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    x = f32(1, 2, 5, 5)
    want = _run(
        _node("MaxPool", 1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"), [x.transpose(0, 2, 3, 1)]
    )
    np.testing.assert_allclose(_run(node, [x]), want.transpose(0, 3, 1, 2))


def _conv_ref(x, f, stride):
    """A 'VALID' NHWC convolution in numpy."""
    fh, fw = f.shape[:2]
    oh, ow = (x.shape[1] - fh) // stride + 1, (x.shape[2] - fw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, f.shape[3]), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + fh, j * stride : j * stride + fw, :]
            out[:, i, j, :] = np.tensordot(patch, f, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_residual_conv_rechecks_the_residual_shape():
    node = _node(
        "_NdflowResidualConv2D", 4, strides=[1, 1, 1, 1], padding="VALID", fused_ops=["BiasAdd", "Relu"], num_args=1
    )
    f, b = f32(3, 3, 2, 4, seed=1), f32(4, seed=2)
    for x_shape, r_shape in (((1, 5, 5, 2), (1, 3, 3, 4)), ((2, 6, 4, 2), (2, 4, 2, 4)), ((1, 5, 5, 2), (4,))):
        x, r = f32(*x_shape), f32(*r_shape, seed=3)
        want = np.maximum(_conv_ref(x, f, 1) + b + r, 0)  # a residual of another shape broadcasts (unfused Add)
        np.testing.assert_allclose(_run(node, [x, f, b, r]), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["Conv2D", "DepthwiseConv2dNative"])
def test_conv_attrs_are_read_once_and_stay_right(op):
    node = _node(op, 2, strides=[1, 2, 2, 1], padding="VALID")
    f = f32(3, 3, 2, 1 if op == "DepthwiseConv2dNative" else 3, seed=1)
    for shape in ((1, 7, 7, 2), (2, 5, 9, 2)):
        x = f32(*shape)
        if op == "Conv2D":
            want = _conv_ref(x, f, 2)
        else:
            want = np.concatenate([_conv_ref(x[..., c : c + 1], f[:, :, c : c + 1, :], 2) for c in range(2)], axis=-1)
        np.testing.assert_allclose(_run(node, [x, f]), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["_FusedConv2D", "_NdflowResidualConv2D"])
def test_fused_conv_repeats_its_recorded_kernel_call_only_for_the_same_signature(op):
    """The second run on tensors of the same shapes repeats the first run's kernel call (recorded on the
    node); other shapes, a cast or an added batch axis go through ``nf.fused`` again, checks included."""
    residual = op == "_NdflowResidualConv2D"
    node = _node(op, 4 if residual else 3, strides=[1, 1, 1, 1], padding="VALID", fused_ops=["BiasAdd", "Relu"],
                 num_args=1)  # fmt: skip
    f, b = f32(3, 3, 2, 4, seed=1), f32(4, seed=2)
    for x_shape in ((1, 5, 5, 2), (1, 5, 5, 2), (2, 6, 4, 2), (2, 6, 4, 2), (1, 5, 5, 2)):
        x = f32(*x_shape)
        out_shape = (x_shape[0], x_shape[1] - 2, x_shape[2] - 2, 4)
        r = f32(*out_shape, seed=3)
        want = np.maximum(_conv_ref(x, f, 1) + b + (r if residual else 0), 0)
        np.testing.assert_allclose(_run(node, [x, f, b, r] if residual else [x, f, b]), want, rtol=1e-4, atol=1e-5)
        signature, kernel, positions, _ = node._memo["call"]
        assert kernel == "FusedConv2D" and signature[0] == (x_shape, "float32")
        assert positions == ((0, 1, 2, 3) if residual else (0, 1, 2))
    x3 = f32(5, 5, 2)  # rank 3: nf.fused adds a batch axis, so there is no call to repeat
    got = _run(node, [x3, f, b, f32(3, 3, 4, seed=3)] if residual else [x3, f, b])
    assert got.shape == (3, 3, 4)
    with pytest.raises(ValueError, match="fused.conv2d"):  # a wrong filter depth: the op's own error
        _run(node, [f32(1, 5, 5, 3), f, b, f32(1, 3, 3, 4)] if residual else [f32(1, 5, 5, 3), f, b])


def test_fused_conv_under_a_tape_takes_the_op_path():
    node = _node("_FusedConv2D", 3, strides=[1, 1, 1, 1], padding="VALID", fused_ops=["BiasAdd", "Relu"], num_args=1)
    f, b = nf.tensor(f32(3, 3, 2, 4, seed=1)), nf.tensor(f32(4, seed=2))
    x = nf.tensor(f32(1, 5, 5, 2))
    try:
        get_mapper("_FusedConv2D")(node, [x, f, b], None).dispose()  # records the call
        grad = nf.grad(lambda t: nf.sum(get_mapper("_FusedConv2D")(node, [t, f, b], None)))(x)
        want = nf.grad(lambda t: nf.sum(nf.fused.conv2d(x=t, filter=f, strides=1, pad="valid", bias=b,
                                                        activation="relu")))(x)  # fmt: skip
        np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=1e-6)
        nf.dispose([grad, want])
    finally:
        nf.dispose([x, f, b])
