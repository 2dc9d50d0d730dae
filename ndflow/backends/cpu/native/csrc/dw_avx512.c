/* 3x3 and 5x5 depthwise convolution rows on AVX-512, row functions of the native pool (gemm_pool.c's run_rows).
 *
 * Why: the numba kernels (jit/_dw3_kernels.py, jit/_conv_kernels.py) reach 40-65 GFLOP/s; with 16 channels per
 * register, the weights of a channel block held in registers while the block runs along the output row, and four
 * neighbouring positions sharing their input loads (unit strides), an output vector costs about K + 3 loads per
 * filter row for four positions, K * K fused multiply-adds, the epilogue and one store.
 *
 * The context (the pool's 64 slots, as jit/_dw_rows.py reads them): arrays x (B, H, W, C), w (K, K, C), -, out
 * (B, OH, OW, C), bias (C or empty), add (like out, or empty: (0,) or (1, 1, 0, 0)), slopes (C or empty); integers sh, sw, dh, dw,
 * pt, pl, act; the double alpha. Any stride, dilation and padding (taps outside the input are skipped).
 *
 * Values: acc = 0, then acc = fma(x, w, acc) over the taps inside the input in the order (kh, kw), then the
 * epilogue (bias, residual, activation). A value does not depend on the thread or the chunk of rows. They
 * differ from the numba kernels' (separate multiplies and adds) by float32 rounding.
 */
#include "dw_avx512.h"

#include <stdint.h>
#include <string.h>

#include "avx512_epilogue.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_DW 1
#else
#define HAVE_DW 0
#endif

enum { X_, W_, WB_, OUT_, BIAS_, ADD_, SLOPES_ };
#define SHAPE(ctx, i, d) ((ctx)[8 + 4 * (i) + (d)])
#define INT(ctx, i) ((ctx)[40 + (i)])
#define ARRAY(ctx, i) ((float *)(uintptr_t)(ctx)[i])

