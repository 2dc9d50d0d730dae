"""Helpers of the compiled-kernel tests: run an op with the JIT off and on."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu import jit

needs_numba = pytest.mark.skipif(not jit.numba_available(), reason="numba is not installed")


def run_both(fn: Callable[[], nf.Tensor]) -> list[np.ndarray]:
    """``fn()`` (which returns a tensor) on cpu with the JIT off, then on; both results as numpy."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    try:
        results = []
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
