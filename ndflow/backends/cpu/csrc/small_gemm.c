/* Products with few output columns (n <= 32) and their convolution epilogue, for the native pool (gemm_pool.c).
 *
 * Why: OpenBLAS's sgemm packs both matrices and runs kernels blocked for wide products; with 16-32 columns
 * and a short inner dimension (the 1x1 convolutions of BlazeFace, FaceMesh, selfie: 24 -> 24 channels) it
 * reaches 55-75 GFLOP/s on one core, and the epilogue is a second pass over the output. Here the right matrix
 * is packed once per call into rows of 32 floats (zero-padded), and each output row is held in two AVX-512
 * registers (four rows at a time, or eight rows of one register when n <= 16) while the inner dimension is
 * summed, then finished in registers (bias, residual, activation) and stored once.
 *
 * Values: each output is acc = fma(a[i][0], b[0][j], 0), then acc = fma(a[i][p], b[p][j], acc) for p = 1..k-1,
 * then the epilogue in the order of the other kernels (bias, residual, activation). A value does not depend
 * on the row's position in a block, the chunk or the thread: results are deterministic. They differ from
 * OpenBLAS's (another summation order) by float32 rounding. Used only where the CPU has AVX-512F.
 */
#include "small_gemm.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_SMALL 1
#else
#define HAVE_SMALL 0
#endif

int small_gemm_supported(void)
{
#if HAVE_SMALL
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

float *small_pack(const float *b, int64_t k, int64_t n)
{
    float *p = NULL;
    if (n < 1 || n > SMALL_N_MAX || k < 1)
        return NULL;
    if (posix_memalign((void **)&p, 64, (size_t)(k * SMALL_N_MAX) * sizeof(float)) != 0)
        return NULL;
    for (int64_t i = 0; i < k; i++) {
        memcpy(p + i * SMALL_N_MAX, b + i * n, (size_t)n * sizeof(float));
        memset(p + i * SMALL_N_MAX + n, 0, (size_t)(SMALL_N_MAX - n) * sizeof(float));
    }
    return p;
}

#if HAVE_SMALL
typedef struct {
    __mmask16 mask[2];
    __m512 bias[2], slopes[2], alpha;
    const SmallEpilogue *ep;
} Finish;

__attribute__((target("avx512f"))) static inline __m512 finish(const Finish *f, __m512 v, int half, int64_t row)
{
    const SmallEpilogue *ep = f->ep;
    const __m512 zero = _mm512_setzero_ps();
    if (ep->bias)
        v = _mm512_add_ps(v, f->bias[half]);
    if (ep->add)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(f->mask[half], ep->add + row * ep->ld_add + 16 * half));
    switch (ep->act) {
    case 1: /* v < 0 ? 0 : v: max returns its second operand for NaN and for equal zeros */
        v = _mm512_max_ps(zero, v);
        break;
    case 2:
        v = _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(zero, v));
        break;
    case 3:
        v = _mm512_mul_ps(v, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), _mm512_set1_ps(1.0f),
                                                  f->alpha));
        break;
    case 4:
        v = _mm512_mul_ps(v, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), _mm512_set1_ps(1.0f),
                                                  f->slopes[half]));
        break;
    default:
        break;
    }
    return v;
}

__attribute__((target("avx512f"))) static inline void store(const Finish *f, float *out, int64_t ldo, int64_t row,
                                                             __m512 v0, __m512 v1, int two)
{
    _mm512_mask_storeu_ps(out + row * ldo, f->mask[0], finish(f, v0, 0, row));
    if (two)
        _mm512_mask_storeu_ps(out + row * ldo + 16, f->mask[1], finish(f, v1, 1, row));
}

