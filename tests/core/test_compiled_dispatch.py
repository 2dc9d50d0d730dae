"""Compiled dispatch (ndflow/core/dispatch/csrc via core/dispatch/compiled.py): the C direct path and ``Tensor.dispose``
must do exactly what the Python engine does (values bit for bit, tensor attributes, memory counters, scopes,
shared data, fallbacks), with the flag ``C_DISPATCH`` on and off."""

from __future__ import annotations

import inspect
import shutil
import sysconfig
import threading
import warnings

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.dispatch import compiled
from ndflow.core.engine import ENGINE
from ndflow.core.kernel_registry import direct_table, register_direct
from ndflow.core.tensor import DisposedTensorError, Tensor

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3e38, -3e38, 1e-38, 1e-45, np.nan, np.inf, -np.inf], np.float32)
SCALARS = [0.1, -2.5, 3, 0, 16777216, 16777217, 2**40, 3e38, 1e300, float("nan"), True]
BINARY = [nf.add, nf.sub, nf.mul, nf.div, nf.maximum, nf.minimum, nf.pow, nf.squared_difference, nf.mod]
UNARY = [nf.neg, nf.abs, nf.exp, nf.log, nf.sqrt, nf.rsqrt, nf.square, nf.tanh, nf.relu, nf.sigmoid]

needs_module = pytest.mark.skipif(not compiled.available(), reason="ndflow was built without its C module")


@pytest.fixture(params=[True, False], ids=["compiled", "python"])
def dispatch(request):
    if request.param and not compiled.available():
        pytest.skip("ndflow was built without its C module")
    nf.env().set("C_DISPATCH", request.param)
    yield request.param


def _snapshot(t: Tensor) -> dict:
    info = ENGINE._data[t.data_id]
    backend = t._info.backend
    return {
        "shape": t.shape,
        "dtype": t.dtype,
        "size": t.size,
        "kept": t.kept,
        "disposed": t.is_disposed,
        "info": (info is t._info, info.nbytes, info.backend is backend),
        "refs": backend.ref_count(t.data_id),
        "values": t.data_sync().tobytes(),
        "stored_as": type(backend.values(t.data_id)) if hasattr(backend, "values") else None,
    }


def _run_both(fn):
    """fn() with compiled dispatch on and off: the two results."""
    out = []
    for on in (True, False):
        nf.env().set("C_DISPATCH", on)
        out.append(fn())
    return out


def test_the_module_is_built_where_a_compiler_is():
    if shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc") is None:
        pytest.skip("no C compiler here: ndflow runs its Python dispatch")
    assert compiled.available(), "ndflow/core/dispatch/_dispatch was not built: run `pip install -e .` again"
    assert compiled.enabled()


@needs_module
def test_flag_switches_the_module_and_tensor_dispose():
    nf.env().set("C_DISPATCH", False)
    assert not compiled.enabled()
    assert inspect.isfunction(Tensor.__dict__["dispose"])
    assert inspect.isfunction(type(ENGINE).__dict__["run_kernel"])
    nf.env().set("C_DISPATCH", True)
    assert compiled.enabled()
    assert type(Tensor.__dict__["dispose"]).__name__ == "method_descriptor"
    assert type(type(ENGINE).__dict__["run_kernel"]).__name__ == "method_descriptor"


@needs_module
def test_ops_keep_their_python_face():
    a = nf.tensor([1.0, -2.0])
    try:
        assert nf.add.__name__ == "add" and nf.add.__module__ == "ndflow.ops.arithmetic"
        assert "element-wise" in nf.add.__doc__
        assert list(inspect.signature(nf.add).parameters) == ["a", "b"]
        assert compiled.is_op(nf.exp) and inspect.isfunction(inspect.unwrap(nf.exp))
        results = [a.add(a), Tensor.add(a, a), a + a, nf.add(a=a, b=a), nf.add(a, b=a)]
        for r in results:
            np.testing.assert_array_equal(r.data_sync(), [2.0, -4.0])
        nf.dispose(results)
    finally:
        a.dispose()


@pytest.mark.parametrize("shape", [(), (1,), (3, 5)])
def test_binary_and_unary_ops_match_the_python_engine(backend, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1)[: min(x.size, SPECIAL.size)] = SPECIAL[: x.size]
    a, b = nf.tensor(x), nf.tensor(x.reshape(-1)[::-1].reshape(shape) + np.float32(0.25))
    try:
        for op in BINARY:
            for args in [(a, b)] + [(a, s) for s in SCALARS]:
                got = _run_both(lambda op=op, args=args: op(*args))
                assert _snapshot(got[0]) == _snapshot(got[1]), f"{op.__name__}{args[1:]}"
                nf.dispose(got)
        for op in UNARY:
            got = _run_both(lambda op=op: op(a))
            assert _snapshot(got[0]) == _snapshot(got[1]), op.__name__
            nf.dispose(got)
    finally:
        nf.dispose([a, b])


