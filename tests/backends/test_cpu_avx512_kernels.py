"""The C module's AVX-512 kernels: products (``csrc/gemm_avx512.c``, by blocks of 64 columns), 3x3 / 5x5
depthwise rows (``csrc/dw_avx512.c``) and max pooling rows (``csrc/pool_avx512.c``).

Each output value is a fixed sequence of fused multiply-adds over the inner dimension, then the epilogue: it
must not depend on the row's position, the chunk or the thread (checked bit for bit); the epilogue must be the
other kernels' (bit for bit on the same sums, NaN, infinities and signed zeros included); sums that are exact
equal numpy's; others are float32-close to float64."""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_avx512, needs_numba
from test_cpu_native_split import _epilogue, _special

import ndflow as nf
from ndflow.backends.cpu.native import native_split
from ndflow.backends.cpu.native import parallel as cpu_parallel
from ndflow.backends.cpu.plans import conv as plans

RNG = np.random.default_rng(21)
MODULE = native_split._load()
needs_kernel = pytest.mark.skipif(
    MODULE is None or MODULE.avx512_k_max() == 0,
    reason="the AVX-512 kernel needs the C module and a CPU with AVX-512F",
)


def _product(a, b, bias=None, add=None, act=0, alpha=0.0, slopes=None, threads=1, chunk=None) -> np.ndarray:
    out = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
    MODULE.matmul(a, b, out, bias, add, act, threads, chunk or max(1, a.shape[0]), alpha, slopes)
    return out