#define FMA2(r)                                                                                                   \
    do {                                                                                                          \
        __m512 x = _mm512_set1_ps(a##r[p]);                                                                       \
        c##r##0 = _mm512_fmadd_ps(x, b0, c##r##0);                                                                \
        c##r##1 = _mm512_fmadd_ps(x, b1, c##r##1);                                                                \
    } while (0)
#define FMA1(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a##r[p]), b0, c##r)

__attribute__((target("avx512f"))) static void rows_avx512(const float *a, int64_t lda, int64_t rows, int64_t k,
                                                           const float *bp, int64_t n, const SmallEpilogue *ep,
                                                           float *out, int64_t ldo)
{
    Finish f;
    f.ep = ep;
    f.mask[0] = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
    f.mask[1] = n <= 16 ? (__mmask16)0 : n >= 32 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - 16)) - 1);
    for (int h = 0; h < 2; h++) {
        f.bias[h] = ep->bias ? _mm512_maskz_loadu_ps(f.mask[h], ep->bias + 16 * h) : _mm512_setzero_ps();
        f.slopes[h] = ep->slopes ? _mm512_maskz_loadu_ps(f.mask[h], ep->slopes + 16 * h) : _mm512_setzero_ps();
    }
    f.alpha = _mm512_set1_ps(ep->alpha);
    const int two = n > 16;
    int64_t i = 0;
    if (two) {
        for (; i + 4 <= rows; i += 4) {
            const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
            __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
                   c31 = c00;
            for (int64_t p = 0; p < k; p++) {
                const __m512 b0 = _mm512_load_ps(bp + p * SMALL_N_MAX), b1 = _mm512_load_ps(bp + p * SMALL_N_MAX + 16);
                FMA2(0);
                FMA2(1);
                FMA2(2);
                FMA2(3);
            }
            store(&f, out, ldo, i, c00, c01, 1);
            store(&f, out, ldo, i + 1, c10, c11, 1);
            store(&f, out, ldo, i + 2, c20, c21, 1);
            store(&f, out, ldo, i + 3, c30, c31, 1);
        }
    } else {
        for (; i + 8 <= rows; i += 8) {
            const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda, *a4 = a3 + lda,
                        *a5 = a4 + lda, *a6 = a5 + lda, *a7 = a6 + lda;
            __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
            for (int64_t p = 0; p < k; p++) {
                const __m512 b0 = _mm512_load_ps(bp + p * SMALL_N_MAX);
                FMA1(0);
                FMA1(1);
                FMA1(2);
                FMA1(3);
                FMA1(4);
                FMA1(5);
                FMA1(6);
                FMA1(7);
            }
            const __m512 none = _mm512_setzero_ps();
            store(&f, out, ldo, i, c0, none, 0);
            store(&f, out, ldo, i + 1, c1, none, 0);
            store(&f, out, ldo, i + 2, c2, none, 0);
            store(&f, out, ldo, i + 3, c3, none, 0);
            store(&f, out, ldo, i + 4, c4, none, 0);
            store(&f, out, ldo, i + 5, c5, none, 0);
            store(&f, out, ldo, i + 6, c6, none, 0);
            store(&f, out, ldo, i + 7, c7, none, 0);
        }
    }
    for (; i < rows; i++) { /* the same sums, one row at a time */
        const float *a0 = a + i * lda;
        __m512 c00 = _mm512_setzero_ps(), c01 = c00;
        for (int64_t p = 0; p < k; p++) {
            const __m512 b0 = _mm512_load_ps(bp + p * SMALL_N_MAX), b1 = _mm512_load_ps(bp + p * SMALL_N_MAX + 16);
            FMA2(0);
        }
        store(&f, out, ldo, i, c00, c01, two);
    }
}
#endif

void small_gemm_rows(const float *a, int64_t lda, int64_t rows, int64_t k, const float *bpack, int64_t n,
                     const SmallEpilogue *ep, float *out, int64_t ldo)
{
#if HAVE_SMALL
    rows_avx512(a, lda, rows, k, bpack, n, ep, out, ldo);
#else
    (void)a, (void)lda, (void)rows, (void)k, (void)bpack, (void)n, (void)ep, (void)out, (void)ldo;
#endif
}
