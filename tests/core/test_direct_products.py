"""``nf.mat_mul(a, b)`` of two float32 matrices on compiled dispatch's product path (``register_direct_product``)
and the cpu backend's bound products (backends/cpu/plans/product.py): the same bits as the kernel's full path,
the same tensors and counters, and the full path whenever something watches (tape, profile, debug mode, leak
tracking) or the call is not the plain one."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.core import kernel_names as kn
from ndflow.core.dispatch import compiled
from ndflow.core.engine import ENGINE
from ndflow.core.kernel_registry import direct_table, kernel_table, register_kernel

SHAPES = [(1, 1, 1), (8, 8, 8), (64, 64, 64), (1, 300, 7), (7, 1024, 1000), (33, 5, 130), (256, 256, 256),
          (40, 2000, 3), (0, 3, 4), (3, 0, 4), (3, 4, 0)]  # fmt: skip
KEY = (kn.BatchMatMul, "product")

needs_module = pytest.mark.skipif(not compiled.available(), reason="ndflow was built without its C module")


@pytest.fixture
def cpu():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    yield nf.backend()
    nf.set_backend(previous)


def _operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def _reference(x: np.ndarray, y: np.ndarray) -> bytes:
    """The kernel's route before products were bound: ``parallel.matmul`` on the stored arrays."""
    from ndflow.backends.cpu.native import parallel

    return np.asarray(parallel.matmul(x, y), dtype=np.float32).tobytes()


@pytest.mark.parametrize("m, k, n", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_products_are_the_kernel_s_bits_on_every_path(cpu, m, k, n):
    x, y = _operands(m, k, n)
    a, b = nf.tensor(x), nf.tensor(y)
    expected = _reference(x, y)
    try:
        for on in (True, False) if compiled.available() else (False,):
            nf.env().set("C_DISPATCH", on)
            for r in (nf.mat_mul(a, b), a.mat_mul(b), ENGINE.run_kernel(kn.BatchMatMul, (a, b), {})):
                assert r.shape == (m, n) and r.dtype == "float32"
                assert r.data_sync().tobytes() == expected
                r.dispose()
    finally:
        nf.env().set("C_DISPATCH", compiled.available())
        nf.dispose([a, b])


@needs_module
def test_the_c_path_makes_what_the_python_path_makes(cpu):
    a, b = (nf.tensor(v) for v in _operands(5, 6, 7))
    try:
        seen = []
        for on in (True, False):
            nf.env().set("C_DISPATCH", on)
            before = nf.memory()
            out = nf.tidy(lambda: nf.mat_mul(a, b))
            after = nf.memory()
            seen.append(
                (
                    out.shape,
                    out.dtype,
                    out.size,
                    out.kept,
                    type(cpu.values(out.data_id)),
                    cpu.ref_count(out.data_id),
                    tuple(
                        getattr(after, f) - getattr(before, f) for f in ("num_tensors", "num_data_buffers", "num_bytes")
                    ),
                )
            )
            out.dispose()
        assert seen[0] == seen[1]
        assert seen[0][-1] == (1, 1, 5 * 7 * 4)
        nf.env().set("C_DISPATCH", True)
        form, calls = direct_table("cpu")[KEY], []
        direct_table("cpu")[KEY] = lambda x, y: calls.append(1) or form(x, y)
        try:
            nf.mat_mul(a, b).dispose()  # the C path calls the product form
            nf.mat_mul(a, b, transpose_b=False).dispose()  # a keyword: the Python op, its direct path
            at, bt = nf.transpose(a), nf.transpose(b)
            nf.mat_mul(a, bt, transpose_b=True).dispose()  # the kernel
            nf.mat_mul(at, b, True).dispose()
            nf.dispose([at, bt])
            assert len(calls) == 2
            nf.env().set("C_DISPATCH", False)
            nf.mat_mul(a, b).dispose()
            assert len(calls) == 3
        finally:
            direct_table("cpu")[KEY] = form
    finally:
        nf.env().set("C_DISPATCH", True)
        nf.dispose([a, b])


def test_other_calls_take_the_full_path(cpu):
    x, y = _operands(4, 3, 5)
    a, b = nf.tensor(x), nf.tensor(y)
    i = nf.tensor(np.arange(12).reshape(4, 3), dtype="int32")
    try:
        cases = {
            "transpose_b": (lambda: nf.mat_mul(a, nf.transpose(b), transpose_b=True), x @ y),
            "transposed, positional": (lambda: nf.mat_mul(nf.transpose(a), b, True, False), x @ y),
            "batched": (lambda: nf.mat_mul(nf.expand_dims(a, 0), b), (x @ y)[None]),
            "int32": (lambda: nf.mat_mul(i, nf.cast(b, "int32")), np.arange(12).reshape(4, 3) @ y.astype(np.int32)),
            "values": (lambda: nf.mat_mul(x.tolist(), b), x @ y),
        }
        for name, (fn, want) in cases.items():
            got = nf.tidy(fn)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5, err_msg=name)
            got.dispose()
        with pytest.raises(ValueError, match="mat_mul: inner dimensions must match"):
            nf.mat_mul(a, a)
        d = nf.tensor(x)
        d.dispose()
        with pytest.raises(Exception, match="disposed"):
            nf.mat_mul(d, b)
    finally:
        nf.dispose([a, b, i])


