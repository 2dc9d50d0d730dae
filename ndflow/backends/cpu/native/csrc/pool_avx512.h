/* Max pooling rows on AVX-512 (pool_avx512.c), a row function of the native pool. */
#ifndef NDFLOW_POOL_AVX512_H
#define NDFLOW_POOL_AVX512_H

#include <stdint.h>

typedef void (*pool_rows_fn)(int64_t *ctx, int64_t r0, int64_t r1);

/* The row function where this CPU has AVX-512F, else NULL. */
pool_rows_fn max_pool_avx512_rows(void);

#endif
