"""``Tensor.__getitem__`` against numpy basic indexing, Python operators, and chainable methods.

Runs on every available backend (the ``backend`` fixture). Expected values come from numpy.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ndflow as nf

E = Ellipsis
A4 = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) - 50.0


def _key_id(key) -> str:
    def one(k) -> str:
        if k is Ellipsis:
            return "..."
        if k is None:
            return "None"
        if isinstance(k, slice):
            parts = ["" if v is None else str(v) for v in (k.start, k.stop, k.step)]
            return ":".join(parts).rstrip(":") or ":"
        return str(k)

    return "[" + ",".join(one(k) for k in (key if isinstance(key, tuple) else (key,))) + "]"


INDEX_KEYS = [
    0, 1, -1, -2,
    (0, 1), (1, 2, 3), (0, 0, 0, 0), (-1, -2, -3, -4), (1, -1, 0, -5),
    slice(None), slice(1, None), slice(None, 1), slice(0, 2), slice(-1, None), slice(5, 10), slice(-10, 10),
    slice(1, 1), slice(None, None, 2), slice(None, None, -1), slice(None, None, -2), slice(1, None, -1),
    (slice(None), slice(None, None, 2)), (slice(None), slice(2, 0, -1)), (slice(None), slice(None, None, -1), 1),
    (slice(None, -1), slice(1, 3)), (1, slice(None, None, -1), slice(None, None, -1)),
    (slice(None), slice(None), slice(3, 0, -2), slice(None, None, 3)), (slice(3, -10, -1),),
    (slice(-100, 100, -1),), (0, slice(3, None, -2), E, slice(-2, None)), (slice(None), slice(0, 3, 5)),
    E, (E,), (E, 0), (0, E), (1, E, 2), (E, slice(None, None, -2)), (E, -1, -1), (slice(None), E, 1, slice(1, 3)),
    None, (None,), (None, None), (0, None, 1), (E, None), (None, E, None), (slice(None), None, 0),
    (0, 0, 0, 0, None), (E, 1, None, slice(None, None, 3)), (None, 1, None, slice(None, None, -1), E, None),
    (np.int64(1),), (np.int32(-1), slice(None), np.int64(2)),
]  # fmt: skip


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[_key_id(k) for k in INDEX_KEYS])
def test_getitem_matches_numpy(backend, key):
    expected = A4[key]
    shape, values = nf.tidy(lambda: (lambda t: (t.shape, t.numpy()))(nf.tensor(A4)[key]))
    assert shape == expected.shape
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize(
    ("array", "key"),
    [
        (np.arange(7, dtype=np.int32), slice(None, None, -3)),
        (np.arange(7, dtype=np.int32), 3),
        (np.arange(7, dtype=np.int32), slice(-3, None)),
        (np.array([True, False, True]), slice(None, None, -1)),
        (np.arange(12, dtype=np.float32).reshape(3, 4), (slice(None), -1)),
        (np.arange(12, dtype=np.float32).reshape(3, 4), (-1, slice(None, None, -1))),
        (np.arange(12, dtype=np.float32).reshape(3, 4), (slice(None, None, 2), None, slice(1, None, 2))),
        (np.array(5.0, dtype=np.float32), E),
        (np.array(5.0, dtype=np.float32), None),
        (np.array(5.0, dtype=np.float32), (E, None)),
    ],
    ids=["int_rev3", "int_scalar", "int_tail", "bool_rev", "2d_last_col", "2d_last_row_rev", "2d_mixed",
         "scalar_ellipsis", "scalar_none", "scalar_ellipsis_none"],
)  # fmt: skip
def test_getitem_other_dtypes_and_ranks(backend, array, key):
    expected = array[key]
    dtype, shape, values = nf.tidy(lambda: (lambda t: (t.dtype, t.shape, t.numpy()))(nf.tensor(array)[key]))
    assert shape == expected.shape
    assert dtype == {"i": "int32", "b": "bool", "f": "float32"}[array.dtype.kind]
    np.testing.assert_array_equal(values, expected)


def test_getitem_of_a_string_tensor(backend):
    values = nf.tidy(lambda: nf.tensor([["a", "b"], ["c", "d"]])[:, ::-1].array_sync())
    assert values == [["b", "a"], ["d", "c"]]


@pytest.fixture
def t4():
    t = nf.tensor(A4)
    yield t
    t.dispose()


@pytest.mark.parametrize(
    "key",
    [(0, 0, 0, 0, 0), (slice(None),) * 5, (E, 0, 0, 0, 0, 0)],
    ids=["five_ints", "five_slices", "ellipsis_plus_five"],
)
def test_getitem_too_many_indices(backend, t4, key):
    with pytest.raises(IndexError, match="too many indices"):
        t4[key]


def test_getitem_bad_indices(backend, t4):
    start = nf.memory().num_tensors
    with pytest.raises((TypeError, IndexError)):
        t4[1.0]
    with pytest.raises((TypeError, IndexError)):
        t4[0, 1.5]
    with pytest.raises(TypeError):
        t4[0.5:]
    with pytest.raises(ValueError, match="step"):
        t4[::0]
    with pytest.raises(ValueError, match="step"):
        t4[:, 1:3:0]
    with pytest.raises(IndexError):
        t4[2]
    with pytest.raises(IndexError):
        t4[-3]
    with pytest.raises(IndexError):
        t4[0, 3]
    with pytest.raises(IndexError):
        t4[E, E]
    with pytest.raises((TypeError, IndexError)):
        t4["a"]
    assert nf.memory().num_tensors == start
    scalar = nf.scalar(1.0)
    try:
        with pytest.raises(IndexError):
            scalar[0]
    finally:
        scalar.dispose()


# ---------------------------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------------------------
X = np.array([[1.5, -2.0, 3.0], [4.0, 0.5, -6.0]], np.float32)
Y = np.array([[2.0, 3.0, -1.5], [-4.0, 2.0, 2.5]], np.float32)
ROW = np.array([0.5, -1.0, 2.0], np.float32)


def _values(t) -> tuple[str, tuple[int, ...], np.ndarray]:
    assert isinstance(t, nf.Tensor), f"expected an nf.Tensor, got {type(t).__name__}"
    return t.dtype, t.shape, t.numpy()


def _run(fn):
    return nf.tidy(lambda: _values(fn()))


BINARY = [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
    ("mod", operator.mod), ("pow", operator.pow),
]  # fmt: skip


@pytest.mark.parametrize("op", [b[1] for b in BINARY], ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("rhs", ["tensor", "broadcast_row", "python_scalar", "numpy_array"])
def test_binary_operators_match_numpy(backend, op, rhs):
    other = {"tensor": Y, "broadcast_row": ROW, "python_scalar": 2.0, "numpy_array": Y}[rhs]
    y_np = np.abs(Y) if op is operator.pow else Y  # keep pow real
    if op is operator.pow:
        other = {"tensor": y_np, "broadcast_row": np.abs(ROW), "python_scalar": 2.0, "numpy_array": y_np}[rhs]
    x_np = np.abs(X) if op is operator.pow else X

    def fn():
        x = nf.tensor(x_np)
        right = nf.tensor(other) if rhs in ("tensor", "broadcast_row") else other
        return op(x, right)

    dtype, shape, values = _run(fn)
    expected = op(x_np, np.float32(other) if rhs == "python_scalar" else other)
    assert dtype == "float32"
    assert shape == expected.shape
    np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-5)


def test_floordiv_operator_matches_numpy(backend):
    # TF.js's FloorDiv kernel returns int32 whatever the input dtype (tf.floorDiv on float32 is int32)
    for other in (Y, 2.0, -1.5):
        dtype, _, values = _run(lambda other=other: nf.tensor(X) // (nf.tensor(other) if other is Y else other))
        assert dtype == "int32"
        np.testing.assert_array_equal(values, np.floor_divide(X, np.float32(other)))


REFLECTED = [
    ("radd", lambda x: 2.5 + x, lambda x: 2.5 + x, "float32"),
    ("rsub", lambda x: 1 - x, lambda x: 1 - x, "float32"),
    ("rmul", lambda x: 3 * x, lambda x: 3 * x, "float32"),
    ("rtruediv", lambda x: 2 / x, lambda x: 2 / x, "float32"),
    ("rfloordiv", lambda x: 7 // x, lambda x: 7 // x, "int32"),  # TF.js's FloorDiv: int32 out
    ("rmod", lambda x: 7 % x, lambda x: 7 % x, "float32"),
    ("rpow", lambda x: 2**x, lambda x: 2**x, "float32"),
    ("radd_list", lambda x: [1, 2, 3] + x, lambda x: np.array([1, 2, 3], np.float32) + x, "float32"),
    ("rsub_nested_list", lambda x: [[1], [2]] - x, lambda x: np.array([[1], [2]], np.float32) - x, "float32"),
]


@pytest.mark.parametrize(("nf_op", "np_op", "dtype"), [r[1:] for r in REFLECTED], ids=[r[0] for r in REFLECTED])
def test_reflected_operators_with_python_values(backend, nf_op, np_op, dtype):
    got_dtype, shape, values = _run(lambda: nf_op(nf.tensor(X)))
    expected = np_op(X)
    assert got_dtype == dtype
    assert shape == expected.shape
    np.testing.assert_allclose(values, expected.astype(np.float32), rtol=1e-5, atol=1e-5)


NUMPY_LEFT = [
    ("ndarray + t", lambda x: Y + x, Y + X),
    ("ndarray - t", lambda x: Y - x, Y - X),
    ("ndarray * t", lambda x: ROW * x, ROW * X),
    ("ndarray @ t", lambda x: np.ones((4, 2), np.float32) @ x, np.ones((4, 2), np.float32) @ X),
    ("ndarray > t", lambda x: Y > x, Y > X),
    ("np.float32 * t", lambda x: np.float32(2) * x, np.float32(2) * X),
]


@pytest.mark.parametrize(("op", "expected"), [n[1:] for n in NUMPY_LEFT], ids=[n[0] for n in NUMPY_LEFT])
def test_numpy_values_on_the_left_give_tensors(backend, op, expected):
    """``ndarray (op) tensor`` should stay in ndflow (as torch, TF and JAX arrays do), not become numpy."""
    dtype, shape, values = _run(lambda: op(nf.tensor(X)))
    assert shape == expected.shape
    assert dtype == ("bool" if expected.dtype == bool else "float32")
    np.testing.assert_allclose(values, expected, rtol=1e-5)


@pytest.mark.parametrize(
    ("scalar", "tensor_dtype", "dtype"),
    [
        (np.float32(1.5), "float32", "float32"),
        (np.float64(1.5), "float32", "float32"),
        (np.float32(1.5), "int32", "float32"),
        (np.int32(2), "int32", "int32"),
        (np.int64(2), "int32", "int32"),
        (np.int64(2), "float32", "float32"),
    ],
    ids=["f32+f32", "f64+f32", "f32+i32", "i32+i32", "i64+i32", "i64+f32"],
)
def test_numpy_scalars_on_the_right_keep_tensor_dtypes(backend, scalar, tensor_dtype, dtype):
    base = np.array([1, 2, 3])
    got_dtype, _, values = _run(lambda: nf.tensor(base, dtype=tensor_dtype) + scalar)
    assert got_dtype == dtype
    np.testing.assert_allclose(values, base + float(scalar))


def test_matmul_operator(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    batch_a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    batch_b = np.arange(8, dtype=np.float32).reshape(4, 2)
    _, shape, values = _run(lambda: nf.tensor(a) @ nf.tensor(b))
    assert shape == (2, 4)
    np.testing.assert_allclose(values, a @ b)
    _, shape, values = _run(lambda: nf.tensor(batch_a) @ nf.tensor(batch_b))
    assert shape == (2, 3, 2)
    np.testing.assert_allclose(values, batch_a @ batch_b)
    _, _, values = _run(lambda: nf.tensor(a) @ b)
    np.testing.assert_allclose(values, a @ b)
    _, _, values = _run(lambda: a.tolist() @ nf.tensor(b))
    np.testing.assert_allclose(values, a @ b)
    x = nf.tensor(a)
    try:
        with pytest.raises(ValueError, match="inner dimensions"):
            x @ x
    finally:
        x.dispose()


def test_unary_operators(backend):
    dtype, _, values = _run(lambda: -nf.tensor(X))
    assert dtype == "float32"
    np.testing.assert_array_equal(values, -X)
    dtype, _, values = _run(lambda: abs(nf.tensor(X)))
    assert dtype == "float32"
    np.testing.assert_array_equal(values, np.abs(X))
    dtype, _, values = _run(lambda: -nf.tensor([1, -2], dtype="int32"))
    assert dtype == "int32"
    np.testing.assert_array_equal(values, [-1, 2])
    dtype, _, values = _run(lambda: abs(nf.tensor([-3, 2], dtype="int32")))
    assert dtype == "int32"
    np.testing.assert_array_equal(values, [3, 2])
    x = nf.tensor(X)
    try:
        assert +x is x
    finally:
        x.dispose()


COMPARISONS = [
    ("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
    ("ge", operator.ge),
]  # fmt: skip


@pytest.mark.parametrize("op", [c[1] for c in COMPARISONS], ids=[c[0] for c in COMPARISONS])
@pytest.mark.parametrize("rhs", ["tensor", "broadcast_row", "scalar", "reflected_scalar", "numpy_array"])
def test_comparisons_return_bool_tensors(backend, op, rhs):
    x_np = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], np.float32)
    y_np = np.array([[1.0, 3.0, 2.0], [3.0, 1.0, 1.0]], np.float32)
    row = np.array([2.0, 2.0, 1.0], np.float32)

    def fn():
        x = nf.tensor(x_np)
        if rhs == "tensor":
            return op(x, nf.tensor(y_np))
        if rhs == "broadcast_row":
            return op(x, nf.tensor(row))
        if rhs == "scalar":
            return op(x, 2)
        if rhs == "reflected_scalar":
            return op(2, x)
        return op(x, y_np)

    expected = {
        "tensor": lambda: op(x_np, y_np),
        "broadcast_row": lambda: op(x_np, row),
        "scalar": lambda: op(x_np, 2),
        "reflected_scalar": lambda: op(2, x_np),
        "numpy_array": lambda: op(x_np, y_np),
    }[rhs]()
    dtype, shape, values = _run(fn)
    assert dtype == "bool"
    assert shape == expected.shape
    np.testing.assert_array_equal(values, expected)


def test_comparisons_of_int_and_float(backend):
    _, _, values = _run(lambda: nf.tensor([1, 2, 3], dtype="int32") < 2.5)
    np.testing.assert_array_equal(values, [True, True, False])
    _, _, values = _run(lambda: nf.tensor([1, 2, 3], dtype="int32") == nf.tensor([1.0, 2.5, 3.0]))
    np.testing.assert_array_equal(values, [True, False, True])


def test_tensor_stays_hashable(backend):
    x = nf.tensor([1.0])
    try:
        assert {x: 1}[x] == 1
    finally:
        x.dispose()


# ---------------------------------------------------------------------------------------------
# int32 arithmetic: Python scalars keep int32 when they fit
# ---------------------------------------------------------------------------------------------
I = np.array([7, -3, 4], np.int32)

INT_CASES = [
    ("i + 1", lambda t: t + 1, "int32", I + 1),
    ("1 + i", lambda t: 1 + t, "int32", 1 + I),
    ("i - 2", lambda t: t - 2, "int32", I - 2),
    ("i * 3", lambda t: t * 3, "int32", I * 3),
    ("i // 2", lambda t: t // 2, "int32", I // 2),
    ("i % 3", lambda t: t % 3, "int32", I % 3),
    ("i ** 2", lambda t: t**2, "int32", I**2),
    ("i + i", lambda t: t + t, "int32", I + I),
    ("i + 1.5", lambda t: t + 1.5, "float32", I + np.float32(1.5)),
    ("1.5 * i", lambda t: 1.5 * t, "float32", np.float32(1.5) * I),
    ("i / 2", lambda t: t / 2, "float32", (I / 2).astype(np.float32)),
    ("i + f32 tensor", lambda t: t + nf.tensor([0.5, 0.5, 0.5]), "float32", I + np.float32(0.5)),
    ("i + True", lambda t: t + True, "int32", I + 1),
]


@pytest.mark.parametrize(("op", "dtype", "expected"), [c[1:] for c in INT_CASES], ids=[c[0] for c in INT_CASES])
def test_int32_arithmetic_dtypes(backend, op, dtype, expected):
    got_dtype, _, values = _run(lambda: op(nf.tensor(I, dtype="int32")))
    assert got_dtype == dtype
    np.testing.assert_allclose(values, expected, rtol=1e-6)


def test_binary_operator_broadcast_error(backend):
    a, b = nf.zeros([2, 3]), nf.zeros([4])
    try:
        with pytest.raises(ValueError, match=r"\[2, 3\].*\[4\]"):
            a + b
        with pytest.raises(ValueError):
            a * [1.0, 2.0]
    finally:
        nf.dispose([a, b])


# ---------------------------------------------------------------------------------------------
# chainable methods
# ---------------------------------------------------------------------------------------------
def test_chain_square_log_neg(backend):
    values = nf.tidy(lambda: nf.tensor(X).square().log().neg().numpy())
    np.testing.assert_allclose(values, -np.log(np.square(X)), rtol=1e-5)


def test_longer_chains(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    values = nf.tidy(lambda: nf.tensor(a).transpose().abs().sum(1).numpy())
    np.testing.assert_allclose(values, np.abs(a.T).sum(1))
    values = nf.tidy(lambda: nf.tensor(a).add(1).mul(2).sub(3).div(4).relu().max().numpy())
    assert values == pytest.approx(np.maximum(((a + 1) * 2 - 3) / 4, 0).max())
    values = nf.tidy(lambda: nf.tensor(a).exp().mean(0).sqrt().numpy())
    np.testing.assert_allclose(values, np.sqrt(np.exp(a).mean(0)), rtol=1e-5)
    values = nf.tidy(lambda: nf.tensor(a).expand_dims(0).squeeze().mat_mul(nf.tensor(a).transpose()).numpy())
    np.testing.assert_allclose(values, a @ a.T)
    values = nf.tidy(lambda: nf.tensor(a).sigmoid().tanh().numpy())
    np.testing.assert_allclose(values, np.tanh(1 / (1 + np.exp(-a))), rtol=1e-5)
    values = nf.tidy(lambda: nf.tensor(a).softmax().numpy())
    e = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(values, e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_chain_methods_leave_no_intermediates(backend):
    x = nf.tensor(X)
    start = nf.memory().num_tensors
    try:
        y = nf.tidy(lambda: x.square().log().neg())
        assert nf.memory().num_tensors == start + 1
        y.dispose()
    finally:
        x.dispose()


# ---------------------------------------------------------------------------------------------
# ops on tensors that share data with a tensor of another shape (reshape, expand_dims, squeeze)
# ---------------------------------------------------------------------------------------------
FLAT = np.arange(1, 7, dtype=np.float32)
M32 = FLAT.reshape(3, 2)

VIEW_CASES = [
    ("transpose", lambda r: nf.transpose(r), M32.T),
    ("add_row", lambda r: r + nf.tensor([10.0, 20.0]), M32 + [10, 20]),
    ("add_column", lambda r: r + nf.tensor([[10.0], [20.0], [30.0]]), M32 + [[10], [20], [30]]),
    ("exp", lambda r: nf.exp(r), np.exp(M32)),
    ("neg", lambda r: -r, -M32),
    ("cast", lambda r: nf.cast(r, "int32"), M32.astype(np.int32)),
    ("sum_axis1", lambda r: nf.sum(r, 1), M32.sum(1)),
    ("mean_axis1", lambda r: nf.mean(r, 1), M32.mean(1)),
    ("max_axis0", lambda r: nf.max(r, 0), M32.max(0)),
    ("arg_max_axis1", lambda r: nf.arg_max(r, 1), M32.argmax(1).astype(np.int32)),
    ("mat_mul", lambda r: nf.mat_mul(r, nf.ones([2, 1])), M32 @ np.ones((2, 1), np.float32)),
    ("getitem_row", lambda r: r[1], M32[1]),
    ("getitem_column", lambda r: r[:, 0], M32[:, 0]),
    ("slice", lambda r: nf.slice(r, [1, 0], [1, 2]), M32[1:2, 0:2]),
    ("concat_axis1", lambda r: nf.concat([r, r], 1), np.concatenate([M32, M32], 1)),
    ("stack", lambda r: nf.stack([r, r]), np.stack([M32, M32])),
    ("gather", lambda r: nf.gather(r, nf.tensor([2, 0], dtype="int32")), M32[[2, 0]]),
    ("softmax", lambda r: nf.softmax(r), np.exp(M32) / np.exp(M32).sum(1, keepdims=True)),
    ("where", lambda r: nf.where(nf.tensor([True, False]), r, nf.zeros([3, 2])), np.where([True, False], M32, 0)),
]


@pytest.mark.parametrize(("op", "expected"), [c[1:] for c in VIEW_CASES], ids=[c[0] for c in VIEW_CASES])
def test_ops_on_a_reshaped_tensor_use_its_shape(backend, op, expected):
    """reshape shares data with its input; later ops must still see the (3, 2) shape of the result."""

    def fn():
        r = nf.reshape(nf.tensor(FLAT), [3, 2])
        assert r.shape == (3, 2)
        return op(r)

    _, shape, values = _run(fn)
    assert shape == expected.shape
    np.testing.assert_allclose(values, expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (lambda x: nf.squeeze(nf.reshape(x, [1, 3, 2])), M32.T),
        (lambda x: nf.expand_dims(x, 1), FLAT[:, None].T),
        (lambda x: nf.clone(nf.reshape(x, [2, 3])), FLAT.reshape(2, 3).T),
        (lambda x: nf.cast(nf.reshape(x, [2, 3]), "float32"), FLAT.reshape(2, 3).T),
    ],
    ids=["squeeze", "expand_dims", "clone_of_reshape", "cast_to_same_dtype"],
)
def test_transpose_of_other_views(backend, view, expected):
    _, shape, values = _run(lambda: nf.transpose(view(nf.tensor(FLAT))))
    assert shape == expected.shape
    np.testing.assert_array_equal(values, expected)
