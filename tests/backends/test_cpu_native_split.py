"""Matrix products split over native threads (``ndflow/backends/cpu/native/csrc/gemm_pool.c``, ``native_split.py``).

Each chunk of rows (or of columns) is one ``cblas_sgemm`` of numpy's OpenBLAS, then the epilogue: the result
must equal, bit for bit, ``np.matmul`` of the same rows (columns) followed by numpy's epilogue, whoever computed
the chunk; the whole product is then float32-close to one ``np.matmul`` (OpenBLAS's kernels depend on the
number of rows)."""

from __future__ import annotations

import shutil
import sysconfig
import threading

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.native import native_split
from ndflow.backends.cpu.native import parallel as cpu_parallel

RNG = np.random.default_rng(11)
MODULE = native_split._load()
needs_module = pytest.mark.skipif(MODULE is None, reason=f"native split unavailable: {native_split.status()}")


@pytest.fixture
def sgemm_path():
    """Products on OpenBLAS's sgemm (not the AVX-512 kernel of test_cpu_avx512_kernels.py)."""
    nf.env().set("CPU_AVX512", False)
    yield
    nf.env().set("CPU_AVX512", True)


def test_built_where_a_compiler_exists():
    """pip install builds the module wherever a C compiler exists (setup.py, optional=True)."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip("no C compiler here")
    assert MODULE is not None, native_split.status()


def _epilogue(y: np.ndarray, bias, add, act: int, alpha: float, slopes) -> np.ndarray:
    """numpy's epilogue, in the kernels' order: bias, residual, activation (as the numba kernels)."""
    y = y.copy()
    if bias is not None:
        y += bias
    if add is not None:
        y += add
    zero, six, one = np.float32(0), np.float32(6), np.float32(1)
    if act == 1:
        y = np.where(y < zero, zero, y)
    elif act == 2:
        y = np.where(y < zero, zero, y)
        y = np.where(y > six, six, y)
    elif act == 3:
        y = y * np.where(y < zero, np.float32(alpha), one)
    elif act == 4:
        y = y * np.where(y < zero, slopes, one)
    return y.astype(np.float32)


def _chunked_reference(a, b, bias, add, act, alpha, slopes, chunk) -> np.ndarray:
    rows = []
    for r0 in range(0, a.shape[0], chunk):
        part = np.matmul(a[r0 : r0 + chunk], b)
        rows.append(_epilogue(part, bias, None if add is None else add[r0 : r0 + chunk], act, alpha, slopes))
    return np.concatenate(rows) if rows else np.empty((0, b.shape[1]), np.float32)


def _special(shape) -> np.ndarray:
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[: min(6, flat.size)] = [-0.0, 0.0, np.nan, np.inf, -np.inf, 7.0][: min(6, flat.size)]
    return x


@needs_module
@pytest.mark.parametrize("act", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(
    ("m", "k", "n", "chunk"), [(100, 7, 5, 16), (64, 33, 40, 64), (257, 16, 24, 40), (31, 3, 2, 16)]
)
def test_chunks_equal_numpy_on_the_same_rows(act, threads, m, k, n, chunk, sgemm_path):
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    bias, add, slopes = _special((n,)), _special((m, n)), RNG.standard_normal(n).astype(np.float32)
    want = _chunked_reference(a, b, bias, add, act, 0.3, slopes, chunk)
    out = np.full((m, n), 123.0, np.float32)
    MODULE.matmul(a, b, out, bias, add, act, threads, chunk, 0.3, slopes if act == 4 else None)
    np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))


def _column_reference(a, b, bias, add, act, alpha, slopes, chunk) -> np.ndarray:
    cols = []
    for c0 in range(0, b.shape[1], chunk):
        part = np.matmul(a, np.ascontiguousarray(b[:, c0 : c0 + chunk]))
        cut = slice(c0, c0 + chunk)
        sl = None if slopes is None else slopes[cut]
        cols.append(
            _epilogue(part, None if bias is None else bias[cut], None if add is None else add[:, cut], act, alpha, sl)
        )
    return np.concatenate(cols, axis=1) if cols else np.empty((a.shape[0], 0), np.float32)


@needs_module
@pytest.mark.parametrize("act", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(("m", "k", "n", "chunk"), [(36, 40, 96, 32), (9, 7, 50, 16), (100, 33, 64, 48), (3, 3, 6, 2)])
def test_column_chunks_equal_numpy_on_the_same_columns(act, threads, m, k, n, chunk, sgemm_path):
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    bias, add, slopes = _special((n,)), _special((m, n)), RNG.standard_normal(n).astype(np.float32)
    want = _column_reference(a, b, bias, add, act, 0.3, slopes, chunk)
    out = np.full((m, n), 123.0, np.float32)
    MODULE.matmul(a, b, out, bias, add, act, threads, chunk, 0.3, slopes if act == 4 else None, True)
    np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))
    plain = np.full((m, n), 123.0, np.float32)
    MODULE.matmul(a, b, plain, None, None, 0, threads, chunk, 0.0, None, True)
    np.testing.assert_array_equal(plain, _column_reference(a, b, None, None, 0, 0.0, None, chunk))


@needs_module
@pytest.mark.parametrize(
    ("m", "k", "n", "by_cols", "chunk"),
    [
        (36, 256, 320, True, 160),
        (16, 256, 512, True, 256),
        (8, 1024, 96, True, 48),
        (120, 256, 256, False, 60),
        (36, 512, 48, False, 18),
    ],
)
def test_few_rows_split_by_columns(monkeypatch, m, k, n, by_cols, chunk):
    """Under 112 rows (and from 8) a product splits by columns, one chunk per thread; else by rows."""
    calls = []

    class Spy:
        def matmul(self, *args):
            calls.append(args)
            return MODULE.matmul(*args)

        def __getattr__(self, name):
            return getattr(MODULE, name)

    monkeypatch.setattr(native_split, "_load", Spy)
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    out = np.empty((m, n), np.float32)
    assert native_split.matmul_into(a, b, out, 2)
    assert [(c[7], c[-1]) for c in calls] == [(chunk, by_cols)]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-3)


@needs_module
def test_without_bias_or_residual_and_empty(sgemm_path):
    a, b = RNG.standard_normal((50, 8)).astype(np.float32), RNG.standard_normal((8, 3)).astype(np.float32)
    out = np.empty((50, 3), np.float32)
    MODULE.matmul(a, b, out, None, None, 0, 2, 16)
    np.testing.assert_array_equal(out, _chunked_reference(a, b, None, None, 0, 0, None, 16))
    empty = np.empty((0, 3), np.float32)
    MODULE.matmul(np.empty((0, 8), np.float32), b, empty, None, None, 1, 2, 16)


@needs_module
def test_bad_arguments_are_refused():
    a, b = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    out = np.empty((4, 2), np.float32)
    with pytest.raises(ValueError, match="b must be"):
        MODULE.matmul(a, np.ones((2, 2), np.float32), out, None, None, 0, 2, 16)
    with pytest.raises(ValueError, match="out must be"):
        MODULE.matmul(a, b, np.empty((4, 3), np.float32), None, None, 0, 2, 16)
    with pytest.raises(ValueError, match="a must be"):
        MODULE.matmul(a.astype(np.float64), b, out, None, None, 0, 2, 16)
    with pytest.raises(ValueError, match="slopes"):
        MODULE.matmul(a, b, out, None, None, 4, 2, 16)
    with pytest.raises(ValueError, match="bias must be"):
        MODULE.matmul(a, b, out, np.ones(3, np.float32), None, 0, 2, 16)


@needs_module
def test_matmul_into_declines_what_it_does_not_do(sgemm_path):
    a, b = RNG.standard_normal((512, 64)).astype(np.float32), RNG.standard_normal((64, 64)).astype(np.float32)
    out = np.zeros((512, 64), np.float32)
    assert not native_split.matmul_into(a[:, :32], b[:32], out, 2)  # a view that is not C-contiguous
    assert not native_split.matmul_into(a, b, out, 1)  # one thread: nothing to split
    assert not native_split.matmul_into(a, b, out, 2, act=5)  # sigmoid: not in the C epilogue
    assert not native_split.matmul_into(a[:8], b, out[:8], 2)  # too small
    assert not out.any()
    previous = nf.env().get("CPU_NATIVE_SPLIT")
    nf.env().set("CPU_NATIVE_SPLIT", False)
    try:
        assert not native_split.matmul_into(a, b, out, 2)
        assert native_split.status().startswith("off")
    finally:
        nf.env().set("CPU_NATIVE_SPLIT", previous)
    assert native_split.matmul_into(a, b, out, 2)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)


@needs_module
@pytest.mark.parametrize("own", [False, True])
def test_concurrent_callers_each_get_their_product(own):
    """Two Python threads split products at once (one current job at a time in the pool: no mix-up)."""
    pairs = [(RNG.standard_normal((600, 48)).astype(np.float32), RNG.standard_normal((48, 40)).astype(np.float32))
             for _ in range(2)]  # fmt: skip
    results: list = [None, None]
    nf.env().set("CPU_AVX512", own)  # OpenBLAS, or the C module's own kernel

    def run(i: int) -> None:
        a, b = pairs[i]
        outs = []
        for _ in range(50):
            out = np.empty((600, 40), np.float32)
            MODULE.matmul(a, b, out, None, None, 0, 2, 64)
            outs.append(out)
        results[i] = outs

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    nf.env().set("CPU_AVX512", True)
    for (a, b), outs in zip(pairs, results, strict=True):
        for out in outs:
            np.testing.assert_array_equal(out, outs[0])
        if not own:
            np.testing.assert_array_equal(outs[0], _chunked_reference(a, b, None, None, 0, 0, None, 64))


@pytest.mark.parametrize("activation", ["relu6", "prelu", "leakyrelu", "sigmoid", "elu"])
@pytest.mark.parametrize(("size", "stride"), [(1, 1), (3, 1), (3, 2)])
def test_convolutions_with_and_without_the_split(activation, size, stride):
    """1x1 (one product) and 3x3 (im2col, then one product) convolutions through the cpu kernel: the same bits
    on every run, float32-close to the flag off (elu: not in the C epilogue, the numba path runs)."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x = nf.tensor(RNG.standard_normal((1, 40, 40, 24)).astype(np.float32))
    w = nf.tensor(RNG.standard_normal((size, size, 24, 32)).astype(np.float32))
    b = nf.tensor(RNG.standard_normal(32).astype(np.float32))
    slopes = nf.tensor(RNG.standard_normal(32).astype(np.float32))
    extra = {"prelu_activation_weights": slopes} if activation == "prelu" else {}

    def conv() -> np.ndarray:
        y = nf.fused.conv2d(x=x, filter=w, strides=stride, pad="same", bias=b, activation=activation, **extra)
        value = y.numpy()
        y.dispose()
        return value

    try:
        runs = {}
        for on in (False, True, True):
            nf.env().set("CPU_NATIVE_SPLIT", on)
            runs.setdefault(on, []).append(conv())
        np.testing.assert_array_equal(runs[True][0], runs[True][1])
        np.testing.assert_allclose(runs[True][0], runs[False][0], rtol=1e-5, atol=1e-4)
    finally:
        nf.env().reset()
        nf.dispose([x, w, b, slopes])
        nf.set_backend(previous)


def test_parallel_matmul_uses_it_for_float32():
    a, b = RNG.standard_normal((700, 64)).astype(np.float32), RNG.standard_normal((64, 80)).astype(np.float32)
    got = cpu_parallel.matmul(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(cpu_parallel.matmul(a64, b64), a64 @ b64)  # float64: numpy's product


@needs_module
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_splits_with_fresh_workers():
    """After a fork the child has none of the parent's workers (nor a lock one of them held): it starts its own."""
    import os

    a, b = RNG.standard_normal((600, 64)).astype(np.float32), RNG.standard_normal((64, 48)).astype(np.float32)
    out = np.empty((600, 48), np.float32)
    assert native_split.matmul_into(a, b, out, 2)  # the parent's workers exist now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's result is its exit code
        child = np.empty((600, 48), np.float32)
        ok = native_split.matmul_into(a, b, child, 2) and np.array_equal(child, out)
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
