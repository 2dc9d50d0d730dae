/* Float32 products and their convolution epilogue on AVX-512, for the native pool (gemm_pool.c).
 *
 * Why: numpy's OpenBLAS (a DYNAMIC_ARCH build) runs its AVX2 kernels on this class of machine, packs both
 * matrices on every call and adds the epilogue as a second pass: 55-110 GFLOP/s on one core. Here the right
 * matrix is packed once per call, in blocks of 64 columns (rows of the block's width rounded up to 16 floats,
 * zero-padded); each block's rows are summed with 8-16 AVX-512 registers of sums (eight rows of one
 * register, or four rows of two to four), finished in registers (bias, residual, activation) and stored once.
 * About 2x OpenBLAS from 24 -> 24 channels to 1024 -> 128 (see native_split.AVX512_K_MAX for the limit).
 *
 * Values: each output is acc = fma(a[i][0], b[0][j], 0), then acc = fma(a[i][p], b[p][j], acc) for p = 1..k-1,
 * then the epilogue in the order of the other kernels (bias, residual, activation). A value does not depend
 * on the row's position in a block, the chunk or the thread: results are deterministic. They differ from
 * OpenBLAS's (another summation order) by float32 rounding. Used only where the CPU has AVX-512F.
 */
#include "gemm_avx512.h"
#include "avx512_epilogue.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512 1
#else
#define HAVE_AVX512 0
#endif

int avx512_gemm_supported(void)
{
#if HAVE_AVX512
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

int64_t avx512_packed_size(int64_t k, int64_t width)
{
    return (width + AVX512_BLOCK - 1) / AVX512_BLOCK * k * AVX512_BLOCK;
}

void avx512_pack_into(float *dst, const float *b, int64_t ldb, int64_t k, int64_t width)
{
    for (int64_t c0 = 0; c0 < width; c0 += AVX512_BLOCK) {
        const int64_t w = width - c0 < AVX512_BLOCK ? width - c0 : AVX512_BLOCK;
        const int64_t stride = (w + 15) / 16 * 16;
        float *block = dst + c0 * k;
        for (int64_t i = 0; i < k; i++) {
            memcpy(block + i * stride, b + i * ldb + c0, (size_t)w * sizeof(float));
            memset(block + i * stride + w, 0, (size_t)(stride - w) * sizeof(float));
        }
    }
}

float *avx512_pack(const float *b, int64_t k, int64_t n)
{
    float *p = NULL;
    if (n < 1 || k < 1)
        return NULL;
    if (posix_memalign((void **)&p, 64, (size_t)avx512_packed_size(k, n) * sizeof(float)) != 0)
        return NULL;
    avx512_pack_into(p, b, n, k, n);
    return p;
}

#if HAVE_AVX512
#ifndef DIRECT_PREFETCH_ROWS
#define DIRECT_PREFETCH_ROWS 16 /* how far ahead the unpacked form fetches the right matrix's rows */
#endif

typedef struct {
    __mmask16 mask[AVX512_BLOCK / 16];
    __m512 bias[AVX512_BLOCK / 16], slopes[AVX512_BLOCK / 16], alpha;
    const RowEpilogue *ep;
} Finish;

__attribute__((target("avx512f"), always_inline)) static inline __m512 finish(const Finish *f, __m512 v, int part,
                                                                              int64_t row)
{
    const RowEpilogue *ep = f->ep;
    if (ep->bias)
        v = _mm512_add_ps(v, f->bias[part]);
    if (ep->add)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(f->mask[part], ep->add + row * ep->ld_add + 16 * part));
    v = avx512_activate(v, ep->act, f->alpha, f->slopes[part]);
    return v;
}

/* ``R`` rows from ``row`` (``a`` at its first), ``NV`` vectors of 16 columns each (constants once inlined: the
 * R * NV sums stay in registers). ``b`` is the block's packed copy (rows of 16 * NV floats, zero-padded) or,
 * with ``DIRECT``, the right matrix itself at the block's first column (``ldb`` floats per row; the masks leave
 * out the columns past the block's width). */
