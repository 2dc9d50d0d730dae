"""Memory management: tidy, keep, dispose (variables, data sharing, memory() and the leak demo are in
test_memory_accounting.py)."""

from __future__ import annotations

import asyncio
import gc
import warnings

import numpy as np
import pytest

import ndflow as nf


def num_tensors() -> int:
    return nf.memory().num_tensors


@pytest.fixture
def x():
    t = nf.tensor([1.0, 2.0, 3.0])
    yield t
    t.dispose()


# ---------------------------------------------------------------------------------------------
# tidy
# ---------------------------------------------------------------------------------------------
def test_tidy_returned_tensor_survives_intermediates_do_not(x):
    before = nf.memory()
    y = nf.tidy(lambda: nf.sum(nf.square(nf.sub(x, 1))))
    try:
        after = nf.memory()
        assert after.num_tensors == before.num_tensors + 1
        assert after.num_bytes == before.num_bytes + 4
        assert not y.is_disposed
        assert y.array_sync() == pytest.approx(0 + 1 + 4)
    finally:
        y.dispose()


def test_tidy_disposes_what_it_created(x):
    made: list[nf.Tensor] = []

    def fn():
        made.extend([x + 1, x * 2, nf.zeros([4])])
        return None

    start = num_tensors()
    assert nf.tidy(fn) is None
    assert num_tensors() == start
    assert all(t.is_disposed for t in made)
    assert not x.is_disposed


def test_tidy_passes_through_non_tensor_results(x):
    assert nf.tidy(lambda: float(nf.sum(x))) == 6.0
    assert nf.tidy(lambda: "text") == "text"


def test_nested_tidy(x):
    seen: dict[str, nf.Tensor] = {}

    def outer():
        seen["outer_tmp"] = x + 1
        seen["inner_result"] = nf.tidy(lambda: (seen.setdefault("inner_tmp", x * 2)) + 1)
        # the inner scope is closed: its temporary is gone, its result lives on in this scope
        assert seen["inner_tmp"].is_disposed
        assert not seen["inner_result"].is_disposed
        seen["unreturned"] = nf.tidy(lambda: x - 1)
        return seen["inner_result"] * 10

    start = num_tensors()
    result = nf.tidy(outer)
    try:
        assert num_tensors() == start + 1
        np.testing.assert_array_equal(result.numpy(), [30.0, 50.0, 70.0])
        # an inner result that the outer function does not return is disposed with the outer scope
        assert seen["unreturned"].is_disposed
        assert seen["inner_result"].is_disposed
        assert seen["outer_tmp"].is_disposed
    finally:
        result.dispose()


def test_tensor_returned_through_two_scopes_survives(x):
    result = nf.tidy(lambda: nf.tidy(lambda: nf.tidy(lambda: x + 1)))
    try:
        np.testing.assert_array_equal(result.numpy(), [2.0, 3.0, 4.0])
    finally:
        result.dispose()


def test_results_in_containers_survive(x):
    start = num_tensors()
    result = nf.tidy(lambda: {"a": [x + 1, (x * 2, "label")], "b": 3, "c": {"d": x - 1}, "e": None})
    try:
        assert num_tensors() == start + 3
        assert result["b"] == 3 and result["e"] is None and result["a"][1][1] == "label"
        np.testing.assert_array_equal(result["a"][0].numpy(), [2, 3, 4])
        np.testing.assert_array_equal(result["a"][1][0].numpy(), [2, 4, 6])
        np.testing.assert_array_equal(result["c"]["d"].numpy(), [0, 1, 2])
    finally:
        nf.dispose(result)
    assert num_tensors() == start


def test_container_results_join_the_parent_scope(x):
    inner: dict[str, object] = {}

    def outer():
        inner["value"] = nf.tidy(lambda: [x + 1, (x + 2,), {"k": x + 3}])
        return None

    start = num_tensors()
    nf.tidy(outer)
    a, (b,), d = inner["value"]
    assert a.is_disposed and b.is_disposed and d["k"].is_disposed
    assert num_tensors() == start


def test_returned_input_is_not_disposed(x):
    assert nf.tidy(lambda: x) is x
    assert not x.is_disposed


def test_kept_tensor_survives(x):
    kept: list[nf.Tensor] = []

    def fn():
        k = nf.keep(x + 1)
        kept.append(k)
        nf.tidy(lambda: kept.append(nf.keep(x * 3)))
        return None

    start = num_tensors()
    nf.tidy(fn)
    try:
        assert num_tensors() == start + 2
        np.testing.assert_array_equal(kept[0].numpy(), [2, 3, 4])
        np.testing.assert_array_equal(kept[1].numpy(), [3, 6, 9])
    finally:
        nf.dispose(kept)
    assert num_tensors() == start


