/* Max pooling rows on AVX-512, a row function of the native pool (gemm_pool.c's run_rows).
 *
 * Why: numba's pooling kernel (jit/_kernels.py pool2d) walks each window one channel at a time; here a window's
 * positions are combined 16 channels per register.
 *
 * The context (the pool's 64 slots): arrays x (B, H, W, C) at slot 0, out (B, OH, OW, C) at slot 3; integers
 * fh, fw, sh, sw, dh, dw, pt, pl. Values: the numba kernel's: a window's positions inside the input in order
 * (kh, kw), best = max(x, best) from -inf, which keeps best for NaN and for equal values (max returns its
 * second operand then), as ``if x > best: best = x`` does; a window without a number gives -inf.
 */
#include "pool_avx512.h"

#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_POOL 1
#else
#define HAVE_POOL 0
#endif

#define SHAPE(ctx, i, d) ((ctx)[8 + 4 * (i) + (d)])
#define INT(ctx, i) ((ctx)[40 + (i)])
#define ARRAY(ctx, i) ((float *)(uintptr_t)(ctx)[i])

#if HAVE_POOL
__attribute__((target("avx512f"))) static void max_rows_avx512(int64_t *ctx, int64_t r0, int64_t r1)
{
    const float *x = ARRAY(ctx, 0);
    float *out = ARRAY(ctx, 3);
    const int64_t height = SHAPE(ctx, 0, 1), width = SHAPE(ctx, 0, 2), channels = SHAPE(ctx, 0, 3);
    const int64_t out_h = SHAPE(ctx, 3, 1), out_w = SHAPE(ctx, 3, 2);
    const int64_t fh = INT(ctx, 0), fw = INT(ctx, 1), sh = INT(ctx, 2), sw = INT(ctx, 3), dh = INT(ctx, 4),
                  dw = INT(ctx, 5), pt = INT(ctx, 6), pl = INT(ctx, 7);
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t b = r / out_h, oh = r - b * out_h, ih0 = oh * sh - pt;
        float *orow = out + r * out_w * channels;
        for (int64_t ow = 0; ow < out_w; ow++) {
            const int64_t iw0 = ow * sw - pl;
            for (int64_t c = 0; c < channels; c += 16) {
                const int64_t left = channels - c;
                const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
                __m512 best = lowest;
                for (int64_t kh = 0; kh < fh; kh++) {
                    const int64_t ih = ih0 + kh * dh;
                    if (ih < 0 || ih >= height)
                        continue;
                    const float *xrow = x + ((b * height + ih) * width) * channels + c;
                    for (int64_t kw = 0; kw < fw; kw++) {
                        const int64_t iw = iw0 + kw * dw;
                        if (iw < 0 || iw >= width)
                            continue;
                        best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, xrow + iw * channels), best);
                    }
                }
                _mm512_mask_storeu_ps(orow + ow * channels + c, m, best);
            }
        }
    }
}
#endif

pool_rows_fn max_pool_avx512_rows(void)
{
#if HAVE_POOL
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return max_rows_avx512;
#endif
    return NULL;
}