def test_memory_counters_and_freeing(backend, dispatch):
    a, b = nf.tensor([1.0, 2.0, 3.0]), nf.tensor([4.0, 5.0, 6.0])
    store = nf.backend()
    before = nf.memory()
    outs = [nf.add(a, b), a * b, a - 1.5, a / 2, nf.exp(a), nf.relu(a), -a, nf.sqrt(a)]
    mem = nf.memory()
    assert (mem.num_tensors, mem.num_data_buffers, mem.num_bytes) == (
        before.num_tensors + 8,
        before.num_data_buffers + 8,
        before.num_bytes + 96,
    )
    ids = [t.id for t in outs]
    assert ids == sorted(set(ids)), "tensor ids must be new and increasing"
    data_ids = [t.data_id for t in outs]
    for t in outs:
        t.dispose()
        t.dispose()  # a second dispose does nothing
    assert all(store.ref_count(d) == 0 for d in data_ids)
    assert all(d not in ENGINE._data for d in data_ids)
    mem = nf.memory()
    assert (mem.num_tensors, mem.num_data_buffers, mem.num_bytes) == (
        before.num_tensors,
        before.num_data_buffers,
        before.num_bytes,
    )
    with pytest.raises(DisposedTensorError, match="disposed"):
        nf.add(outs[0], a)
    with pytest.raises(DisposedTensorError, match="disposed"):
        nf.exp(outs[0])
    nf.dispose([a, b])


def test_scopes_track_and_keep(backend, dispatch):
    a = nf.tensor([1.0, 2.0])
    before = nf.memory().num_tensors
    seen = []

    def body():
        t = nf.mul(nf.add(a, a), 3.0)
        seen.append(nf.exp(t))
        kept = nf.keep(nf.neg(a))
        assert t.scope_id == ENGINE.active_scope.id
        return kept, t

    kept, t = nf.tidy(body)
    assert seen[0].is_disposed and not t.is_disposed and not kept.is_disposed
    assert nf.memory().num_tensors == before + 2
    np.testing.assert_array_equal(t.data_sync(), [6.0, 12.0])
    nf.dispose([kept, t, a])


def test_shared_data_is_freed_by_its_last_owner(backend, dispatch):
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    s = nf.add(a, a)
    r = nf.reshape(s, [4])  # shares the buffer
    c = nf.clone(s)
    store = nf.backend()
    s.dispose()
    assert store.ref_count(r.data_id) == 2 and not r.is_disposed
    doubled = nf.add(r, r)  # r's data is stored as (2, 2): the kernel runs, not the direct form
    np.testing.assert_array_equal(doubled.data_sync(), [4.0, 8.0, 12.0, 16.0])
    doubled.dispose()
    r.dispose()
    np.testing.assert_array_equal(c.data_sync(), [2.0, 4.0, 6.0, 8.0])  # data_sync is flat
    c.dispose()
    assert store.ref_count(a.data_id) == 1
    freed = a.data_id
    a.dispose()
    assert store.ref_count(freed) == 0 and freed not in ENGINE._data


def test_string_tensors_and_variables(backend, dispatch):
    before = nf.memory()
    s = nf.tensor(["a", "bc"])
    s.dispose()
    assert nf.memory().num_tensors == before.num_tensors
    initial = nf.tensor([1.0, 4.0])
    v = nf.variable(initial)
    out = [nf.add(v, v), nf.sqrt(v), v * 2]
    np.testing.assert_array_equal(out[0].data_sync(), [2.0, 8.0])
    np.testing.assert_array_equal(out[1].data_sync(), [1.0, 2.0])
    nf.dispose(out + [initial])
    v.dispose()


