/* The convolution epilogue's activation on one AVX-512 register, shared by gemm_avx512.c and dw_avx512.c.
 *
 * act 0 linear, 1 relu (v < 0 ? 0 : v), 2 relu6, 3 leaky relu (v * alpha where v < 0), 4 prelu (v * slope where
 * v < 0): the values of the other kernels (numba's and the C pool's scalar epilogue) for the same input, NaN,
 * infinities and signed zeros included. max/min return their second operand for NaN and for equal zeros.
 */
#ifndef NDFLOW_AVX512_EPILOGUE_H
#define NDFLOW_AVX512_EPILOGUE_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"), always_inline)) static inline __m512 avx512_activate(__m512 v, int act,
                                                                                       __m512 alpha, __m512 slopes)
{
    const __m512 zero = _mm512_setzero_ps();
    switch (act) {
    case 1:
        return _mm512_max_ps(zero, v);
    case 2:
        return _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(zero, v));
    case 3:
        return _mm512_mul_ps(v, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), _mm512_set1_ps(1.0f),
                                                     alpha));
    case 4:
        return _mm512_mul_ps(v, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), _mm512_set1_ps(1.0f),
                                                     slopes));
    default:
        return v;
    }
}
#endif

#endif
