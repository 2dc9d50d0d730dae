/* The float32 math of the recurrent loops (rnn_seq.c, rnn_grad.c): vectorizable exp, tanh and activations, and one
 * product with its residual on the AVX-512 kernel or numpy's OpenBLAS. */
#ifndef NDFLOW_RNN_MATH_H
#define NDFLOW_RNN_MATH_H

#include <math.h>
#include <stdint.h>

#include "gemm_avx512.h"
#include "gemm_pool.h"

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int32_t, int32_t, int32_t, float, const float *, int32_t,
                           const float *, int32_t, float, float *, int32_t);

/* e**x for float32, within 2 ulp of the correctly rounded value (Cephes's expf: a reduction by ln 2 in two parts and
 * a degree-6 polynomial), branch-free so that the loops over a row vectorize; infinity past FLT_MAX, 0 under FLT_MIN
 * (no denormal results), NaN kept. libm's expf and tanhf, called per value, took two thirds of an LSTM's time. */
static inline float exp_f(float x)
{
    const float lo = -87.0f, hi = 88.0f;
    float v = x < lo ? lo : x;
    v = v > hi ? hi : v;
    float fx = v * 1.44269504088896341f + 0.5f;
    int n = (int)fx;
    n -= (float)n > fx; /* floor */
    float fn = (float)n;
    float r = v - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    union {
        int32_t i;
        float f;
    } scale = {.i = (n + 127) << 23};
    y = y * scale.f;
    y = x > 88.72283f ? INFINITY : y; /* past FLT_MAX */
    y = x < -87.33654f ? 0.0f : y;    /* under FLT_MIN: flushed (denormal results are not kept) */
    return x != x ? x : y;
}

/* tanh for float32, within 3 ulp (Cephes's tanhf: an odd polynomial under 0.625, 1 - 2 / (e**2|x| + 1) above) */
static inline float tanh_f(float x)
{
    float a = x < 0.0f ? -x : x, z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    float big = 1.0f - 2.0f / (exp_f(a + a) + 1.0f);
    big = x < 0.0f ? -big : big;
    return a < 0.625f ? small : big;
}

static inline float activate(float v, int code)
{
    const float zero = 0.0f, one = 1.0f;
    switch (code) {
    case 1:
        return tanh_f(v);
    case 2:
        return one / (one + exp_f(-v));
    case 3: {
        float s = 0.5f + 0.2f * v;
        s = s < zero ? zero : s;
        return s > one ? one : s;
    }
    case 4:
        return v < zero ? zero : v;
    default:
        return v;
    }
}

/* ``activate`` over ``n`` values in place, one loop per code (each vectorizes) */
static inline void activate_all(float *v, int64_t n, int code)
{
    if (code == 1)
        for (int64_t j = 0; j < n; j++)
            v[j] = tanh_f(v[j]);
    else if (code == 2)
        for (int64_t j = 0; j < n; j++)
            v[j] = 1.0f / (1.0f + exp_f(-v[j]));
    else if (code == 3)
        for (int64_t j = 0; j < n; j++)
            v[j] = activate(v[j], 3);
    else if (code == 4)
        for (int64_t j = 0; j < n; j++)
            v[j] = v[j] < 0.0f ? 0.0f : v[j];
}

/* out (rows x n, ``ldo``) = a (rows x k, ``lda``) @ b (k x n of a row-major matrix of ``ldb``; ``packed``: the same
 * in avx512_pack's layout, or NULL) + add (``ld_add``, or NULL) + bias (n, or NULL) */
static inline void product(const float *a, int64_t lda, int64_t rows, int64_t k, const float *b, int64_t ldb, int64_t n,
                    const float *packed, const float *add, int64_t ld_add, const float *bias, float *out, int64_t ldo)
{
    if (packed != NULL) {
        RowEpilogue ep = {bias, add, NULL, ld_add, 0, 0.0f};
        avx512_gemm_rows(a, lda, rows, k, packed, n, &ep, out, ldo);
        return;
    }
    if (k <= avx512_k_max) {
        RowEpilogue ep = {bias, add, NULL, ld_add, 0, 0.0f};
        avx512_gemm_rows_direct(a, lda, rows, k, b, ldb, n, &ep, out, ldo);
        return;
    }
    if (sgemm_ilp64)
        ((sgemm64_fn)sgemm_ptr)(101, 111, 111, rows, n, k, 1.0f, a, lda, b, ldb, 0.0f, out, ldo);
    else
        ((sgemm32_fn)sgemm_ptr)(101, 111, 111, (int32_t)rows, (int32_t)n, (int32_t)k, 1.0f, a, (int32_t)lda, b,
                                (int32_t)ldb, 0.0f, out, (int32_t)ldo);
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * ldo;
        if (bias)
            for (int64_t j = 0; j < n; j++)
                o[j] += bias[j];
        if (add)
            for (int64_t j = 0; j < n; j++)
                o[j] += add[r * ld_add + j];
    }
}


#endif