__attribute__((target("avx512f"), always_inline)) static inline void block(const Finish *f, const float *a,
                                                                           int64_t lda, int64_t k, const float *bp,
                                                                           int64_t ldb, float *out, int64_t ldo,
                                                                           int64_t row, const int R, const int NV,
                                                                           const int DIRECT)
{
    __m512 c[8][AVX512_BLOCK / 16];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            c[r][v] = _mm512_setzero_ps();
    const int64_t stride = DIRECT ? ldb : 16 * NV;
    for (int64_t p = 0; p < k; p++) {
        __m512 b[AVX512_BLOCK / 16];
        if (DIRECT) { /* rows far apart (pages apart): the hardware does not fetch them ahead */
            const int64_t ahead = p + DIRECT_PREFETCH_ROWS < k ? p + DIRECT_PREFETCH_ROWS : k - 1;
            for (int v = 0; v < NV; v++)
                _mm_prefetch((const char *)(bp + ahead * stride + 16 * v), _MM_HINT_T0);
        }
        for (int v = 0; v < NV; v++)
            b[v] = DIRECT ? _mm512_maskz_loadu_ps(f->mask[v], bp + p * stride + 16 * v)
                          : _mm512_load_ps(bp + p * stride + 16 * v);
        for (int r = 0; r < R; r++) {
            const __m512 x = _mm512_set1_ps(a[r * lda + p]);
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm512_fmadd_ps(x, b[v], c[r][v]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(out + (row + r) * ldo + 16 * v, f->mask[v], finish(f, c[r][v], v, row + r));
}

/* Rows in blocks of R (about 8-16 sums in registers), then one at a time: the same sums either way. */
#define ROWS(R, NV)                                                                                               \
    do {                                                                                                          \
        for (; i + (R) <= rows; i += (R))                                                                         \
            block(f, a + i * lda, lda, k, bp, ldb, out, ldo, i, (R), (NV), DIRECT);                               \
        for (; i < rows; i++)                                                                                     \
            block(f, a + i * lda, lda, k, bp, ldb, out, ldo, i, 1, (NV), DIRECT);                                 \
    } while (0)

/* Every row of a block of ``nv`` vectors (16 columns each); the unpacked form (``DIRECT``: under 8 rows) takes
 * one-vector rows four at a time. */
__attribute__((target("avx512f"), always_inline)) static inline void rows_of(const Finish *f, const float *a,
                                                                             int64_t lda, int64_t rows, int64_t k,
                                                                             const float *bp, int64_t ldb, int nv,
                                                                             float *out, int64_t ldo,
                                                                             const int DIRECT)
{
    int64_t i = 0;
    switch (nv) {
    case 1:
        if (DIRECT)
            ROWS(4, 1);
        else
            ROWS(8, 1);
        break;
    case 2:
        ROWS(4, 2);
        break;
    case 3:
        ROWS(4, 3);
        break;
    default:
        ROWS(4, 4);
        break;
    }
}

__attribute__((target("avx512f"))) static void rows_avx512(const float *a, int64_t lda, int64_t rows, int64_t k,
                                                           const float *bp, int64_t ldb, int64_t n,
                                                           const RowEpilogue *ep, float *out, int64_t ldo)
{
    Finish f;
    f.ep = ep;
    const int nv = (int)((n + 15) / 16);
    for (int v = 0; v < AVX512_BLOCK / 16; v++) {
        int64_t left = n - 16 * v;
        f.mask[v] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
        f.bias[v] = ep->bias ? _mm512_maskz_loadu_ps(f.mask[v], ep->bias + 16 * v) : _mm512_setzero_ps();
        f.slopes[v] = ep->slopes ? _mm512_maskz_loadu_ps(f.mask[v], ep->slopes + 16 * v) : _mm512_setzero_ps();
    }
    f.alpha = _mm512_set1_ps(ep->alpha);
    if (ldb > 0)
        rows_of(&f, a, lda, rows, k, bp, ldb, nv, out, ldo, 1);
    else
        rows_of(&f, a, lda, rows, k, bp, 0, nv, out, ldo, 0);
}


/* A row at a time, the right matrix streamed in its own order (four of its rows per pass over the output row,
 * which stays in L1): for a right matrix too large for the cache, whose 64-column blocks would be read pages
 * apart. Each output gets the same fused multiply-adds in the same order as in block(), then the epilogue. */
__attribute__((target("avx512f"))) static void stream_rows(const float *a, int64_t lda, int64_t rows, int64_t k,
                                                           const float *b, int64_t ldb, int64_t n,
                                                           const RowEpilogue *ep, float *out, int64_t ldo)
{
    const __m512 alpha = _mm512_set1_ps(ep->alpha), zero = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; r++) {
        const float *x = a + r * lda;
        float *o = out + r * ldo;
        int64_t p = 0;
        for (; p + 4 <= k || p == 0; p += 4) { /* the first pass starts each sum from zero */
            const int64_t left = k - p < 4 ? k - p : 4;
            const __m512 x0 = _mm512_set1_ps(x[p]), x1 = _mm512_set1_ps(left > 1 ? x[p + 1] : 0.0f);
            const __m512 x2 = _mm512_set1_ps(left > 2 ? x[p + 2] : 0.0f), x3 = _mm512_set1_ps(left > 3 ? x[p + 3] : 0.0f);
            const float *b0 = b + p * ldb;
            for (int64_t j = 0; j < n; j += 16) {
                const __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
                __m512 v = p == 0 ? zero : _mm512_maskz_loadu_ps(m, o + j);
                v = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, b0 + j), v);
                if (left > 1)
                    v = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(m, b0 + ldb + j), v);
                if (left > 2)
                    v = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(m, b0 + 2 * ldb + j), v);
                if (left > 3)
                    v = _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(m, b0 + 3 * ldb + j), v);
                _mm512_mask_storeu_ps(o + j, m, v);
            }
            if (left < 4) {
                p = k;
                break;
            }
        }
        for (; p < k; p++) { /* the last rows of the right matrix, one at a time */
            const __m512 xp = _mm512_set1_ps(x[p]);
            for (int64_t j = 0; j < n; j += 16) {
                const __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
                _mm512_mask_storeu_ps(o + j, m,
                                      _mm512_fmadd_ps(xp, _mm512_maskz_loadu_ps(m, b + p * ldb + j),
                                                      _mm512_maskz_loadu_ps(m, o + j)));
            }
        }
        for (int64_t j = 0; j < n; j += 16) { /* the epilogue: bias, residual, activation */
            const __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
            __m512 v = _mm512_maskz_loadu_ps(m, o + j);
            if (ep->bias)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->bias + j));
            if (ep->add)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->add + r * ep->ld_add + j));
            v = avx512_activate(v, ep->act, alpha, ep->slopes ? _mm512_maskz_loadu_ps(m, ep->slopes + j) : zero);
            _mm512_mask_storeu_ps(o + j, m, v);
        }
    }
}
#endif

