"""Flag ``CPU_KEEP_MEMORY`` (``ndflow/backends/cpu/native/malloc_tuning.py``): glibc keeps freed array memory for the
next inference, so that a model's large intermediates stop page-faulting on every run."""

from __future__ import annotations

import resource

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.native import malloc_tuning

needs_glibc = pytest.mark.skipif(not malloc_tuning.available(), reason="not Linux with glibc")


def _faults_of_large_temporaries() -> int:
    """Minor page faults of allocating, touching and freeing 24 MiB of 3-6 MiB arrays, five times."""
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        arrays = [np.ones((size << 20) // 4, np.float32) for size in (3, 4, 5, 6, 6)]
        del arrays
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start


@needs_glibc
def test_on_by_default_and_freed_memory_is_reused():
    nf.set_backend("cpu")
    assert nf.env().get("CPU_KEEP_MEMORY") is True
    assert malloc_tuning.status() == "on"
    _faults_of_large_temporaries()  # the heap grows once
    assert _faults_of_large_temporaries() < 200  # 24 MiB of fresh pages would be 6,000 faults


@needs_glibc
def test_off_restores_glibc_defaults_and_on_again():
    nf.set_backend("cpu")
    try:
        nf.env().set("CPU_KEEP_MEMORY", False)
        assert malloc_tuning.status() == "off"
        assert _faults_of_large_temporaries() > 1000  # blocks above 128 KiB are fresh mappings again
        nf.env().set("CPU_KEEP_MEMORY", True)
        assert malloc_tuning.status() == "on"
    finally:
        nf.env().reset()
        malloc_tuning.apply(nf.env().get("CPU_KEEP_MEMORY"))


def test_apply_reports_what_holds():
    want = malloc_tuning.available()
    assert malloc_tuning.apply(True) is want
    assert malloc_tuning.apply(True) is want  # a second call changes nothing