@needs_module
def test_whatever_watches_kernels_sees_the_product(cpu):
    a, b = (nf.tensor(v) for v in _operands(3, 3, 3))
    try:
        info = nf.profile(lambda: nf.tidy(lambda: nf.mat_mul(a, b)))
        assert info.kernel_names == [kn.BatchMatMul]
        info.result.dispose()
        g = nf.grad(lambda t: nf.sum(nf.mat_mul(t, b)))(a)  # taped: d/da sum(a @ b) = row sums of b
        np.testing.assert_allclose(g.numpy(), np.tile(b.numpy().sum(axis=1), (3, 1)), rtol=1e-6)
        g.dispose()
        assert ENGINE._direct.get(KEY) is not None
        ENGINE.leak_tracker(force=True)
        try:
            assert ENGINE._direct.get(KEY) is None  # leak tracking closes the direct path
            nf.mat_mul(a, b).dispose()
        finally:
            ENGINE.stop_forced_tracking()
    finally:
        nf.dispose([a, b])


def test_a_replaced_kernel_loses_its_product_form(cpu):
    config = kernel_table("cpu")[kn.BatchMatMul]
    form = direct_table("cpu")[KEY]
    a, b = (nf.tensor(v) for v in _operands(2, 2, 2))
    calls = []

    def replaced(backend, inputs, attrs):
        calls.append(1)
        return config.kernel_func(backend, inputs, attrs)

    try:
        register_kernel(kn.BatchMatMul, "cpu", replaced)
        assert KEY not in direct_table("cpu")
        nf.mat_mul(a, b).dispose()
        assert calls == [1]
    finally:
        register_kernel(kn.BatchMatMul, "cpu", config.kernel_func)
        from ndflow.core.kernel_registry import register_direct_product

        register_direct_product(kn.BatchMatMul, "cpu", form)
        nf.dispose([a, b])


def test_bound_products_follow_the_flags_and_the_arrays(cpu):
    from ndflow.backends.cpu.plans import product as bound

    x, y = _operands(64, 48, 80, seed=1)
    assert bound.product(x, y).tobytes() == _reference(x, y)
    for flag, value in (("CPU_NATIVE_SPLIT", False), ("CPU_THREADS", 1), ("CPU_AVX512", False)):
        previous = nf.env().get(flag)
        nf.env().set(flag, value)
        try:
            assert bound.product(x, y).tobytes() == _reference(x, y), flag
        finally:
            nf.env().set(flag, previous)
    xt = np.asfortranarray(x)  # not C-contiguous: the unbound route
    assert bound.product(xt, y).tobytes() == _reference(xt, y)