def _floats(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@needs_kernel
@pytest.mark.parametrize("n", [1, 5, 16, 17, 24, 32, 33, 64, 65, 130])
@pytest.mark.parametrize(("m", "k"), [(1, 1), (7, 3), (8, 64), (9, 5), (100, 27)])
def test_exact_sums_equal_numpy(m, k, n):
    """Small integers: every product and partial sum is exact, so any order gives numpy's bits."""
    a = RNG.integers(-8, 9, (m, k)).astype(np.float32)
    b = RNG.integers(-8, 9, (k, n)).astype(np.float32)
    np.testing.assert_array_equal(_product(a, b), a @ b)


@needs_kernel
@pytest.mark.parametrize(
    ("m", "k", "n"), [(203, 24, 24), (64, 300, 32), (37, 9, 16), (50, 1024, 7), (70, 33, 100), (9, 64, 129)]
)
def test_close_to_float64(m, k, n):
    a, b = _floats(m, k), _floats(k, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(_product(a, b), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@needs_kernel
@pytest.mark.parametrize("n", [8, 16, 24, 32, 48, 64, 80, 150])
def test_a_row_does_not_depend_on_its_block_chunk_or_thread(n):
    m, k = 203, 40
    a, b, bias, add = _floats(m, k), _floats(k, n), _floats(n), _floats(m, n)
    whole = _product(a, b, bias, add, 2)
    for threads, chunk in [(2, 5), (3, 16), (2, 64)]:
        np.testing.assert_array_equal(_product(a, b, bias, add, 2, threads=threads, chunk=chunk), whole)
    for start in (0, 1, 3, 7, 100, 202):  # the rows land at other positions of the 4- and 8-row blocks
        part = _product(a[start:], b, bias, add[start:], 2)
        np.testing.assert_array_equal(part, whole[start:])


@needs_kernel
@pytest.mark.parametrize("act", [0, 2, 4])
@pytest.mark.parametrize(("m", "n", "chunk"), [(36, 320, 160), (9, 100, 48), (50, 64, 16), (20, 130, 70)])
def test_column_chunks_equal_the_row_split(act, m, n, chunk):
    """A column split (each chunk packing its own columns) sums every value as the row split does."""
    k = 70
    a, b, bias, add, slopes = _floats(m, k), _floats(k, n), _floats(n), _floats(m, n), _floats(n)
    sl = slopes if act == 4 else None
    rows = _product(a, b, bias, add, act, 0.0, sl, threads=2, chunk=8)
    for threads in (1, 2, 3):
        cols = np.full((m, n), np.nan, np.float32)
        MODULE.matmul(a, b, cols, bias, add, act, threads, chunk, 0.0, sl, True)
        np.testing.assert_array_equal(cols, rows)


@needs_kernel
@pytest.mark.parametrize("act", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("n", [3, 16, 20, 32, 40, 64, 100])
def test_the_epilogue_is_the_other_kernels(act, n):
    """Bias, residual and activation on the kernel's own sums: numpy's epilogue of those sums, bit for bit."""
    m, k = 45, 12
    a, b = _floats(m, k), _floats(k, n)
    bias, add, slopes = _special((n,)), _special((m, n)), _floats(n)
    sums = _product(a, b)
    for bias_, add_ in [(bias, add), (bias, None), (None, add), (None, None)]:
        got = _product(a, b, bias_, add_, act, 0.3, slopes if act == 4 else None, threads=2, chunk=8)
        want = _epilogue(sums, bias_, add_, act, 0.3, slopes)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@needs_kernel
@pytest.mark.parametrize("act", [0, 2, 4])
@pytest.mark.parametrize(
    ("k", "n"), [(1, 1), (3, 16), (40, 17), (128, 128), (70, 150), (1024, 33), (300, 437), (1023, 130)]
)
def test_few_rows_read_the_right_matrix_unpacked_with_the_same_sums(act, k, n):
    """Products of fewer than 8 rows skip the packed copy (1-2 rows over a large right matrix stream it row by
    row; split by columns too): each row's values are those of the same row in a packed product of more rows,
    bit for bit (epilogue included)."""
    m = 12
    a, b, bias, add, slopes = _floats(m, k), _floats(k, n), _floats(n), _floats(m, n), _floats(n)
    sl = slopes if act == 4 else None
    packed = _product(a, b, bias, add, act, 0.1, sl)
    for rows in range(1, 8):
        for start in (0, m - rows):
            got = _product(a[start : start + rows], b, bias, add[start : start + rows], act, 0.1, sl)
            np.testing.assert_array_equal(got, packed[start : start + rows])
    for threads, chunk in [(2, 32), (2, 64), (3, 48)]:  # column chunks of the unpacked form
        cols = np.full((3, n), np.nan, np.float32)
        MODULE.matmul(a[:3], b, cols, bias, add[:3], act, threads, chunk, 0.1, sl, True)
        np.testing.assert_array_equal(cols, packed[:3])
    want = a[:3].astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(_product(a[:3], b), want, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(want).max()))


@needs_kernel
def test_a_short_inner_dimension_and_enough_rows():
    assert native_split.avx512_product(native_split.AVX512_MIN_ROWS, native_split.AVX512_K_MAX)
    assert not native_split.avx512_product(native_split.AVX512_MIN_ROWS, native_split.AVX512_K_MAX + 1)
    assert not native_split.avx512_product(native_split.AVX512_MIN_ROWS - 1, 24)  # no rows
    assert native_split.avx512_product(1, 24)  # one row: the unpacked form
    # few rows over a large right matrix: split by columns (on two threads), else one unsplit product
    assert native_split.product_split(1, 288, 1404, 2) == (2, 704, True)
    assert native_split.product_split(1, 128, 142, 2) == (1, 16, False)
    # one thread is enough: a product under the split's minimum still runs it
    a, b, out = _floats(40, 16), _floats(16, 24), np.empty((40, 24), np.float32)
    assert 2 * 40 * 16 * 24 < native_split.MIN_FLOPS
    assert native_split.matmul_into(a, b, out, 1)
    np.testing.assert_array_equal(out, _product(a, b))
    # wide products too, by blocks of 64 columns
    a, b = _floats(150, 40), _floats(40, 200)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(_product(a, b, threads=2, chunk=32), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@needs_kernel
def test_the_flag_turns_it_off():
    a, b = _floats(64, 24), _floats(24, 24)
    own = _product(a, b)
    nf.env().set("CPU_AVX512", False)
    try:
        assert MODULE.avx512_k_max() == 0 and not native_split.avx512_product(24, 24)
        np.testing.assert_array_equal(_product(a, b), np.matmul(a, b))  # one sgemm call on the same rows
        out = np.empty((64, 24), np.float32)
        assert not native_split.matmul_into(a, b, out, 1)  # one thread, nothing to split: the caller computes
    finally:
        nf.env().set("CPU_AVX512", True)
    assert MODULE.avx512_k_max() == native_split.AVX512_K_MAX
    np.testing.assert_array_equal(_product(a, b), own)


@needs_numba
@needs_kernel
@pytest.mark.parametrize("act", [0, 2, 4])
def test_convolution_jobs_equal_im2col_then_the_kernel(act):
    """A convolution job's chunks (im2col in the claiming thread) give the bits of the kernel on the whole
    column matrix."""
    from ndflow.backends.cpu.numba import kernels

    k = kernels()  # before _conv_rows, which imports the kernels' modules
    from ndflow.backends.cpu.numba import _conv_rows

    x = _floats(1, 21, 19, 5)
    static = (3, 3, 1, 1, 1, 1, 1, 1, 21, 19)
    rows, channels = 21 * 19, 24
    w2 = _floats(45, channels)
    bias, add, slopes = _floats(channels), _floats(rows, channels), _floats(channels)
    cols = np.empty((rows, 45), np.float32)
    k.im2col2d(x, cols, *static, 0, 21)
    sl = slopes if act == 4 else None
    want = _product(cols, w2, bias, add, act, 0.0, sl)
    for threads, chunk_rows in [(1, 21), (2, 1), (2, 3)]:
        y = np.full((rows, channels), np.nan, np.float32)
        address = _conv_rows.im2col_rows.address
        assert native_split.conv_into(address, x, static, w2, y, threads, chunk_rows * 19, bias, add, act, 0.0, sl)
        np.testing.assert_array_equal(y, want)


@needs_numba
@needs_kernel
def test_through_the_ops_close_to_openblas_and_the_same_on_every_run(monkeypatch):
    monkeypatch.setattr(cpu_parallel, "threads", lambda: 2)
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x = nf.tensor(_floats(1, 30, 30, 24))
    w1, w3, bias = nf.tensor(_floats(1, 1, 24, 24)), nf.tensor(_floats(3, 3, 24, 16)), nf.tensor(_floats(24))

    def run() -> list[np.ndarray]:
        a = nf.fused.conv2d(x=x, filter=w1, strides=1, pad="valid", bias=bias, activation="relu6")
        b = nf.conv2d(x, w3, 1, "same")
        values = [a.numpy(), b.numpy()]
        nf.dispose([a, b])
        return values

    try:
        first = run()
        for again in (run(), run()):
            for u, v in zip(first, again, strict=True):
                np.testing.assert_array_equal(u, v)
        nf.env().set("CPU_AVX512", False)
        try:
            openblas = run()
        finally:
            nf.env().set("CPU_AVX512", True)
        for u, v in zip(first, openblas, strict=True):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5 * np.abs(v).max())
    finally:
        nf.dispose([x, w1, w3, bias])
        nf.set_backend(previous)


# --------------------------------------------------------------------------- depthwise rows (dw_avx512.c)

needs_dw = pytest.mark.skipif(MODULE is None or not MODULE.dw_address(3), reason="needs the C module and AVX-512F")
_EMPTY = np.zeros(0, np.float32)


def _dw_reference(x, w3, sh, dh, dw, pt, pl, out_h, out_w) -> np.ndarray:
    """The K x K depthwise sums in float64 (taps outside the input skipped)."""
    b, h, wd, c = x.shape
    size = w3.shape[0]
    xp = np.zeros((b, h + 2 * size * dh + pt + sh * out_h, wd + 2 * size * dw + pl + out_w, c))
    xp[:, pt : pt + h, pl : pl + wd] = x
    y = np.zeros((b, out_h, out_w, c))
    for kh in range(size):
        for kw in range(size):
            rows = slice(kh * dh, kh * dh + sh * (out_h - 1) + 1, sh)
            y += xp[:, rows, kw * dw : kw * dw + out_w] * w3[kh, kw]
    return y


def _dw_rows(x, w3, static, out_shape, threads=1, chunk=None, bias=_EMPTY, add=_EMPTY, act=0, alpha=0.0, slopes=_EMPTY):
    y = np.full(out_shape, np.nan, np.float32)
    rows = out_shape[0] * out_shape[1]
    arrays = (x, w3, _EMPTY, y, bias, add, slopes)
    MODULE.run_rows(MODULE.dw_address(w3.shape[0]), arrays, (*static, act), (alpha,), rows, chunk or rows, threads)
    return y


DW_CASES = [
    # (x shape, filter size, stride, dilation, pads top/left, output size)
    ((1, 9, 11, 24), 3, 1, 1, (1, 1), (9, 11)),
    ((2, 7, 6, 7), 3, 1, 1, (0, 0), (5, 4)),
    ((1, 12, 13, 40), 3, 1, 2, (2, 2), (12, 13)),
    ((1, 10, 9, 16), 3, 2, 1, (1, 1), (5, 9)),  # a height stride (the width stride stays 1)
    ((1, 5, 3, 33), 3, 1, 1, (1, 1), (5, 3)),  # rows narrower than a block of four positions
    ((1, 11, 12, 20), 5, 1, 1, (2, 2), (11, 12)),
    ((2, 9, 14, 48), 5, 1, 1, (0, 0), (5, 10)),
    ((1, 8, 8, 576), 5, 1, 1, (2, 2), (8, 8)),
    ((1, 13, 10, 9), 5, 2, 2, (4, 4), (7, 10)),
]


@needs_dw
@pytest.mark.parametrize("case", DW_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[1]}-s{c[2]}-d{c[3]}")
def test_depthwise_rows_equal_on_every_thread_and_close_to_float64(case):
    shape, size, sh, dil, (pt, pl), (out_h, out_w) = case
    x, w3 = _floats(*shape), _floats(size, size, shape[3])
    static = (sh, 1, dil, dil, pt, pl)
    out_shape = (shape[0], out_h, out_w, shape[3])
    one = _dw_rows(x, w3, static, out_shape)
    want = _dw_reference(x, w3, sh, dil, dil, pt, pl, out_h, out_w)
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    for threads, chunk in [(2, 1), (3, 2), (2, 3)]:
        np.testing.assert_array_equal(_dw_rows(x, w3, static, out_shape, threads, chunk), one)


@needs_dw
@pytest.mark.parametrize("act", [0, 1, 2, 3, 4])
def test_depthwise_epilogue_is_the_other_kernels(act):
    shape, static = (1, 8, 10, 20), (1, 1, 1, 1, 1, 1)
    out_shape = shape
    x, w3 = _floats(*shape), _floats(3, 3, 20)
    bias, add, slopes = _special((20,)), _special(out_shape), _floats(20)
    sums = _dw_rows(x, w3, static, out_shape)
    for bias_, add_ in [(bias, add), (_EMPTY, _EMPTY), (bias, np.zeros((1, 1, 0, 0), np.float32))]:
        got = _dw_rows(x, w3, static, out_shape, 2, 3, bias_, add_, act, 0.3, slopes if act == 4 else _EMPTY)
        want = _epilogue(sums, bias_ if bias_.size else None, add_ if add_.size else None, act, 0.3, slopes)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@needs_avx512
@needs_numba
@needs_dw
def test_depthwise_through_the_op_for_unit_width_strides(monkeypatch):
    """Stride 1 runs the AVX-512 rows (close to numba's kernels); a width stride of 2 stays on numba's."""
    ran = []
    real = native_split.dw_address
    monkeypatch.setattr(native_split, "dw_address", lambda size: ran.append(size) or real(size))
    plans.PLANS.clear()  # bound calls take the address when they are made: make them again, spied on
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x, w, bias = nf.tensor(_floats(1, 20, 20, 24)), nf.tensor(_floats(3, 3, 24, 1)), nf.tensor(_floats(24))
    try:
        for stride in (1, 2):
            ran.clear()

            def run(stride=stride) -> np.ndarray:
                t = nf.fused.depthwise_conv2d(x=x, filter=w, strides=stride, pad="same", bias=bias, activation="relu")
                values = t.numpy()
                t.dispose()
                return values

            own = run()
            assert ran == ([3] if stride == 1 else [])
            nf.env().set("CPU_AVX512", False)
            try:
                numba = run()
            finally:
                nf.env().set("CPU_AVX512", True)
            np.testing.assert_allclose(own, numba, rtol=1e-5, atol=1e-5 * np.abs(numba).max())
    finally:
        nf.dispose([x, w, bias])
        nf.set_backend(previous)


# --------------------------------------------------------------------------- max pooling rows (pool_avx512.c)

needs_pool = pytest.mark.skipif(
    MODULE is None or not MODULE.max_pool_address(), reason="needs the C module and AVX-512F"
)

POOL_CASES = [
    # (x shape, (fh, fw), (sh, sw), (dh, dw), (pt, pl), output size)
    ((1, 8, 9, 24), (2, 2), (2, 2), (1, 1), (0, 0), (4, 4)),
    ((2, 7, 7, 5), (3, 3), (2, 2), (1, 1), (1, 1), (4, 4)),
    ((1, 9, 9, 40), (3, 2), (1, 1), (2, 1), (2, 0), (9, 8)),
    ((1, 6, 6, 17), (2, 2), (1, 1), (1, 1), (3, 0), (6, 5)),  # the first rows' windows hold no input: -inf
]


@needs_avx512
@needs_numba
@needs_pool
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}")
def test_max_pool_rows_equal_numba_bit_for_bit(case):
    from ndflow.backends.cpu.numba import kernels

    shape, (fh, fw), (sh, sw), (dh, dw), (pt, pl), (out_h, out_w) = case
    x = _special(shape)
    x.reshape(-1)[7::11] = np.nan
    x.reshape(-1)[3::13] = -0.0
    out_shape = (shape[0], out_h, out_w, shape[3])
    want = np.empty(out_shape, np.float32)
    kernels().pool2d(x, want, True, fh, fw, sh, sw, dh, dw, pt, pl)
    ints = (fh, fw, sh, sw, dh, dw, pt, pl)
    for threads in (1, 2, 3):
        got = np.full(out_shape, np.nan, np.float32)
        assert native_split.max_pool_rows(x, got, ints, threads)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@needs_pool
def test_max_pool_through_the_op_and_the_flag():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x = nf.tensor(_special((1, 12, 12, 20)))
    try:
        own = nf.max_pool(x, 2, 2, "same")
        nf.env().set("CPU_AVX512", False)
        try:
            tiny = np.zeros((1, 2, 2, 1), np.float32)
            assert not native_split.max_pool_rows(tiny, np.zeros((1, 1, 1, 1), np.float32), (2, 2, 2, 2, 1, 1, 0, 0), 1)
            numba = nf.max_pool(x, 2, 2, "same")
        finally:
            nf.env().set("CPU_AVX512", True)
        np.testing.assert_array_equal(own.numpy().view(np.int32), numba.numpy().view(np.int32))
        nf.dispose([own, numba])
    finally:
        x.dispose()
        nf.set_backend(previous)


@needs_kernel
def test_degenerate_and_huge_arguments_are_safe():
    """An empty inner dimension gives zeros (then the epilogue) on every path; a chunk of any size splits
    nothing wrongly; dimensions whose products overflow are refused, not read past."""
    bias = _floats(64)
    for m, by_cols in [(3, False), (16, False), (16, True)]:
        out = np.full((m, 64), np.nan, np.float32)
        MODULE.matmul(np.ones((m, 0), np.float32), np.ones((0, 64), np.float32), out, bias, None, 1, 2, 32, 0.0,
                      None, by_cols)  # fmt: skip
        np.testing.assert_array_equal(out, np.broadcast_to(np.maximum(bias, 0), (m, 64)))
    assert not native_split.avx512_product(4, 0)
    a, b = _floats(5, 16), _floats(16, 24)
    out = np.full((5, 24), np.nan, np.float32)
    MODULE.product(a, b, out, None, None, None, 5, 16, 24, 0, 1, 2**63 - 1, 0.0, False)
    np.testing.assert_array_equal(out, _product(a, b))
    empty = np.zeros(0, np.float32)
    with pytest.raises(ValueError, match="too large"):
        MODULE.product(empty, np.zeros(4, np.float32), empty, None, None, None, 1 << 62, 4, 1, 0, 1, 1, 0.0, False)
    with pytest.raises(ValueError, match="not C-contiguous"):  # numpy refuses the buffer
        MODULE.product(a[:, ::2], b, out, None, None, None, 5, 16, 24, 0, 1, 5, 0.0, False)
    with pytest.raises(ValueError, match="b must be a C-contiguous float32 array of 384 values"):
        MODULE.product(a, b[:8], out, None, None, None, 5, 16, 24, 0, 1, 5, 0.0, False)
