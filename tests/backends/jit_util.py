"""Helpers of the compiled-kernel tests: run an op with the JIT off and on."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.native import native_split
from ndflow.backends.cpu.plans import conv as plans

needs_numba = pytest.mark.skipif(not jit.numba_available(), reason="numba is not installed")
#: For tests of the C module's AVX-512 kernels: skipped on a processor without AVX-512F, with the C module not
#: built, or with flag CPU_AVX512 off (NDFLOW_FLAGS=CPU_AVX512=false, how CI emulates such a processor).
needs_avx512 = pytest.mark.skipif(
    not native_split.avx512_enabled(), reason="needs the C module's AVX-512 kernels (AVX-512F, flag CPU_AVX512 on)"
)


@pytest.fixture
def numba_kernels():
    """The numba kernels and OpenBLAS, not the C module's AVX-512 kernels (test_cpu_avx512_kernels.py)."""
    before = nf.env().get("CPU_AVX512")
    nf.env().set("CPU_AVX512", False)
    yield
    nf.env().set("CPU_AVX512", before)


def plans_on_cpu() -> Iterator[None]:
    """The body of a fixture: the cpu backend with an empty plan cache; the flags, the cache and the backend
    restored afterwards."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    plans.PLANS.clear()
    yield
    nf.env().reset()
    plans.PLANS.clear()
    nf.set_backend(previous)


def run_both(fn: Callable[[], nf.Tensor]) -> list[np.ndarray]:
    """``fn()`` (which returns a tensor) on cpu with the JIT off, then on; both results as numpy."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    try:
        results = []
        nf.env().set("CPU_AVX512", False)  # numba's kernels (the AVX-512 ones: test_cpu_avx512_kernels.py)
        for on in (False, True):
            nf.env().set("CPU_JIT", on)
            assert (jit.kernels() is not None) == on, jit.status()  # the compiled path really runs
            t = fn()
            results.append(t.numpy())
            nf.dispose(t)
        return results
    finally:
        nf.env().reset()
        nf.set_backend(previous)
