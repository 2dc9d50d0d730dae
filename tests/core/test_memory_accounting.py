"""Memory management, continued: variables, shared data (reshape, clone), the memory() fields, Python
operators' temporaries, and the seeds' leak demo (tidy, keep and dispose are in test_memory.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf


def num_tensors() -> int:
    return nf.memory().num_tensors


# ---------------------------------------------------------------------------------------------
# variables
# ---------------------------------------------------------------------------------------------
def test_variables_survive_tidy():
    holder: list[nf.Variable] = []

    def fn():
        v = nf.variable(nf.tensor([1.0, 2.0]) * 3)
        holder.append(v)
        return None

    start = num_tensors()
    nf.tidy(fn)
    v = holder[0]
    try:
        assert not v.is_disposed
        assert num_tensors() == start + 1
        np.testing.assert_array_equal(v.numpy(), [3.0, 6.0])
    finally:
        v.dispose()
    assert num_tensors() == start


def test_variable_returned_from_tidy_is_not_adopted_by_the_parent_scope():
    holder: list[nf.Variable] = []

    def outer():
        holder.append(nf.tidy(lambda: nf.variable(nf.zeros([2]))))
        return None

    nf.tidy(outer)
    try:
        assert not holder[0].is_disposed
    finally:
        holder[0].dispose()


def test_variable_assign_inside_tidy_keeps_the_value():
    v = nf.variable([0.0, 0.0])
    start = nf.memory()
    try:
        nf.tidy(lambda: v.assign(nf.tensor([1.0, 2.0]) + 1))
        after = nf.memory()
        assert (after.num_tensors, after.num_data_buffers, after.num_bytes) == (
            start.num_tensors,
            start.num_data_buffers,
            start.num_bytes,
        )
        np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])
    finally:
        v.dispose()


def test_dispose_variables():
    start = nf.memory()
    vs = [nf.variable([1.0, 2.0]), nf.variable(3.0, name="dv_named"), nf.variable([True])]
    assert num_tensors() == start.num_tensors + 3
    nf.dispose_variables()
    assert all(v.is_disposed for v in vs)
    after = nf.memory()
    assert (after.num_tensors, after.num_bytes, after.num_data_buffers) == (
        start.num_tensors,
        start.num_bytes,
        start.num_data_buffers,
    )
    # the names are free again
    again = nf.variable(1.0, name="dv_named")
    again.dispose()


# ---------------------------------------------------------------------------------------------
# shared data: reshape and clone
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "share",
    [
        lambda t: nf.reshape(t, [3, 2]),
        lambda t: t.reshape([6]),
        lambda t: nf.clone(t),
        lambda t: t.clone(),
        lambda t: nf.expand_dims(t, 0),
        lambda t: nf.squeeze(nf.reshape(t, [1, 2, 3])),
        lambda t: nf.cast(t, "float32"),
    ],
    ids=["reshape", "reshape_method", "clone", "clone_method", "expand_dims", "squeeze", "cast_same_dtype"],
)
def test_views_share_data(share):
    start = nf.memory()
    t = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    base = nf.memory()
    assert base.num_data_buffers == start.num_data_buffers + 1
    assert base.num_bytes == start.num_bytes + 24
    view = nf.tidy(lambda: share(t))
    mem = nf.memory()
    assert mem.num_tensors == base.num_tensors + 1
    assert mem.num_data_buffers == base.num_data_buffers
    assert mem.num_bytes == base.num_bytes
    assert view.id != t.id
    # freed only with the last sharer
    t.dispose()
    mem = nf.memory()
    assert mem.num_data_buffers == base.num_data_buffers
    assert mem.num_bytes == base.num_bytes
    np.testing.assert_array_equal(view.data_sync(), [1, 2, 3, 4, 5, 6])
    view.dispose()
    end = nf.memory()
    assert (end.num_tensors, end.num_data_buffers, end.num_bytes) == (
        start.num_tensors,
        start.num_data_buffers,
        start.num_bytes,
    )


def test_many_sharers_free_with_the_last():
    start = nf.memory()
    t = nf.zeros([4, 4])
    views = [nf.reshape(t, [16]), nf.clone(t), nf.reshape(t, [2, 8])]
    views.append(nf.clone(views[0]))
    assert nf.memory().num_data_buffers == start.num_data_buffers + 1
    for i, v in enumerate([t, *views]):
        assert nf.memory().num_bytes == start.num_bytes + 64, f"freed too early (after {i} disposals)"
        v.dispose()
    assert nf.memory().num_data_buffers == start.num_data_buffers
    assert nf.memory().num_bytes == start.num_bytes


def test_transpose_copies():
    start = nf.memory()
    t = nf.zeros([2, 3])
    u = nf.transpose(t)
    try:
        assert nf.memory().num_data_buffers == start.num_data_buffers + 2
        assert nf.memory().num_bytes == start.num_bytes + 48
    finally:
        nf.dispose([t, u])


# ---------------------------------------------------------------------------------------------
# memory()
# ---------------------------------------------------------------------------------------------
def test_memory_fields():
    start = nf.memory()
    for field in ("num_tensors", "num_data_buffers", "num_bytes"):
        assert isinstance(getattr(start, field), int)
    assert isinstance(start.unreliable, bool)
    assert isinstance(start.reasons, list)
    assert start["num_tensors"] == start.num_tensors
    ts = [
        nf.zeros([2, 3]),  # 24 bytes
        nf.zeros([5], "int32"),  # 20
        nf.zeros([3], "bool"),  # 3
        nf.zeros([2], "complex64"),  # 16
        nf.scalar(1.0),  # 4
    ]
    try:
        mem = nf.memory()
        assert mem.num_tensors == start.num_tensors + 5
        assert mem.num_data_buffers == start.num_data_buffers + 5
        assert mem.num_bytes == start.num_bytes + 24 + 20 + 3 + 16 + 4
    finally:
        nf.dispose(ts)
    end = nf.memory()
    assert (end.num_tensors, end.num_data_buffers, end.num_bytes) == (
        start.num_tensors,
        start.num_data_buffers,
        start.num_bytes,
    )


def test_numeric_tensors_are_reliable():
    t = nf.zeros([3])
    try:
        mem = nf.memory()
        assert mem.unreliable is False
        assert not any("string" in r for r in mem.reasons)
    finally:
        t.dispose()


def test_string_tensors_make_memory_unreliable():
    start = nf.memory()
    s = nf.tensor(["a", "é"])  # UTF-8: 1 + 2 bytes, as TF.js counts them
    try:
        mem = nf.memory()
        assert mem.unreliable is True
        assert any("string" in reason.lower() for reason in mem.reasons)
        assert mem.num_bytes == start.num_bytes + 3
        assert mem.num_tensors == start.num_tensors + 1
    finally:
        s.dispose()
    assert nf.memory().unreliable is False
    assert nf.memory().num_bytes == start.num_bytes


def test_string_tensor_bytes_through_views_and_slices():
    start = nf.memory()
    s = nf.tensor(["a", "é", "xyz"])  # 1 + 2 + 3 UTF-8 bytes
    r = nf.reshape(s, [3, 1])  # shares the data: no new bytes
    tail = s[1:]  # a new buffer: 2 + 3 bytes
    try:
        mem = nf.memory()
        assert mem.num_tensors == start.num_tensors + 3
        assert mem.num_data_buffers == start.num_data_buffers + 2
        assert mem.num_bytes == start.num_bytes + 6 + 5
        assert tail.array_sync() == ["é", "xyz"]
    finally:
        nf.dispose([s, r, tail])
    end = nf.memory()
    assert (end.num_tensors, end.num_data_buffers, end.num_bytes, end.unreliable) == (
        start.num_tensors,
        start.num_data_buffers,
        start.num_bytes,
        start.unreliable,
    )


# ---------------------------------------------------------------------------------------------
# Python operators with scalars do not leak their temporary tensors
# ---------------------------------------------------------------------------------------------
OPERATOR_CASES = {
    "x + 1": (lambda x, xi, c: x + 1, "float32", 12),
    "1 + x": (lambda x, xi, c: 1 + x, "float32", 12),
    "x - 2.5": (lambda x, xi, c: x - 2.5, "float32", 12),
    "2 * x": (lambda x, xi, c: 2 * x, "float32", 12),
    "x / 2": (lambda x, xi, c: x / 2, "float32", 12),
    "x ** 2": (lambda x, xi, c: x**2, "float32", 12),
    "2 ** x": (lambda x, xi, c: 2**x, "float32", 12),
    "x == 1": (lambda x, xi, c: x == 1, "bool", 3),
    "x < 2": (lambda x, xi, c: x < 2, "bool", 3),
    "xi + 1": (lambda x, xi, c: xi + 1, "int32", 12),
    "xi + 1.5 (cast temp)": (lambda x, xi, c: xi + 1.5, "float32", 12),
    "1.5 - xi (cast temp)": (lambda x, xi, c: 1.5 - xi, "float32", 12),
    "x + [1, 2, 3]": (lambda x, xi, c: x + [1, 2, 3], "float32", 12),
    "x + xi (cast temp)": (lambda x, xi, c: x + xi, "float32", 12),
    "nf.add(x, 1)": (lambda x, xi, c: nf.add(x, 1), "float32", 12),
    "nf.maximum(x, 0)": (lambda x, xi, c: nf.maximum(x, 0), "float32", 12),
    "nf.where(c, x, 0)": (lambda x, xi, c: nf.where(c, x, 0), "float32", 12),
    "nf.where([..], x, xi)": (lambda x, xi, c: nf.where([True, False, True], x, xi), "float32", 12),
}


@pytest.mark.parametrize(("op", "dtype", "nbytes"), list(OPERATOR_CASES.values()), ids=list(OPERATOR_CASES))
def test_operators_with_python_values_do_not_leak(op, dtype, nbytes):
    x = nf.tensor([1.0, 2.0, 3.0])
    xi = nf.tensor([1, 2, 3], dtype="int32")
    cond = nf.tensor([True, False, True])
    start = nf.memory()
    y = op(x, xi, cond)
    try:
        mem = nf.memory()
        assert mem.num_tensors == start.num_tensors + 1
        assert mem.num_bytes == start.num_bytes + nbytes
        assert mem.num_data_buffers == start.num_data_buffers + 1
        assert y.dtype == dtype
    finally:
        nf.dispose([x, xi, cond, y])


def test_operator_failure_does_not_leak_temporaries():
    x = nf.tensor([1.0, 2.0, 3.0])
    start = nf.memory()
    try:
        with pytest.raises(ValueError):
            x + [1.0, 2.0]
        with pytest.raises(ValueError):
            x @ 2.0
        with pytest.raises(TypeError):
            x + "a"
        mem = nf.memory()
        assert (mem.num_tensors, mem.num_bytes) == (start.num_tensors, start.num_bytes)
    finally:
        x.dispose()


# ---------------------------------------------------------------------------------------------
# The leak demo of the seeds
# ---------------------------------------------------------------------------------------------
def _leak_loop_in_tidy(iterations: int, rows: int, cols: int) -> None:
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((rows, cols)).astype(np.float32)
    b_np = rng.standard_normal((rows, cols)).astype(np.float32)

    def step():
        a = nf.tensor(a_np)
        b = nf.tensor(b_np)
        nf.mat_mul(a, nf.transpose(b))

    start = nf.memory()
    for _ in range(iterations):
        nf.tidy(step)
    end = nf.memory()
    assert end.num_tensors == start.num_tensors
    assert end.num_bytes == start.num_bytes
    assert end.num_data_buffers == start.num_data_buffers
    # and it computed the right thing
    last = nf.tidy(lambda: nf.mat_mul(nf.tensor(a_np), nf.transpose(nf.tensor(b_np))).numpy())
    np.testing.assert_allclose(last, a_np @ b_np.T, rtol=1e-4, atol=1e-3)


def test_leak_demo_in_tidy_stays_flat_small():
    _leak_loop_in_tidy(10_000, 5, 3)


@pytest.mark.slow
def test_leak_demo_in_tidy_stays_flat_full_size():
    _leak_loop_in_tidy(10_000, 500, 300)


def test_leak_demo_without_tidy_grows_by_exactly_what_it_creates():
    rows, cols, iterations = 500, 300, 20
    a_np = np.ones((rows, cols), np.float32)
    b_np = np.full((rows, cols), 0.5, np.float32)
    # per iteration: a, b, b^T (float32 rows*cols each) and a @ b^T (float32 rows*rows)
    bytes_per_iteration = 3 * rows * cols * 4 + rows * rows * 4
    assert bytes_per_iteration == 2_800_000
    start = nf.memory()
    made: list[nf.Tensor] = []
    try:
        for i in range(iterations):
            a = nf.tensor(a_np)
            b = nf.tensor(b_np)
            bt = nf.transpose(b)
            made += [a, b, bt, nf.mat_mul(a, bt)]
            mem = nf.memory()
            assert mem.num_tensors == start.num_tensors + 4 * (i + 1)
            assert mem.num_bytes == start.num_bytes + bytes_per_iteration * (i + 1)
            assert mem.num_data_buffers == start.num_data_buffers + 4 * (i + 1)
        assert made[-1].shape == (rows, rows)
        assert made[-1].numpy()[0, 0] == pytest.approx(cols * 0.5)
    finally:
        nf.dispose(made)
    end = nf.memory()
    assert (end.num_tensors, end.num_bytes, end.num_data_buffers) == (
        start.num_tensors,
        start.num_bytes,
        start.num_data_buffers,
    )
