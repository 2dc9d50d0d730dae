"""Work split over the machine's cores by ndflow itself: large matrix products by rows, blocked kernels by block.

OpenBLAS's own threads spin while they wait for each other: on a machine where another process holds a core,
a product on two OpenBLAS threads waits a scheduler slice at every synchronisation (10x slower, measured), so
the cpu backend runs OpenBLAS on one thread (``CPU_BLAS_THREADS``). Here the split is coarse instead: each
worker runs a single-threaded product (or a block of a kernel that releases the GIL) on its share of rows, and
the caller, which does a share itself, then blocks on the others without spinning. On an idle machine that
uses every core; next to a busy process the shares run one after the other, no slower than one thread.

Flag ``CPU_THREADS``: how many threads (the caller included) take part; 0 (default) means the cores this
process may run on, 1 turns the split off. Work under ``MIN_SPLIT_FLOPS`` is not split.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ....core.flags import env
from . import native_split

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

# Work below this many floating-point operations runs on the calling thread: waking a worker costs 75-85 us
# (median, measured on a 2-core VM), which a product of 30 MFLOP (about 0.3 ms on one core) does not repay;
# from 40-60 MFLOP the split saves a third.
MIN_SPLIT_FLOPS = 40_000_000

_POOL: dict[str, Any] = {"executor": None, "workers": 0}


@functools.cache
def _cores() -> int:
    """The cores this process may run on, read once (a system call: 1-3 us, asked on every product)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_threads(value: object) -> None:
    """Set hook of the flag ``CPU_THREADS`` (registered in :mod:`..flags`): refuses a negative count."""
    n = int(value)  # type: ignore[call-overload]
    if n < 0:
        raise ValueError(f"CPU_THREADS must be 0 (every core) or a positive count, got {n}")


def threads() -> int:
    """How many threads share split work now (``CPU_THREADS``; 1 while OpenBLAS runs several threads itself)."""
    n = int(env().get("CPU_THREADS"))
    if n == 0:
        n = _cores()
    if n > 1 and int(env().get("CPU_BLAS_THREADS")) != 1:
        return 1  # OpenBLAS splits products itself: two layers of threads would oversubscribe the cores
    return max(1, n)


def _executor(workers: int) -> ThreadPoolExecutor:
    if _POOL["workers"] != workers:
        from concurrent.futures import ThreadPoolExecutor  # here: not a cost of ``import ndflow``

        if _POOL["executor"] is not None:
            _POOL["executor"].shutdown(wait=True)
        _POOL["executor"] = ThreadPoolExecutor(workers, thread_name_prefix="ndflow-cpu")
        _POOL["workers"] = workers
    return _POOL["executor"]


def spans(n: int, parts: int, align: int = 1) -> list[tuple[int, int]]:
    """``[0, n)`` cut into at most ``parts`` contiguous spans of near-equal length (multiples of ``align``)."""
    parts = max(1, min(parts, n // max(1, align) or 1))
    step = -(-n // parts)
    step = -(-step // align) * align
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def run_spans(fn: Callable[[int, int, int], None], n: int, parts: int, align: int = 1) -> None:
    """``fn(part, start, stop)`` for each span of :func:`spans`; the caller runs the first span itself.
    ``fn`` must release the GIL for the spans to overlap (numpy products, ``nogil`` compiled kernels)."""
    if n <= 0:
        return
    cut = spans(n, parts, align)
    if len(cut) == 1:
        fn(0, *cut[0])
        return
    pool = _executor(len(cut) - 1)
    futures: list[Future] = [pool.submit(fn, i, s, e) for i, (s, e) in enumerate(cut) if i > 0]
    try:
        fn(0, *cut[0])
    finally:
        for f in futures:
            f.result()


def native_product_applies(m: int, k: int, n: int, parts: int) -> bool:
    """Whether :func:`matmul` tries the C module's product for float32 ``(m, k) @ (k, n)`` on ``parts`` threads."""
    return (parts > 1 and 2 * m * k * n >= native_split.MIN_FLOPS) or native_split.avx512_product(m, k)


def splits_rows(m: int, k: int, n: int, parts: int) -> bool:
    """Whether :func:`matmul` splits numpy's ``(m, k) @ (k, n)`` by rows over ``parts`` threads."""
    return parts > 1 and 2 * m * k * n >= MIN_SPLIT_FLOPS and m >= 2 * 16


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` for a 2-D ``a`` and ``b``, split by rows of ``a`` over :func:`threads` when it is large enough
    (``plans/product.py`` binds the same decisions once per shape)."""
    m, k = a.shape
    n = b.shape[1]
    parts = threads()
    if a.dtype == np.float32 and b.dtype == np.float32 and native_product_applies(m, k, n, parts):
        target = np.empty((m, n), dtype=np.float32) if out is None else out
        if native_split.matmul_into(a, b, target, parts):
            return target
    if not splits_rows(m, k, n, parts):
        return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty((m, n), dtype=np.result_type(a, b))

    def rows(_: int, start: int, stop: int) -> None:
        np.matmul(a[start:stop], b, out=out[start:stop])

    run_spans(rows, m, parts, align=16)
    return out