def test_the_leak_tracker_and_the_tape_see_every_op(backend, dispatch):
    nf.env().set("TRACK_LEAKS", True)
    a = nf.tensor([1.0, 2.0])
    t = nf.add(a, a)
    assert t.id in ENGINE.tracker.live, "an op's output is watched while TRACK_LEAKS is on"
    t.dispose()
    assert t.id not in ENGINE.tracker.live, "dispose tells the tracker"
    a.dispose()
    nf.env().set("TRACK_LEAKS", False)
    x = nf.tensor([1.0, 2.0, 3.0])
    g = nf.grad(lambda x: nf.sum(nf.mul(nf.exp(x), 2.0)))(x)
    np.testing.assert_allclose(g.data_sync(), 2 * np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    nf.dispose([g, x])


def test_a_failing_direct_kernel_raises_and_leaks_nothing(dispatch):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    original = direct_table("cpu")["Add"]

    def broken(a, b):
        raise FloatingPointError("broken direct form")

    register_direct("Add", "cpu", broken)
    nf.set_backend("cpu")
    a = nf.tensor([1.0])
    before = nf.memory()
    try:
        with pytest.raises(FloatingPointError, match="broken direct form"):
            nf.add(a, a)
        assert nf.memory().num_tensors == before.num_tensors
        assert nf.memory().num_data_buffers == before.num_data_buffers
    finally:
        register_direct("Add", "cpu", original)
        nf.set_backend(previous)
        a.dispose()


def test_cpu_results_are_stored_as_arrays_and_errors_stay_quiet(dispatch):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    try:
        big = nf.tensor(np.float32(3e38))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's overflow warnings must stay off, in every thread
            results = [nf.mul(big, 10.0), nf.add(big, big), nf.exp(big)]
            box = []
            worker = threading.Thread(target=lambda: box.append([nf.mul(big, 10.0), nf.exp(big)]))
            worker.start()
            worker.join()
        for t in results + box[0]:
            assert isinstance(nf.backend().values(t.data_id), np.ndarray)
            assert t.data_sync() == np.inf
        nf.dispose(results + box[0] + [big])
    finally:
        nf.set_backend(previous)


def test_webgpu_buffers_are_released_by_dispose(dispatch):
    if nf.find_backend("webgpu") is None:
        pytest.skip("no webgpu backend here")
    previous = nf.get_backend()
    nf.set_backend("webgpu")
    try:
        a = nf.tensor(np.arange(64, dtype=np.float32))
        t = nf.add(a, a)
        t.data_sync()
        store = nf.backend()
        before = nf.memory()
        t.dispose()
        assert store.ref_count(t.data_id) == 0
        assert nf.memory().num_bytes == before.num_bytes - 256
        a.dispose()
    finally:
        nf.set_backend(previous)


@needs_module
def test_the_compiled_path_is_taken_only_where_it_may_be(backend):
    from ndflow.core.dispatch import _dispatch

    a, b = nf.tensor([1.0, 2.0]), nf.tensor([3.0, 4.0])
    i = nf.tensor([1, 2], dtype="int32")
    try:
        has_direct = bool(direct_table(backend))
        for t in (_dispatch.direct_binary("Add", a, b), _dispatch.direct_binary("Add", a, 2.0)):
            assert (t is not None) == has_direct
            if t is not None:
                t.dispose()
        t = _dispatch.direct_unary("Exp", a)
        assert (t is not None) == has_direct
        if t is not None:
            t.dispose()
        assert _dispatch.direct_binary("Add", a, i) is None  # dtypes differ
        column = nf.reshape(a, [2, 1])
        assert _dispatch.direct_binary("Add", a, column) is None  # shapes differ
        stacked = nf.stack([a, b])
        flat = nf.reshape(stacked, [4])  # stored as (2, 2): the kernel must run
        assert _dispatch.direct_binary("Add", flat, flat) is None
        nf.dispose([column, stacked, flat])
        assert _dispatch.direct_binary("Add", a, 2**30) is None  # not exact in float32
        assert _dispatch.direct_binary("NoSuchKernel", a, b) is None
        seen = []

        def f(x):
            seen.append(_dispatch.direct_binary("Add", x, x))  # under the tape: closed
            return nf.sum(nf.add(x, x))

        g = nf.grad(f)(a)
        assert seen == [None]
        np.testing.assert_array_equal(g.data_sync(), [2.0, 2.0])
        g.dispose()
        nf.env().set("C_DISPATCH", False)
        assert _dispatch.direct_binary("Add", a, b) is None
    finally:
        nf.dispose([a, b, i])


GENERIC = {
    "reshape": lambda a, i, s: nf.reshape(a, [-1]),
    "reshape (tuple, method)": lambda a, i, s: a.reshape((1, 4, 1)),
    "reshape int32": lambda a, i, s: nf.reshape(i, [4, -1]),
    "sum": lambda a, i, s: nf.sum(a, 1),
    "sum of everything": lambda a, i, s: nf.sum(a),
    "sum of everything (method)": lambda a, i, s: a.sum(),
    "transpose": lambda a, i, s: nf.transpose(a),
    "split": lambda a, i, s: nf.split(a, 2),
    "concat": lambda a, i, s: nf.concat([a, a]),
    "cast": lambda a, i, s: nf.cast(a, "int32"),
    "int add (broadcast)": lambda a, i, s: nf.add(i, nf.scalar(3, "int32")),
    "greater": lambda a, i, s: nf.greater(a, 2.0),
    "mat_mul": lambda a, i, s: nf.mat_mul(a, a),
    "strings": lambda a, i, s: nf.reshape(s, [2, 1]),
    "clone": lambda a, i, s: nf.clone(a),
}


@pytest.mark.parametrize("case", sorted(GENERIC))
def test_generic_kernels_match_the_python_engine(backend, case):
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    i = nf.tensor([[1, 2], [3, 4]], dtype="int32")
    s = nf.tensor(["x", "yz"])
    try:
        results, memories = [], []
        for on in (True, False):
            nf.env().set("C_DISPATCH", on)
            before = nf.memory()
            out = nf.tidy(lambda: GENERIC[case](a, i, s))
            after = nf.memory()
            memories.append(
                tuple(getattr(after, k) - getattr(before, k) for k in ("num_tensors", "num_data_buffers", "num_bytes"))
            )
            outs = list(out) if isinstance(out, list | tuple) else [out]
            results.append(
                [(t.shape, t.dtype, t.size, t.kept, t.scope_id, np.asarray(t.array_sync()).tolist()) for t in outs]
            )
            nf.dispose(outs)
        assert results[0] == results[1]
        assert memories[0] == memories[1]
    finally:
        nf.dispose([a, i, s])


def test_run_kernel_errors_and_moves_are_the_python_engine_s(dispatch):
    a = nf.tensor([1.0, 2.0])
    try:
        with pytest.raises(NotImplementedError, match="NoSuchKernel"):
            ENGINE.run_kernel("NoSuchKernel", (a,), None)
        d = nf.tensor([3.0])
        d.dispose()
        with pytest.raises(DisposedTensorError, match="disposed"):
            ENGINE.run_kernel("Neg", (d,), None)
        with pytest.raises(DisposedTensorError, match="disposed"):
            nf.sum(d)
        if nf.find_backend("torch") is not None:
            previous = nf.get_backend()
            nf.set_backend("cpu")
            c = nf.tensor([[1.0, 2.0]])
            nf.set_backend("torch")
            moved = nf.sum(c)  # c moves to torch first (the Python path), then the kernel runs
            assert moved.backend_name == "torch" and c.backend_name == "torch"
            assert moved.data_sync().tolist() == [3.0]
            nf.dispose([moved, c])
            nf.set_backend(previous)
        out = ENGINE.run_kernel("Neg", (a,))  # attrs omitted
        np.testing.assert_array_equal(out.data_sync(), [-1.0, -2.0])
        out.dispose()
    finally:
        a.dispose()


def test_sums_of_everything_are_the_kernel_s_bit_for_bit(backend):
    rng = np.random.default_rng(3)
    for n in (1, 7, 1000, 32768, 40000, 300000):
        x = nf.tensor((rng.standard_normal(n) * 1e3).astype(np.float32))
        got = _run_both(lambda x=x: nf.sum(x))
        assert got[0].shape == got[1].shape == ()
        assert got[0].data_sync().tobytes() == got[1].data_sync().tobytes(), n
        nf.dispose(got + [x])


def test_reshape_errors_and_the_compiled_path(backend, dispatch, monkeypatch):
    import ndflow.ops.shape as shape_ops

    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    try:
        for bad in ([3], [-1, -1], [2, -2], [0, -1], "x"):
            with pytest.raises((ValueError, TypeError), match="reshape"):
                nf.reshape(a, bad)
        if dispatch and direct_table(backend).get(("Reshape", "shares")):

            def no_python(*args, **kwargs):
                raise AssertionError("the Python reshape ran")

            monkeypatch.setattr(shape_ops, "infer_shape", no_python)
            r = nf.reshape(a, [4])
            assert r.shape == (4,) and nf.backend().ref_count(a.data_id) == 2
            r.dispose()
            assert nf.backend().ref_count(a.data_id) == 1
    finally:
        a.dispose()


# -- the C output bookkeeping against its specification (ndflow/core/dispatch/outputs.py) ------------------------

OUTPUTS = {
    "float32": (np.arange(6, dtype=np.float32), (2, 3), "float32"),
    "int32": (np.arange(4, dtype=np.int32), (4,), "int32"),
    "bool": (np.array([True, False]), (2,), "bool"),
    "scalar": (np.array(2.5, np.float32), (), "float32"),
    "empty": (np.zeros((0, 3), np.float32), (0, 3), "float32"),
    "string": (np.array(["a", "bc"], dtype=object), (2,), "string"),
}


def _engine_state() -> tuple:
    scope = ENGINE.active_scope
    return (
        ENGINE.num_tensors,
        ENGINE.num_string_tensors,
        ENGINE.num_data_buffers,
        ENGINE.num_bytes,
        len(ENGINE._data),
        None if scope is None else len(scope.track),
    )


def _output_state(t: Tensor, before: tuple, first_id: int) -> dict:
    """Everything the bookkeeping set, relative to the state before (ids and data ids as offsets)."""
    scope = ENGINE.active_scope
    return {
        "type": type(t),
        "slots": (t.shape, t.dtype, t.size, t.kept, t.scope_id, t._disposed, t.id - first_id),
        "info": (ENGINE._data.get(t.data_id) is t._info, t._info.nbytes, t._info.backend is nf.backend()),
        "tracked": scope is not None and scope.track[-1] is t,
        "watched": ENGINE.tracker is not None and t.id in ENGINE.tracker.live,
        "engine": tuple(a - b if isinstance(a, int) else a for a, b in zip(_engine_state(), before, strict=True)),
    }


def _bookkeep(track, values, shape, dtype, shared):
    """``track(data_id, shape, dtype, backend)`` on new data (or on ``shared``'s data, given one more owner)."""
    backend = nf.backend()
    if shared is None:
        data_id = backend.write(values, shape, dtype)
    else:
        data_id = shared.data_id
        backend.inc_ref(data_id)
    before = _engine_state()
    first_id = next(ENGINE._tensor_ids)
    t = track(data_id, shape, dtype, backend)
    return t, _output_state(t, before, first_id + 1)


@needs_module
@pytest.mark.parametrize("tracking", [False, True], ids=["plain", "leak-tracker"])
@pytest.mark.parametrize("in_scope", [False, True], ids=["no-scope", "scope"])
@pytest.mark.parametrize("shared", [False, True], ids=["new-data", "shared-data"])
@pytest.mark.parametrize("case", sorted(OUTPUTS))
def test_the_c_output_bookkeeping_is_the_specification_s(backend, case, shared, in_scope, tracking):
    from ndflow.core.dispatch import _dispatch
    from ndflow.core.dispatch.outputs import track_output

    values, shape, dtype = OUTPUTS[case]
    nf.env().set("C_DISPATCH", True)
    nf.env().set("TRACK_LEAKS", tracking)
    owner = nf.tensor(values.reshape(shape), dtype=dtype) if shared else None
    made = []
    try:
        if in_scope:
            ENGINE.start_scope("bookkeeping")
        states = []
        for track in (_dispatch.track_output, lambda *args: track_output(ENGINE, *args)):
            t, state = _bookkeep(track, values, shape, dtype, owner)
            made.append(t)
            states.append(state)
        assert states[0] == states[1]
        assert made[0].data_sync().tobytes() == made[1].data_sync().tobytes()
    finally:
        nf.dispose(made + ([owner] if owner is not None else []))
        if in_scope:
            ENGINE.end_scope(None)
        nf.env().set("TRACK_LEAKS", False)


@needs_module
def test_run_kernel_in_c_leaves_the_engine_as_the_specification_does(backend):
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    i = nf.tensor([[1, 2], [3, 4]], dtype="int32")
    calls = [
        ("Neg", (a,), None),
        ("Cast", (a,), {"dtype": "int32"}),
        ("Add", (i, i), None),
        ("Reshape", (a,), {"shape": [4]}),
    ]
    calls.append(("SplitV", (a,), {"num_or_size_splits": (1, 1), "axis": 0}))
    try:
        for name, inputs, attrs in calls:
            states = []
            for on in (True, False):
                nf.env().set("C_DISPATCH", on)
                scope = ENGINE.start_scope(name)
                before = _engine_state()
                first_id = next(ENGINE._tensor_ids) + 1
                out = ENGINE.run_kernel(name, inputs, attrs)
                outs = out if isinstance(out, list) else [out]
                states.append(
                    (
                        [
                            (t.shape, t.dtype, t.size, t.scope_id == scope.id, t.id - first_id, t._info.nbytes)
                            for t in outs
                        ],
                        [any(x is t for x in scope.track) for t in outs],
                        tuple(x - y for x, y in zip(_engine_state(), before, strict=True)),
                        [t.data_sync().tobytes() for t in outs],
                    )
                )
                ENGINE.end_scope(None)
            assert states[0] == states[1], name
    finally:
        nf.dispose([a, i])
