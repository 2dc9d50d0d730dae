"""The compiled kernels' loading (``ndflow.backends.cpu.numba.warmup``): the first call's decision between the
compiled kernels and the numpy paths, on a background thread (flag ``CPU_JIT_BACKGROUND``) or on the caller's.

The background thread is held by a gate until the test opens it, so what each call sees is deterministic.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from jit_util import needs_numba

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.numba import warmup
from ndflow.backends.cpu.numba._signatures import SIGNATURES

X = np.random.default_rng(3).standard_normal((1, 9, 9, 8)).astype(np.float32)


@pytest.fixture
def fresh_jit():
    """The cpu backend with the compiled kernels forgotten (as at the start of a process); loaded again after."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    nf.env().set("CPU_AVX512", False)  # numba's pooling kernel, not the C module's
    jit.forget()
    yield
    warmup.wait()
    jit.forget()
    nf.env().reset()
    nf.set_backend(previous)


def _pool() -> np.ndarray:
    x = nf.tensor(X)
    y = nf.max_pool(x, 3, 2, "same")
    out = y.numpy()
    nf.dispose([x, y])
    return out


def _numpy_pool() -> np.ndarray:
    nf.env().set("CPU_JIT", False)
    try:
        return _pool()
    finally:
        nf.env().set("CPU_JIT", True)


@needs_numba
def test_synchronous_first_call_loads_the_kernels(fresh_jit):
    nf.env().set("CPU_JIT_BACKGROUND", False)
    assert jit.kernels() is not None  # loaded on this call, no thread left running
    assert warmup.wait(0)


@needs_numba
def test_first_calls_run_the_fallback_until_the_background_load_finishes(fresh_jit):
    expected = _numpy_pool()
    gate = threading.Event()
    warmup.reset(gate)
    nf.env().set("CPU_JIT_BACKGROUND", True)
    assert jit.kernels() is None  # the load started, held by the gate
    assert not warmup.wait(0)
    version = nf.env().version
    np.testing.assert_array_equal(_pool(), expected)  # the numpy path's result
    assert jit.kernels() is None
    gate.set()
    assert warmup.wait(60)
    assert nf.env().version > version  # decisions kept while the kernels were missing are remade
    assert jit.kernels() is not None
    np.testing.assert_array_equal(_pool(), expected)  # the compiled path agrees


@needs_numba
def test_switching_to_synchronous_waits_for_the_background_load(fresh_jit):
    gate = threading.Event()
    warmup.reset(gate)
    nf.env().set("CPU_JIT_BACKGROUND", True)
    assert jit.kernels() is None
    threading.Timer(0.05, gate.set).start()
    nf.env().set("CPU_JIT_BACKGROUND", False)
    assert jit.kernels() is not None


@needs_numba
def test_a_load_failure_turns_the_jit_off_once(fresh_jit, monkeypatch, caplog):
    def broken(ahead: bool = True):
        raise ImportError("numba is broken here")

    monkeypatch.setattr(warmup, "load", broken)
    nf.env().set("CPU_JIT_BACKGROUND", False)
    with caplog.at_level("WARNING", logger="ndflow"):
        assert jit.kernels() is None
        assert jit.kernels() is None
    assert [r.message for r in caplog.records].count(
        "cpu backend: numba kernels unavailable, using numpy (ImportError: numba is broken here)"
    ) == 1
    assert "numba is broken here" in jit.status()
    expected = _pool()  # the numpy path still runs
    monkeypatch.undo()
    jit.forget()
    np.testing.assert_array_equal(_pool(), expected)


@needs_numba
def test_recorded_signatures_name_kernels_and_compile():
    found = warmup.dispatchers()
    for key, signatures in SIGNATURES.items():
        assert key in found, f"{key} is recorded but is no public kernel (rerun tools/record_jit_signatures.py)"
        for signature in signatures:
            assert tuple(warmup.spell(warmup.parse(t)) for t in signature) == tuple(signature)
    warmup.load(ahead=True)
    compiled = warmup.compiled_signatures()
    for key, signatures in SIGNATURES.items():
        assert set(map(tuple, signatures)) <= set(compiled.get(key, ())), key


def test_flag_is_registered_and_off_under_the_tests():
    assert nf.env().get("CPU_JIT_BACKGROUND") is False  # tests/conftest.py: each call takes the path it tests
