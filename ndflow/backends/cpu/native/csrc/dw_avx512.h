/* 3x3 and 5x5 depthwise convolution rows on AVX-512 (dw_avx512.c), row functions of the native pool. */
#ifndef NDFLOW_DW_AVX512_H
#define NDFLOW_DW_AVX512_H

#include <stdint.h>

typedef void (*dw_rows_fn)(int64_t *ctx, int64_t r0, int64_t r1);

/* The row function of ``size`` x ``size`` filters (3 or 5) where this CPU has AVX-512F, else NULL. */
dw_rows_fn dw_avx512_rows(int size);

#endif