def test_keep_returns_its_argument_and_rejects_non_tensors(x):
    assert nf.keep(x) is x
    with pytest.raises(TypeError):
        nf.keep([1, 2])


def test_exception_inside_tidy_disposes_and_reraises(x):
    made: list[nf.Tensor] = []
    error = RuntimeError("boom")

    def fn():
        made.append(x + 1)
        made.append(nf.tidy(lambda: x * 2))
        raise error

    start = nf.memory()
    with pytest.raises(RuntimeError) as info:
        nf.tidy(fn)
    assert info.value is error
    assert all(t.is_disposed for t in made)
    after = nf.memory()
    assert (after.num_tensors, after.num_bytes) == (start.num_tensors, start.num_bytes)
    # the engine is usable (no scope left open): a new tensor is not owned by a dead scope
    y = nf.tidy(lambda: x + 5)
    try:
        np.testing.assert_array_equal(y.numpy(), [6, 7, 8])
    finally:
        y.dispose()


def test_exception_in_nested_tidy_caught_by_outer(x):
    def failing():
        x + 1
        raise ValueError("inner")

    def outer():
        try:
            nf.tidy(failing)
        except ValueError:
            pass
        return x * 2

    start = num_tensors()
    y = nf.tidy(outer)
    try:
        assert num_tensors() == start + 1
        np.testing.assert_array_equal(y.numpy(), [2, 4, 6])
    finally:
        y.dispose()


def test_tidy_with_name(x):
    start = num_tensors()
    y = nf.tidy("my scope", lambda: nf.square(x) + 1)
    try:
        assert num_tensors() == start + 1
        np.testing.assert_array_equal(y.numpy(), [2, 5, 10])
    finally:
        y.dispose()


def test_tidy_with_arguments(x):
    start = num_tensors()
    y = nf.tidy(lambda a, b: nf.square(a) * b, x, 2)
    z = nf.tidy("named", lambda a, b: nf.square(a) - b, x, 1)
    w = nf.tidy(nf.add, x, x)
    try:
        assert num_tensors() == start + 3
        np.testing.assert_array_equal(y.numpy(), [2, 8, 18])
        np.testing.assert_array_equal(z.numpy(), [0, 3, 8])
        np.testing.assert_array_equal(w.numpy(), [2, 4, 6])
    finally:
        nf.dispose([y, z, w])


def test_tidy_decorator(x):
    @nf.tidy()
    def double_plus_one(a, scale=2):
        return a * scale + 1

    @nf.tidy("named_scope")
    def named(a):
        return nf.square(a) - 1

    assert double_plus_one.__name__ == "double_plus_one"
    assert named.__name__ == "named"
    start = num_tensors()
    y = double_plus_one(x)
    z = double_plus_one(x, scale=3)
    w = named(x)
    try:
        assert num_tensors() == start + 3
        np.testing.assert_array_equal(y.numpy(), [3, 5, 7])
        np.testing.assert_array_equal(z.numpy(), [4, 7, 10])
        np.testing.assert_array_equal(w.numpy(), [0, 3, 8])
    finally:
        nf.dispose([y, z, w])


def test_tidy_decorator_on_a_method(x):
    class Model:
        factor = 4.0

        @nf.tidy()
        def forward(self, a):
            return (a * self.factor) - 1

    start = num_tensors()
    y = Model().forward(x)
    try:
        assert num_tensors() == start + 1
        np.testing.assert_array_equal(y.numpy(), [3, 7, 11])
    finally:
        y.dispose()


def test_tidy_refuses_async_function(x):
    async def fn():
        return x + 1

    with pytest.raises(TypeError, match="async"):
        nf.tidy(fn)
    with pytest.raises(TypeError, match="async"):
        nf.tidy("named", fn)
    with pytest.raises(TypeError, match="async"):
        nf.tidy()(fn)


def test_tidy_refuses_a_lambda_returning_a_coroutine(x):
    async def work():
        return 1

    made: list[nf.Tensor] = []
    start = num_tensors()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match="awaitable"):
            nf.tidy(lambda: (made.append(x + 1), work())[1])
        gc.collect()
    assert num_tensors() == start
    assert made[0].is_disposed
    # the refused coroutine is closed, not left to warn "never awaited"
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_bare_tidy_of_function_needing_arguments_is_a_clear_error():
    def needs_args(a, b):
        return a + b

    with pytest.raises(TypeError, match=r"needs_args.*@nf\.tidy\(\)"):
        nf.tidy(needs_args)
    with pytest.raises(TypeError, match="needs arguments"):
        nf.tidy("named", needs_args)


