/* Float32 products with their epilogue in registers, by blocks of 64 columns (gemm_avx512.c). */
#ifndef NDFLOW_GEMM_AVX512_H
#define NDFLOW_GEMM_AVX512_H

#include <stdint.h>

/* columns per block: a block's rows are summed with 4-16 sums in registers */
#define AVX512_BLOCK 64
/* products of fewer rows than this read the right matrix as it is (avx512_gemm_rows_direct): packing it costs
 * as much as their product (8 x 128 @ 128 x 128: 4.0 us either way), while from 16 rows the packed copy wins
 * (16 rows: 5.1 us against 7.4 us direct) */
#define AVX512_PACK_MIN_ROWS 8
/* of those, products of at most this many rows whose right matrix has at least this many values stream it in its
 * own order (too large for the cache, its 64-column blocks would be read pages apart) */
#define AVX512_STREAM_MAX_ROWS 2
#define AVX512_STREAM_MIN_VALUES (128 * 1024)

/* The epilogue of rows: bias (n values) and slopes (act 4) or NULL; the residual ``add`` (row-major, ``ld_add``
 * values per row, its row 0 the first row computed) or NULL; act 0 linear, 1 relu, 2 relu6, 3 leaky relu
 * (alpha), 4 prelu. */
typedef struct {
    const float *bias, *add, *slopes;
    int64_t ld_add;
    int act;
    float alpha;
} RowEpilogue;

/* Whether this CPU runs the kernel (AVX-512F). */
int avx512_gemm_supported(void);

/* ``b`` (k x n, row-major) packed for avx512_gemm_rows: per block of 64 columns (at offset k * 64 * block), k rows
 * of the block's width rounded up to 16 floats, zero-padded; 64-byte aligned (free it with free); NULL without
 * memory or for a bad shape. */
float *avx512_pack(const float *b, int64_t k, int64_t n);

/* Floats that the packed copy of ``width`` columns and ``k`` rows takes; avx512_pack_into writes columns [0, width)
 * of ``b`` (``ldb`` floats per row) to ``dst`` (64-byte aligned, that many floats) in avx512_pack's layout. */
int64_t avx512_packed_size(int64_t k, int64_t width);
void avx512_pack_into(float *dst, const float *b, int64_t ldb, int64_t k, int64_t width);

/* out[i][j] = epilogue(sum_p a[i][p] * b[p][j]) for i < rows, j < n: ``a`` with ``lda`` floats per row, ``out``
 * with ``ldo``; ``bpack`` from avx512_pack. Only where avx512_gemm_supported(). */
void avx512_gemm_rows(const float *a, int64_t lda, int64_t rows, int64_t k, const float *bpack, int64_t n,
                     const RowEpilogue *ep, float *out, int64_t ldo);

/* avx512_gemm_rows on ``b`` as it is (k x n, row-major, ``ldb`` floats per row), for products of few rows: the
 * same values. */
void avx512_gemm_rows_direct(const float *a, int64_t lda, int64_t rows, int64_t k, const float *b, int64_t ldb,
                            int64_t n, const RowEpilogue *ep, float *out, int64_t ldo);

#endif
