"""The engine's direct path: float32 element-wise kernels run through their registered float32 form
(kernel_registry.register_direct) without the kernel wrapper. Each form must give exactly what its
kernel gives, and the engine must fall back to the kernel whenever the fast path may not be taken."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE
from ndflow.core.kernel_registry import (
    direct_kernel_names,
    direct_table,
    get_kernel,
    register_direct,
    register_kernel,
)

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3e38, -3e38, 1e-38, 1e-45, np.nan, np.inf, -np.inf], np.float32)
SCALARS = [0.1, 1 / 3, -2.5, 3, 0, -7, 16777216, 3e38, 1e-45, 2.0000001]


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = v.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return v


def _unary_kernels(backend: str) -> list[str]:
    return [n for n in direct_kernel_names(backend) if n not in ("Add", "Sub", "Multiply", "RealDiv")]


def _kernel_path(name: str, *inputs: nf.Tensor) -> np.ndarray:
    """The output of the kernel itself (run_kernel never takes the direct path)."""
    t = ENGINE.run_kernel(name, inputs, None)
    try:
        return t.data_sync()
    finally:
        t.dispose()


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype == np.float32
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # bit for bit (NaN where NaN)


@pytest.mark.parametrize("shape", [(), (1,), (3, 5)])
def test_every_direct_form_matches_its_kernel(backend, shape):
    if not direct_table(backend):
        pytest.skip(f"backend '{backend}' has no direct kernel forms")
    a = nf.tensor(_values(shape, 0))
    b = nf.tensor(_values(shape, 1) + np.float32(0.25))
    try:
        for name in _unary_kernels(backend):
            t = ENGINE.run_unary_float(name, a)
            _same(t.data_sync(), _kernel_path(name, a))
            t.dispose()
        for name in ("Add", "Sub", "Multiply", "RealDiv"):
            t = ENGINE.run_binary_float(name, a, b)
            _same(t.data_sync(), _kernel_path(name, a, b))
            t.dispose()
            for s in SCALARS:
                t = ENGINE.run_scalar_float(name, a, s)
                assert t is not None, f"{name} with {s} did not take the direct path"
                st = nf.scalar(s, "float32")
                want = ENGINE.run_kernel(name, (a, st), None)
                _same(t.data_sync(), want.data_sync())
                nf.dispose([t, st, want])
    finally:
        nf.dispose([a, b])


def test_ops_take_the_direct_path_and_count_memory(backend):
    if not direct_table(backend):
        pytest.skip(f"backend '{backend}' has no direct kernel forms")
    a, b = nf.tensor([1.0, 2.0, 3.0]), nf.tensor([4.0, 5.0, 6.0])
    before = nf.memory()
    outs = [nf.add(a, b), a * b, a - 1.5, a / 2, nf.exp(a), nf.relu(a), -a]
    mem = nf.memory()
    assert mem.num_tensors == before.num_tensors + len(outs)
    assert mem.num_data_buffers == before.num_data_buffers + len(outs)
    assert mem.num_bytes == before.num_bytes + 12 * len(outs)
    np.testing.assert_allclose(outs[0].data_sync(), [5, 7, 9])
    np.testing.assert_allclose(outs[1].data_sync(), [4, 10, 18])
    np.testing.assert_allclose(outs[2].data_sync(), [-0.5, 0.5, 1.5])
    np.testing.assert_allclose(outs[3].data_sync(), [0.5, 1, 1.5])
    np.testing.assert_allclose(outs[4].data_sync(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    np.testing.assert_array_equal(outs[5].data_sync(), [1, 2, 3])
    np.testing.assert_array_equal(outs[6].data_sync(), [-1, -2, -3])
    nf.dispose(outs)
    assert nf.memory().num_bytes == before.num_bytes
    # inside tidy the outputs are tracked: those not returned are freed
    kept = nf.tidy(lambda: [nf.add(a, b), a + 2.0, nf.neg(a)][1])
    np.testing.assert_array_equal(kept.data_sync(), [3, 4, 5])
    kept.dispose()
    assert nf.memory().num_tensors == before.num_tensors
    nf.dispose([a, b])


def test_inputs_stored_in_another_shape_fall_back(backend):
    flat = nf.tensor(np.arange(6, dtype=np.float32))
    x = nf.reshape(flat, [2, 3])  # shares flat's buffer, stored as [6]
    y = nf.tensor(np.ones((2, 3), np.float32))
    outs = [nf.add(x, y), x + 1.0, nf.exp(x), x * x]
    assert all(t.shape == (2, 3) for t in outs)
    np.testing.assert_allclose(outs[0].data_sync(), np.arange(6) + 1)
    np.testing.assert_allclose(outs[1].data_sync(), np.arange(6) + 1)
    np.testing.assert_allclose(outs[2].data_sync(), np.exp(np.arange(6)), rtol=1e-6)
    np.testing.assert_allclose(outs[3].data_sync(), np.arange(6) ** 2)
    nf.dispose([flat, x, y, *outs])


def test_gradients_profiles_and_debug_mode_see_every_kernel(backend):
    a = nf.tensor([1.0, 2.0])
    # the tape records direct-path ops
    g = nf.grad(lambda x: nf.sum(nf.mul(nf.exp(x), x) + 1.0))(a)
    np.testing.assert_allclose(g.data_sync(), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])), rtol=1e-5)
    g.dispose()
    # profile() lists them
    info = nf.profile(lambda: nf.tidy(lambda: nf.neg(nf.add(a, a)) - 1.0))
    assert [k.name for k in info.kernels] == ["Add", "Neg", "Sub"]
    info.result.dispose()
    # debug mode checks their outputs for NaN
    neg = nf.tensor([-1.0])
    nf.env().set("DEBUG", True)
    try:
        with pytest.raises(Exception, match="NaN|Infinity"):
            nf.log(neg)
    finally:
        nf.env().set("DEBUG", False)
    nf.dispose([a, neg])


def test_disposed_inputs_and_other_backends(backend):
    a = nf.tensor([1.0, 2.0])
    a.dispose()
    with pytest.raises(nf.DisposedTensorError, match="disposed"):
        nf.add(a, a)
    with pytest.raises(Exception, match="disposed"):
        nf.exp(a)
    with pytest.raises(Exception, match="disposed"):
        a + 1.0
    other = "cpu" if backend != "cpu" else "torch"
    if nf.find_backend(other) is None:
        return
    nf.set_backend(other)
    b = nf.tensor([1.0, 2.0])
    nf.set_backend(backend)
    c = nf.tensor([3.0, 4.0])
    s = b + c  # b moves to the active backend first
    assert s.backend_name == backend and b.backend_name == backend
    np.testing.assert_array_equal(s.data_sync(), [4, 6])
    nf.dispose([b, c, s])


def test_replacing_a_kernel_drops_its_direct_form():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    original = get_kernel("Add", "cpu")
    direct = direct_table("cpu")["Add"]

    def doubled(backend, inputs, attrs):  # a user's kernel: a + b, twice
        a, b = (backend.values(t.data_id) for t in inputs)
        return backend.store(np.asarray((a + b) * 2, np.float32)), inputs[0].shape, "float32"

    try:
        register_kernel("Add", "cpu", doubled)
        assert "Add" not in direct_table("cpu")
        x = nf.tensor([1.0, 2.0])
        y = nf.add(x, x)
        np.testing.assert_array_equal(y.data_sync(), [4, 8])
        nf.dispose([x, y])
    finally:
        register_kernel("Add", "cpu", original.kernel_func)
        register_direct("Add", "cpu", direct)
        nf.set_backend(previous)


def test_register_direct_needs_the_kernel():
    with pytest.raises(KeyError, match="register_direct: kernel 'NoSuchKernel'"):
        register_direct("NoSuchKernel", "cpu", np.add)
