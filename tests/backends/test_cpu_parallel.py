"""ndflow's own split of large products over the cores (ndflow/backends/cpu/native/parallel.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.native import parallel


@pytest.mark.parametrize(("n", "parts", "align"), [(10, 2, 1), (7, 3, 1), (100, 2, 16), (5, 4, 16), (1, 8, 1)])
def test_spans_cover_the_range_once(n, parts, align):
    cut = parallel.spans(n, parts, align)
    assert cut[0][0] == 0 and cut[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(cut, cut[1:], strict=False))
    assert len(cut) <= parts
    assert all((s % align) == 0 for s, _ in cut)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", [(4, 3, 5), (300, 200, 150), (1000, 64, 96), (33, 4000, 70)])
def test_matmul_equals_numpy(threads, shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    nf.env().set("CPU_THREADS", threads)
    got = parallel.matmul(a, b)
    # OpenBLAS blocks a share's edge rows differently from the whole product's: float32 rounding differs
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b), rtol=1e-4, atol=1e-4 * np.sqrt(k))
    out = np.empty((m, n), np.float32)
    assert parallel.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, got)


def test_large_products_run_on_several_threads():
    nf.env().set("CPU_THREADS", 2)
    seen: set[str] = set()
    lock = threading.Lock()

    def work(part: int, start: int, stop: int) -> None:
        with lock:
            seen.add(threading.current_thread().name)

    parallel.run_spans(work, 100, parallel.threads())
    assert len(seen) == 2
    assert any(name.startswith("ndflow-cpu") for name in seen)


def test_a_failing_share_raises_in_the_caller():
    nf.env().set("CPU_THREADS", 2)

    def work(part: int, start: int, stop: int) -> None:
        if part == 1:
            raise RuntimeError("share 1 failed")

    with pytest.raises(RuntimeError, match="share 1 failed"):
        parallel.run_spans(work, 10, 2)


def test_threads_flag():
    nf.env().set("CPU_THREADS", 3)
    assert parallel.threads() == 3
    nf.env().set("CPU_THREADS", 1)
    assert parallel.threads() == 1
    nf.env().set("CPU_THREADS", 2)
    nf.env().set("CPU_BLAS_THREADS", 2)  # OpenBLAS splits by itself: no second layer
    assert parallel.threads() == 1
    with pytest.raises(ValueError, match="CPU_THREADS must be 0"):
        nf.env().set("CPU_THREADS", -1)
