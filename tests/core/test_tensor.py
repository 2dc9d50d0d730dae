"""Tensors: creation, attributes, reads, dtype inference, errors, Python protocol, variables.

Expected values come from numpy or are written by hand; never from ndflow itself.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

import ndflow as nf


def snapshot(t: nf.Tensor) -> tuple[tuple[int, ...], str, np.ndarray]:
    """(shape, dtype, values) of a tensor, as plain Python/numpy objects."""
    return t.shape, t.dtype, t.numpy()


def made(fn) -> tuple[tuple[int, ...], str, np.ndarray]:
    """Run ``fn`` inside tidy and return the snapshot of the tensor it makes (nothing survives)."""
    return nf.tidy(lambda: snapshot(fn()))


# ---------------------------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------------------------
F32 = np.float32

CREATION_CASES = [
    ("tensor_nested", lambda: nf.tensor([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], F32), "float32"),
    ("tensor_flat_shape", lambda: nf.tensor([1, 2, 3, 4, 5, 6], [2, 3]), np.arange(1, 7, dtype=F32).reshape(2, 3),
     "float32"),
    ("tensor_scalar_value", lambda: nf.tensor(5), np.array(5, F32), "float32"),
    ("tensor_scalar_fills_shape", lambda: nf.tensor(3, [2, 2]), np.full((2, 2), 3, F32), "float32"),
    ("tensor_empty", lambda: nf.tensor([]), np.zeros((0,), F32), "float32"),
    ("tensor_empty_rows", lambda: nf.tensor([[], []]), np.zeros((2, 0), F32), "float32"),
    ("tensor_numpy", lambda: nf.tensor(np.arange(6, dtype=F32).reshape(3, 2)), np.arange(6, dtype=F32).reshape(3, 2),
     "float32"),
    ("scalar", lambda: nf.scalar(3.5), np.array(3.5, F32), "float32"),
    ("scalar_int32", lambda: nf.scalar(3, "int32"), np.array(3, np.int32), "int32"),
    ("scalar_bool", lambda: nf.scalar(True), np.array(True), "bool"),
    ("tensor1d", lambda: nf.tensor1d([1, 2, 3]), np.array([1, 2, 3], F32), "float32"),
    ("tensor1d_int32", lambda: nf.tensor1d([1, 2, 3], "int32"), np.array([1, 2, 3], np.int32), "int32"),
    ("tensor2d", lambda: nf.tensor2d([[1, 2, 3]]), np.array([[1, 2, 3]], F32), "float32"),
    ("tensor2d_flat", lambda: nf.tensor2d([1, 2, 3, 4], [2, 2]), np.array([[1, 2], [3, 4]], F32), "float32"),
    ("tensor3d", lambda: nf.tensor3d([[[1], [2]], [[3], [4]]]), np.arange(1, 5, dtype=F32).reshape(2, 2, 1),
     "float32"),
    ("tensor4d", lambda: nf.tensor4d(list(range(16)), [2, 2, 2, 2]), np.arange(16, dtype=F32).reshape(2, 2, 2, 2),
     "float32"),
    ("tensor5d", lambda: nf.tensor5d([[[[[7]]]]]), np.full((1, 1, 1, 1, 1), 7, F32), "float32"),
    ("tensor6d", lambda: nf.tensor6d(list(range(64)), [2] * 6), np.arange(64, dtype=F32).reshape((2,) * 6),
     "float32"),
    ("zeros", lambda: nf.zeros([2, 3]), np.zeros((2, 3), F32), "float32"),
    ("zeros_int32", lambda: nf.zeros([3], "int32"), np.zeros(3, np.int32), "int32"),
    ("zeros_bool", lambda: nf.zeros([2], "bool"), np.zeros(2, bool), "bool"),
    ("ones", lambda: nf.ones([3, 1]), np.ones((3, 1), F32), "float32"),
    ("ones_int32", lambda: nf.ones([2], "int32"), np.ones(2, np.int32), "int32"),
    ("ones_complex", lambda: nf.ones([2], "complex64"), np.ones(2, np.complex64), "complex64"),
    ("fill", lambda: nf.fill([2, 3], 7), np.full((2, 3), 7, F32), "float32"),
    ("fill_int32", lambda: nf.fill([2], 3, "int32"), np.array([3, 3], np.int32), "int32"),
    ("fill_bool", lambda: nf.fill([2], True), np.array([True, True]), "bool"),
    ("zeros_like", lambda: nf.tidy(lambda: nf.zeros_like(nf.tensor([[1, 2]], dtype="int32"))),
     np.zeros((1, 2), np.int32), "int32"),
    ("ones_like", lambda: nf.tidy(lambda: nf.ones_like(nf.tensor([[1.5], [2.5]])))
     , np.ones((2, 1), F32), "float32"),
    ("ones_like_bool", lambda: nf.tidy(lambda: nf.ones_like(nf.tensor([False, False])))
     , np.array([True, True]), "bool"),
    ("linspace", lambda: nf.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=F32), "float32"),
    ("linspace_negative", lambda: nf.linspace(-3, 3, 7), np.linspace(-3, 3, 7, dtype=F32), "float32"),
    ("linspace_one", lambda: nf.linspace(2, 9, 1), np.array([2], F32), "float32"),
    ("range_stop", lambda: nf.range(5), np.arange(5, dtype=F32), "float32"),
    ("range_step", lambda: nf.range(0, 10, 3), np.arange(0, 10, 3, dtype=F32), "float32"),
    ("range_negative_step", lambda: nf.range(5, 0, -2), np.arange(5, 0, -2, dtype=F32), "float32"),
    ("range_fraction", lambda: nf.range(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=F32), "float32"),
    ("range_empty", lambda: nf.range(3, 3), np.zeros(0, F32), "float32"),
    ("range_int32", lambda: nf.range(0, 5, 1, "int32"), np.arange(5, dtype=np.int32), "int32"),
    ("eye", lambda: nf.eye(3), np.eye(3, dtype=F32), "float32"),
    ("eye_rect", lambda: nf.eye(2, 3), np.eye(2, 3, dtype=F32), "float32"),
    ("eye_batch", lambda: nf.eye(2, batch_shape=[3]), np.broadcast_to(np.eye(2, dtype=F32), (3, 2, 2)), "float32"),
    ("eye_int32", lambda: nf.eye(2, dtype="int32"), np.eye(2, dtype=np.int32), "int32"),
    ("clone", lambda: nf.tidy(lambda: nf.clone(nf.tensor([1, 2, 3], dtype="int32"))), np.array([1, 2, 3], np.int32),
     "int32"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "expected", "dtype"), [c[1:] for c in CREATION_CASES], ids=[c[0] for c in CREATION_CASES]
)
def test_creation(make, expected, dtype):
    shape, got_dtype, values = made(make)
    assert got_dtype == dtype
    assert shape == expected.shape
    assert values.dtype == expected.dtype
    np.testing.assert_array_equal(values, expected)


def test_string_creation():
    shape, dtype, values = made(lambda: nf.tensor([["a", "bc"], ["é", ""]]))
    assert (shape, dtype) == ((2, 2), "string")
    assert values.tolist() == [["a", "bc"], ["é", ""]]
    assert made(lambda: nf.fill([2], "x"))[2].tolist() == ["x", "x"]
    assert made(lambda: nf.zeros([2], "string"))[2].tolist() == ["", ""]


def test_tensor_copies_numpy_input():
    source = np.array([1.0, 2.0, 3.0], np.float32)
    t = nf.tensor(source)
    source[0] = 100.0
    try:
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    finally:
        t.dispose()


def test_variable_creation():
    v = nf.variable([1.0, 2.0])
    w = nf.variable([[1, 2]], dtype="int32")
    try:
        assert isinstance(v, nf.Variable) and isinstance(v, nf.Tensor)
        assert (v.shape, v.dtype) == ((2,), "float32")
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
        assert (w.shape, w.dtype) == ((1, 2), "int32")
        np.testing.assert_array_equal(w.numpy(), np.array([[1, 2]], np.int32))
    finally:
        nf.dispose([v, w])


# ---------------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------------
def test_attributes():
    t = nf.zeros([2, 3, 4])
    s = nf.scalar(1)
    try:
        assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
        assert isinstance(t.dtype, str) and t.dtype == "float32"
        assert t.rank == 3
        assert t.size == 24
        assert s.shape == () and s.rank == 0 and s.size == 1
        assert isinstance(t.id, int)
        assert not t.is_disposed
    finally:
        nf.dispose([t, s])
    assert t.is_disposed and s.is_disposed


def test_ids_are_unique():
    def make():
        x = nf.tensor([1.0, 2.0])
        return [x, nf.reshape(x, [2, 1]), nf.clone(x), x + 1, nf.zeros([1]), nf.variable(x)]

    ts = nf.tidy(make)
    try:
        ids = [t.id for t in ts]
        assert len(set(ids)) == len(ids)
    finally:
        nf.dispose(ts)


# ---------------------------------------------------------------------------------------------
# reads
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def t23():
    t = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    yield t
    t.dispose()


def test_data_async_is_flat(t23):
    values = asyncio.run(t23.data())
    assert isinstance(values, np.ndarray)
    assert values.shape == (6,) and values.dtype == np.float32
    np.testing.assert_array_equal(values, [1, 2, 3, 4, 5, 6])


def test_data_sync_is_flat_and_read_only(t23):
    values = t23.data_sync()
    assert values.shape == (6,) and values.dtype == np.float32
    np.testing.assert_array_equal(values, [1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError):
        values[0] = 10.0
    np.testing.assert_array_equal(t23.data_sync(), [1, 2, 3, 4, 5, 6])


def test_array_and_array_sync_are_nested_lists(t23):
    expected = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert t23.array_sync() == expected
    assert asyncio.run(t23.array()) == expected
    assert isinstance(t23.array_sync()[0][0], float)


def test_array_sync_of_scalars_and_dtypes():
    ts = [nf.scalar(2.5), nf.scalar(3, "int32"), nf.tensor([True, False]), nf.tensor(["a", "b"])]
    try:
        assert ts[0].array_sync() == 2.5
        assert ts[1].array_sync() == 3 and isinstance(ts[1].array_sync(), int)
        assert ts[2].array_sync() == [True, False]
        assert ts[3].array_sync() == ["a", "b"]
    finally:
        nf.dispose(ts)


def test_numpy_is_a_writable_copy(t23):
    copy = t23.numpy()
    assert copy.shape == (2, 3) and copy.dtype == np.float32
    assert copy.flags.writeable
    copy[0, 0] = 100.0
    np.testing.assert_array_equal(t23.numpy(), [[1, 2, 3], [4, 5, 6]])


def test_np_asarray(t23):
    a = np.asarray(t23)
    assert a.shape == (2, 3) and a.dtype == np.float32
    np.testing.assert_array_equal(a, [[1, 2, 3], [4, 5, 6]])
    b = np.asarray(t23, dtype=np.float64)
    assert b.dtype == np.float64
    np.testing.assert_array_equal(b, [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(np.array(t23) * 2, [[2, 4, 6], [8, 10, 12]])


def test_buffer_sync_get_set_to_tensor(t23):
    buf = t23.buffer_sync()
    assert isinstance(buf, nf.TensorBuffer)
    assert buf.shape == (2, 3) and buf.dtype == "float32"
    assert buf.get(1, 2) == 6.0
    buf.set(-1.0, 0, 1)
    assert buf.get(0, 1) == -1.0
    out = buf.to_tensor()
    try:
        assert out.array_sync() == [[1.0, -1.0, 3.0], [4.0, 5.0, 6.0]]
        # the buffer is a copy: the source tensor is unchanged
        assert t23.array_sync() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    finally:
        out.dispose()


def test_buffer_async(t23):
    buf = asyncio.run(t23.buffer())
    assert isinstance(buf, nf.TensorBuffer)
    assert buf.get(1, 0) == 4.0


def test_nf_buffer():
    buf = nf.buffer([2, 2], "int32")
    assert buf.get(1, 1) == 0
    buf.set(3, 1, 1)
    buf.set(7, 0, 0)
    filled = nf.buffer([3], "float32", [1, 2, 3])
    a, b = buf.to_tensor(), filled.to_tensor()
    try:
        assert a.dtype == "int32" and a.array_sync() == [[7, 0], [0, 3]]
        assert b.dtype == "float32" and b.array_sync() == [1.0, 2.0, 3.0]
    finally:
        nf.dispose([a, b])


def test_buffer_errors():
    buf = nf.buffer([2, 3])
    with pytest.raises(IndexError):
        buf.get(2, 0)
    with pytest.raises(IndexError):
        buf.set(1.0, 0, 3)
    with pytest.raises(ValueError, match="rank"):
        buf.get(0)
    with pytest.raises(ValueError):
        nf.buffer([2, 2], "float32", [1, 2, 3])
    with pytest.raises(TypeError):
        nf.buffer([2], "float64")


def test_buffer_index_helpers():
    buf = nf.buffer([2, 3], "float32", np.arange(6))
    assert (buf.rank, buf.size) == (2, 6)
    assert tuple(buf.strides) == (3,)
    assert buf.loc_to_index([1, 2]) == 5
    assert buf.index_to_loc(4) == [1, 1]
    assert buf.get(*buf.index_to_loc(4)) == 4.0


# ---------------------------------------------------------------------------------------------
# dtype inference (TF.js's rules) and the dtype argument
# ---------------------------------------------------------------------------------------------
INFERENCE_CASES = [
    ("py_float", [1.5, 2.0], "float32"),
    ("py_int", [1, 2], "float32"),
    ("py_int_scalar", 3, "float32"),
    ("py_bool", [True, False], "bool"),
    ("py_bool_scalar", True, "bool"),
    ("py_str", ["a", "b"], "string"),
    ("py_str_scalar", "a", "string"),
    ("py_bytes", [b"a"], "string"),
    ("py_complex", [1 + 2j], "complex64"),
    ("np_float64", np.array([1.5, 2.5]), "float32"),
    ("np_float32", np.array([1.5], np.float32), "float32"),
    ("np_float16", np.array([1.5], np.float16), "float32"),
    ("np_int64", np.array([1, 2], np.int64), "int32"),
    ("np_int32", np.array([1, 2], np.int32), "int32"),
    ("np_uint8", np.array([1, 200], np.uint8), "int32"),
    ("np_int8", np.array([-1], np.int8), "int32"),
    ("np_bool", np.array([True]), "bool"),
    ("np_complex128", np.array([1 + 2j]), "complex64"),
    ("np_complex64", np.array([1 + 2j], np.complex64), "complex64"),
    ("np_str", np.array(["x", "yz"]), "string"),
    ("np_float64_scalar", np.float64(2.5), "float32"),
    ("np_int64_scalar", np.int64(2), "int32"),
    ("list_of_np_int64", [np.int64(1), np.int64(2)], "int32"),
]


@pytest.mark.parametrize(("values", "dtype"), [c[1:] for c in INFERENCE_CASES], ids=[c[0] for c in INFERENCE_CASES])
def test_dtype_inference(values, dtype):
    shape, got, data = made(lambda: nf.tensor(values))
    assert got == dtype
    assert shape == np.shape(values)
    if dtype != "string":
        np.testing.assert_array_equal(data, np.asarray(values))


def test_uint8_values_survive_as_int32():
    assert made(lambda: nf.tensor(np.array([0, 200, 255], np.uint8)))[2].tolist() == [0, 200, 255]


DTYPE_ARG_CASES = [
    ("float_to_int32_truncates", [1.7, -1.7, 2.0], "int32", np.array([1, -1, 2], np.int32)),
    ("numbers_to_bool", [0, 2, -0.5], "bool", np.array([False, True, True])),
    ("ints_to_complex", [1, 2], "complex64", np.array([1, 2], np.complex64)),
    ("bools_to_float", [True, False], "float32", np.array([1, 0], np.float32)),
    ("np_float64_to_int32", np.array([3.9, -3.9]), "int32", np.array([3, -3], np.int32)),
    ("int_to_float", [1, 2], "float32", np.array([1, 2], np.float32)),
]


@pytest.mark.parametrize(
    ("values", "dtype", "expected"), [c[1:] for c in DTYPE_ARG_CASES], ids=[c[0] for c in DTYPE_ARG_CASES]
)
def test_dtype_argument(values, dtype, expected):
    _, got, data = made(lambda: nf.tensor(values, dtype=dtype))
    assert got == dtype
    assert data.dtype == expected.dtype
    np.testing.assert_array_equal(data, expected)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def test_values_shape_mismatch():
    with pytest.raises(ValueError, match=r"\[2, 2\].*4.*3"):
        nf.tensor([1, 2, 3], [2, 2])
    with pytest.raises(ValueError, match="shape"):
        nf.tensor([[1, 2], [3, 4]], [4, 1])
    with pytest.raises(ValueError):
        nf.tensor2d([1, 2, 3], [2, 2])


@pytest.mark.parametrize(
    "values",
    [[[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1], [2]], [[3], [4, 5]]], [[1, 2], []]],
    ids=["short_row", "scalar_row", "list_after_scalar", "deep", "empty_row"],
)
def test_ragged_lists_raise(values):
    with pytest.raises(ValueError, match="ragged"):
        nf.tensor(values)


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint8", "float", "Float32"])
def test_unknown_dtype_raises(dtype):
    with pytest.raises(TypeError, match="dtype"):
        nf.tensor([1, 2], dtype=dtype)


def test_unknown_dtype_in_creation_ops():
    with pytest.raises(TypeError, match="float64"):
        nf.zeros([2], "float64")
    with pytest.raises(TypeError, match="float64"):
        nf.ones([2], "float64")
    with pytest.raises(TypeError, match="float64"):
        nf.fill([2], 1, "float64")


def test_rank_checks_of_ranked_creators():
    with pytest.raises(ValueError, match="rank 2"):
        nf.tensor2d([1, 2])
    with pytest.raises(ValueError):
        nf.tensor1d(5)
    with pytest.raises(ValueError):
        nf.tensor3d([[1, 2]])
    with pytest.raises(ValueError):
        nf.tensor2d([1, 2, 3, 4], [4])
    with pytest.raises(ValueError):
        nf.scalar([1, 2])


def test_bad_creation_arguments():
    with pytest.raises(ValueError):
        nf.zeros([-1, 2])
    with pytest.raises(ValueError):
        nf.range(0, 5, 0)
    with pytest.raises(ValueError):
        nf.linspace(0, 1, 0)
    with pytest.raises(TypeError):
        nf.tensor([1, "a"])
    with pytest.raises(TypeError):
        nf.tensor({"a": 1})


# ---------------------------------------------------------------------------------------------
# len() and iteration
# ---------------------------------------------------------------------------------------------
def test_len(t23):
    assert len(t23) == 2
    s = nf.scalar(1.0)
    try:
        with pytest.raises(TypeError):
            len(s)
    finally:
        s.dispose()


def test_iteration_over_first_axis(t23):
    rows = list(t23)
    try:
        assert len(rows) == 2
        assert all(isinstance(r, nf.Tensor) and r.shape == (3,) for r in rows)
        assert [r.array_sync() for r in rows] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    finally:
        nf.dispose(rows)


def test_iterating_a_scalar_raises():
    s = nf.scalar(1.0)
    try:
        with pytest.raises(TypeError):
            list(s)
    finally:
        s.dispose()


def test_iteration_of_vector_gives_scalars():
    values = nf.tidy(lambda: [x.array_sync() for x in nf.tensor([3, 1, 2], dtype="int32")])
    assert values == [3, 1, 2]


# ---------------------------------------------------------------------------------------------
# variables
# ---------------------------------------------------------------------------------------------
def test_variable_assign():
    v = nf.variable([1.0, 2.0])
    try:
        returned = nf.tidy(lambda: v.assign(nf.tensor([5.0, 6.0])))
        assert returned is v
        np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
        assert v.shape == (2,) and v.dtype == "float32"
    finally:
        v.dispose()


def test_variable_assign_mismatch_errors():
    v = nf.variable([1.0, 2.0], name="assign_errors")
    bad = [nf.tensor([1, 2], dtype="int32"), nf.tensor([1.0, 2.0, 3.0]), nf.tensor([[1.0, 2.0]])]
    try:
        with pytest.raises(TypeError, match="int32"):
            v.assign(bad[0])
        with pytest.raises(ValueError, match="shape"):
            v.assign(bad[1])
        with pytest.raises(ValueError, match="shape"):
            v.assign(bad[2])
        with pytest.raises(TypeError):
            v.assign([1.0, 2.0])
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    finally:
        nf.dispose([v, bad])


def test_variable_names_unique_and_duplicate_error():
    a = nf.variable(1.0)
    b = nf.variable(2.0)
    named = nf.variable(3.0, name="my_weight")
    try:
        assert isinstance(a.name, str) and a.name != b.name
        assert named.name == "my_weight"
        init = nf.scalar(4.0)
        try:
            with pytest.raises(ValueError, match="my_weight"):
                nf.variable(init, name="my_weight")
        finally:
            init.dispose()
    finally:
        nf.dispose([a, b, named])
    # a disposed variable frees its name
    again = nf.variable(5.0, name="my_weight")
    try:
        assert again.name == "my_weight" and again.array_sync() == 5.0
    finally:
        again.dispose()


def test_variable_trainable():
    v = nf.variable(1.0)
    w = nf.variable(1.0, trainable=False)
    try:
        assert v.trainable is True
        assert w.trainable is False
        w.trainable = True
        assert w.trainable is True
    finally:
        nf.dispose([v, w])


def test_variable_dtype_argument_casts():
    v = nf.variable([1.7, -2.2], dtype="int32")
    try:
        assert v.dtype == "int32"
        np.testing.assert_array_equal(v.numpy(), np.array([1, -2], np.int32))
    finally:
        v.dispose()


def test_variable_is_usable_in_ops():
    v = nf.variable([1.0, 2.0])
    try:
        result = nf.tidy(lambda: (v * 2 + v).numpy())
        np.testing.assert_array_equal(result, [3.0, 6.0])
    finally:
        v.dispose()


def test_scalar_conversions():
    ts = [nf.scalar(2.5), nf.scalar(3, "int32"), nf.tensor([1.0, 2.0])]
    try:
        assert float(ts[0]) == 2.5
        assert int(ts[1]) == 3
        assert math.isclose(float(ts[1]), 3.0)
        assert bool(ts[0]) is True
        with pytest.raises((TypeError, ValueError)):
            float(ts[2])
        with pytest.raises(ValueError):
            bool(ts[2])
    finally:
        nf.dispose(ts)