def test_tidy_rejects_non_callables():
    with pytest.raises(TypeError):
        nf.tidy(3)
    with pytest.raises(TypeError):
        nf.tidy("name", 3)


def test_async_read_of_a_tidy_result(x):
    async def main():
        y = nf.tidy(lambda: x * 2)
        try:
            return await y.data()
        finally:
            y.dispose()

    np.testing.assert_array_equal(asyncio.run(main()), [2, 4, 6])


# ---------------------------------------------------------------------------------------------
# dispose and disposed tensors
# ---------------------------------------------------------------------------------------------
def test_dispose_nested_containers():
    start = nf.memory()
    ts = [nf.tensor([1.0]), nf.tensor([2.0]), nf.tensor([3.0]), nf.tensor([4.0]), nf.tensor([5.0])]
    container = {"a": [ts[0], (ts[1], {"b": ts[2]})], "c": {ts[3]}, "d": 7, "e": "text", "f": [ts[4], None]}
    assert num_tensors() == start.num_tensors + 5
    nf.dispose(container)
    assert all(t.is_disposed for t in ts)
    after = nf.memory()
    assert (after.num_tensors, after.num_bytes, after.num_data_buffers) == (
        start.num_tensors,
        start.num_bytes,
        start.num_data_buffers,
    )


def test_dispose_of_non_tensors_is_a_no_op():
    start = num_tensors()
    nf.dispose(None)
    nf.dispose(3)
    nf.dispose([1, "a", {"k": None}])
    assert num_tensors() == start


def test_double_dispose_is_harmless():
    a, b = nf.tensor([1.0, 2.0]), nf.tensor([3.0])
    start = nf.memory()
    a.dispose()
    a.dispose()
    nf.dispose(a)
    nf.dispose([a, a])
    after = nf.memory()
    assert after.num_tensors == start.num_tensors - 1
    assert after.num_bytes == start.num_bytes - 8
    b.dispose()
    b.dispose()
    after = nf.memory()
    assert after.num_tensors == start.num_tensors - 2
    assert after.num_bytes == start.num_bytes - 12


READS = {
    "data_sync": lambda t: t.data_sync(),
    "data": lambda t: asyncio.run(t.data()),
    "array_sync": lambda t: t.array_sync(),
    "array": lambda t: asyncio.run(t.array()),
    "numpy": lambda t: t.numpy(),
    "np.asarray": lambda t: np.asarray(t),
    "buffer_sync": lambda t: t.buffer_sync(),
    "buffer": lambda t: asyncio.run(t.buffer()),
    "to_string": lambda t: t.to_string(),
    "float": lambda t: float(t[0, 0]),
    "iter": lambda t: list(t),
}
OPS = {
    "nf.add": lambda t: nf.add(t, t),
    "t + 1": lambda t: t + 1,
    "1 + t": lambda t: 1 + t,
    "t + 1.5": lambda t: t + 1.5,
    "-t": lambda t: -t,
    "t @ t": lambda t: t @ t,
    "t[0]": lambda t: t[0],
    "t.square()": lambda t: t.square(),
    "reshape": lambda t: nf.reshape(t, [4]),
    "clone": lambda t: nf.clone(t),
    "cast": lambda t: nf.cast(t, "int32"),
    "sum": lambda t: nf.sum(t),
    "concat": lambda t: nf.concat([t, t]),
    "zeros_like": lambda t: nf.zeros_like(t),
    "variable": lambda t: nf.variable(t),
}


@pytest.mark.parametrize("use", list(READS.values()) + list(OPS.values()), ids=list(READS) + list(OPS))
def test_using_a_disposed_tensor_raises(use):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    t.dispose()
    start = nf.memory()
    with pytest.raises(nf.DisposedTensorError):
        use(t)
    after = nf.memory()
    assert (after.num_tensors, after.num_bytes) == (start.num_tensors, start.num_bytes)


def test_disposed_tensor_error_names_the_tensor():
    t = nf.zeros([2, 3])
    t.dispose()
    with pytest.raises(nf.DisposedTensorError, match="dispose") as info:
        t.data_sync()
    assert isinstance(info.value, RuntimeError)
    assert str(t.id) in str(info.value)


def test_assigning_a_disposed_tensor_to_a_variable_raises():
    v = nf.variable([1.0, 2.0])
    d = nf.tensor([3.0, 4.0])
    d.dispose()
    try:
        with pytest.raises(nf.DisposedTensorError):
            v.assign(d)
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    finally:
        v.dispose()
    fresh = nf.tensor([0.0, 0.0])
    try:
        with pytest.raises(nf.DisposedTensorError):
            v.assign(fresh)  # the variable itself is disposed now
    finally:
        fresh.dispose()