/* Each block of 64 columns over all the rows: ``b`` packed (``ldb`` 0, at the block's offset c0 * k) or not
 * (``ldb`` floats per row, at column c0). */
static void gemm_blocks(const float *a, int64_t lda, int64_t rows, int64_t k, const float *b, int64_t ldb, int64_t n,
                        const RowEpilogue *ep, float *out, int64_t ldo)
{
#if HAVE_AVX512
    for (int64_t c0 = 0; c0 < n; c0 += AVX512_BLOCK) {
        RowEpilogue part = *ep;
        part.bias = ep->bias ? ep->bias + c0 : NULL;
        part.slopes = ep->slopes ? ep->slopes + c0 : NULL;
        part.add = ep->add ? ep->add + c0 : NULL;
        const int64_t width = n - c0 < AVX512_BLOCK ? n - c0 : AVX512_BLOCK;
        rows_avx512(a, lda, rows, k, ldb > 0 ? b + c0 : b + c0 * k, ldb, width, &part, out + c0, ldo);
    }
#else
    (void)a, (void)lda, (void)rows, (void)k, (void)b, (void)ldb, (void)n, (void)ep, (void)out, (void)ldo;
#endif
}

void avx512_gemm_rows(const float *a, int64_t lda, int64_t rows, int64_t k, const float *bpack, int64_t n,
                     const RowEpilogue *ep, float *out, int64_t ldo)
{
    gemm_blocks(a, lda, rows, k, bpack, 0, n, ep, out, ldo);
}

void avx512_gemm_rows_direct(const float *a, int64_t lda, int64_t rows, int64_t k, const float *b, int64_t ldb,
                            int64_t n, const RowEpilogue *ep, float *out, int64_t ldo)
{
#if HAVE_AVX512
    if (rows <= AVX512_STREAM_MAX_ROWS && k * n >= AVX512_STREAM_MIN_VALUES) {
        stream_rows(a, lda, rows, k, b, ldb, n, ep, out, ldo);
        return;
    }
#endif
    gemm_blocks(a, lda, rows, k, b, ldb, n, ep, out, ldo);
}