#if HAVE_DW
__attribute__((target("avx512f"), always_inline)) static inline void dw_rows(int64_t *ctx, int64_t r0, int64_t r1,
                                                                             const int K)
{
    const float *x = ARRAY(ctx, X_), *w = ARRAY(ctx, W_);
    float *out = ARRAY(ctx, OUT_);
    const int64_t height = SHAPE(ctx, X_, 1), width = SHAPE(ctx, X_, 2), channels = SHAPE(ctx, X_, 3);
    const int64_t out_h = SHAPE(ctx, OUT_, 1), out_w = SHAPE(ctx, OUT_, 2);
    const float *bias = SHAPE(ctx, BIAS_, 0) > 0 ? ARRAY(ctx, BIAS_) : NULL;
    /* no residual: an empty array, (0,) or (1, 1, 0, 0) */
    const float *add = SHAPE(ctx, ADD_, 2) > 0 && SHAPE(ctx, ADD_, 3) > 0 ? ARRAY(ctx, ADD_) : NULL;
    const float *slopes = SHAPE(ctx, SLOPES_, 0) > 0 ? ARRAY(ctx, SLOPES_) : NULL;
    const int64_t sh = INT(ctx, 0), sw = INT(ctx, 1), dh = INT(ctx, 2), dw = INT(ctx, 3), pt = INT(ctx, 4),
                  pl = INT(ctx, 5);
    const int act = (int)INT(ctx, 6);
    double alpha_d;
    memcpy(&alpha_d, &ctx[56], sizeof alpha_d);
    const __m512 alpha = _mm512_set1_ps((float)alpha_d);
    /* the output columns whose K taps are all inside the input: [lo, hi) */
    int64_t lo = 0, hi = out_w;
    while (lo < out_w && lo * sw - pl < 0)
        lo++;
    while (hi > lo && (hi - 1) * sw - pl + (K - 1) * dw >= width)
        hi--;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t b = r / out_h, oh = r - b * out_h, ih0 = oh * sh - pt;
        int kh0 = 0, kh1 = K; /* the taps' rows inside the input */
        while (kh0 < K && ih0 + kh0 * dh < 0)
            kh0++;
        while (kh1 > kh0 && ih0 + (kh1 - 1) * dh >= height)
            kh1--;
        const float *xrow[5];
        for (int kh = 0; kh < K; kh++)
            xrow[kh] = x + ((b * height + ih0 + kh * dh) * width) * channels;
        float *orow = out + r * out_w * channels;
        const float *arow = add ? add + r * out_w * channels : NULL;
        for (int64_t c = 0; c < channels; c += 16) {
            const int64_t left = channels - c;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            __m512 wv[25];
            for (int t = 0; t < K * K; t++)
                wv[t] = _mm512_maskz_loadu_ps(m, w + t * channels + c);
            const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + c) : _mm512_setzero_ps();
            const __m512 sv = slopes ? _mm512_maskz_loadu_ps(m, slopes + c) : _mm512_setzero_ps();
            int64_t ow = 0;
            for (; ow < out_w; ow++) {
                if (ow == lo && sw == 1 && dw == 1) { /* the interior four positions at a time: shared loads */
                    for (; ow + 4 <= hi; ow += 4) {
                        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                        for (int kh = kh0; kh < kh1; kh++) {
                            const float *p = xrow[kh] + (ow - pl) * channels + c;
                            __m512 xs[8];
                            for (int j = 0; j < K + 3; j++)
                                xs[j] = _mm512_maskz_loadu_ps(m, p + j * channels);
                            for (int kw = 0; kw < K; kw++) { /* each sum in tap order (kh, kw) */
                                const __m512 wk = wv[K * kh + kw];
                                a0 = _mm512_fmadd_ps(xs[kw], wk, a0);
                                a1 = _mm512_fmadd_ps(xs[kw + 1], wk, a1);
                                a2 = _mm512_fmadd_ps(xs[kw + 2], wk, a2);
                                a3 = _mm512_fmadd_ps(xs[kw + 3], wk, a3);
                            }
                        }
                        const __m512 accs[4] = {a0, a1, a2, a3};
                        for (int j = 0; j < 4; j++) {
                            __m512 v = accs[j];
                            if (bias)
                                v = _mm512_add_ps(v, bv);
                            if (arow)
                                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, arow + (ow + j) * channels + c));
                            _mm512_mask_storeu_ps(orow + (ow + j) * channels + c, m, avx512_activate(v, act, alpha, sv));
                        }
                    }
                    if (ow >= out_w)
                        break;
                }
                const int64_t iw0 = ow * sw - pl;
                __m512 acc = _mm512_setzero_ps();
                if (ow >= lo && ow < hi) {
                    for (int kh = kh0; kh < kh1; kh++) {
                        const float *p = xrow[kh] + iw0 * channels + c;
                        for (int kw = 0; kw < K; kw++)
                            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + kw * dw * channels), wv[K * kh + kw], acc);
                    }
                } else {
                    for (int kh = kh0; kh < kh1; kh++)
                        for (int kw = 0; kw < K; kw++) {
                            const int64_t iw = iw0 + kw * dw;
                            if (iw < 0 || iw >= width)
                                continue;
                            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xrow[kh] + iw * channels + c),
                                                  wv[K * kh + kw], acc);
                        }
                }
                if (bias)
                    acc = _mm512_add_ps(acc, bv);
                if (arow)
                    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, arow + ow * channels + c));
                _mm512_mask_storeu_ps(orow + ow * channels + c, m, avx512_activate(acc, act, alpha, sv));
            }
        }
    }
}

__attribute__((target("avx512f"))) static void dw3_rows_avx512(int64_t *ctx, int64_t r0, int64_t r1)
{
    dw_rows(ctx, r0, r1, 3);
}

__attribute__((target("avx512f"))) static void dw5_rows_avx512(int64_t *ctx, int64_t r0, int64_t r1)
{
    dw_rows(ctx, r0, r1, 5);
}
#endif

dw_rows_fn dw_avx512_rows(int size)
{
#if HAVE_DW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return size == 3 ? dw3_rows_avx512 : size == 5 ? dw5_rows_avx512 : NULL;
#endif
    (void)size;
    return NULL;
}
