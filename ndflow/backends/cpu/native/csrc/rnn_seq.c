/* Recurrent layers' whole time loop in one call (LSTM, GRU), for inference: ``rnn_sequence`` of the C module.
 *
 * Why: run step by step through ops, an LSTM(128) over 50 steps at batch 1 made ~15 kernel calls per step, 130 us
 * a step against Keras's 30. Here each step is one product of the previous output with the recurrent kernel (the
 * AVX-512 kernel where the CPU has it, else numpy's OpenBLAS sgemm), the input projection added as the product's
 * residual, then the gates in one pass. The batch's rows are independent through the whole sequence, so threads
 * split the batch (each chunk of rows runs every step): no synchronization per step.
 *
 * Values: the gates use the ops the layers' step functions use, in their order (built without contraction, so no
 * fused multiply-adds): LSTM i, f, o = ract(z), c = f * c_prev + i * act(z_c), h = o * act(c); GRU z, r = ract(x +
 * h @ rk), hh = act(x_h + (r * h) @ rk_h) (reset_after: act(x_h + r * (h @ rk_h + b_h))), h = z * h + (1 - z) * hh.
 * They differ from the step-by-step path only by the products' summation order and the elementary functions' last
 * bits (tanhf, expf).
 */
#include "rnn_seq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_avx512.h"
#include "gemm_pool.h"

enum { P_, RK_, RB_, H_, C_, OUT_, N_RNN_ARRAYS };
/* context slots beyond the arrays: the scratch (every chunk's gates and temporaries) and the packed recurrent
 * kernel (its first 2U or all columns, then its last U for the GRU's second product), or 0 */
enum { SCRATCH_ = N_RNN_ARRAYS, PACK1_, PACK2_ };
enum { I_B, I_T, I_U, I_KIND, I_ACT, I_RACT, I_BACK, I_SEQ, I_CHUNK };

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
static void activate_all(float *v, int64_t n, int code)
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
static void product(const float *a, int64_t lda, int64_t rows, int64_t k, const float *b, int64_t ldb, int64_t n,
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

/* Rows [r0, r1) of the batch through every step (a row job of the pool: gemm_pool.h's rows_fn). */
static void rnn_rows(int64_t *ctx, int64_t r0, int64_t r1)
{
    const float *p = (const float *)(uintptr_t)ctx[P_], *rk = (const float *)(uintptr_t)ctx[RK_];
    const float *rb = (const float *)(uintptr_t)ctx[RB_];
    float *h = (float *)(uintptr_t)ctx[H_], *c = (float *)(uintptr_t)ctx[C_], *out = (float *)(uintptr_t)ctx[OUT_];
    const int64_t *in = ctx + CTX_INTS;
    const int64_t T = in[I_T], U = in[I_U], kind = in[I_KIND];
    const int act = (int)in[I_ACT], ract = (int)in[I_RACT], back = (int)in[I_BACK], seq = (int)in[I_SEQ];
    const int64_t G = kind == 0 ? 4 : 3, GU = G * U, rows = r1 - r0, chunk = in[I_CHUNK];
    const float *pack1 = (const float *)(uintptr_t)ctx[PACK1_], *pack2 = (const float *)(uintptr_t)ctx[PACK2_];
    float *z = (float *)(uintptr_t)ctx[SCRATCH_] + r0 / chunk * chunk * (GU + U); /* this chunk's own part */
    float *tmp = z + rows * GU;
    float *hr = h + r0 * U, *cr = kind == 0 ? c + r0 * U : NULL;
    const float one = 1.0f;
    for (int64_t t = 0; t < T; t++) {
        const int64_t tt = back ? T - 1 - t : t;
        const float *pt = p + r0 * T * GU + tt * GU; /* row r's projection at pt + r * T * GU */
        if (kind == 0) {
            product(hr, U, rows, U, rk, GU, GU, pack1, pt, T * GU, NULL, z, GU);
            for (int64_t r = 0; r < rows; r++) {
                float *zr = z + r * GU, *hrow = hr + r * U, *crow = cr + r * U, *g = tmp + r * U;
                activate_all(zr, 2 * U, ract);     /* i, f */
                activate_all(zr + 2 * U, U, act);  /* the candidate */
                activate_all(zr + 3 * U, U, ract); /* o */
                for (int64_t j = 0; j < U; j++)
                    crow[j] = zr[U + j] * crow[j] + zr[j] * zr[2 * U + j];
                for (int64_t j = 0; j < U; j++)
                    g[j] = crow[j];
                activate_all(g, U, act);
                for (int64_t j = 0; j < U; j++)
                    hrow[j] = zr[3 * U + j] * g[j];
            }
        } else if (kind == 1) { /* GRU, reset before the recurrent product (TF.js) */
            product(hr, U, rows, U, rk, GU, 2 * U, pack1, pt, T * GU, NULL, z, GU);
            for (int64_t r = 0; r < rows; r++)
                activate_all(z + r * GU, 2 * U, ract); /* z gate, then r gate */
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < U; j++)
                    tmp[r * U + j] = z[r * GU + U + j] * hr[r * U + j];
            product(tmp, U, rows, U, rk + 2 * U, GU, U, pack2, pt + 2 * U, T * GU, NULL, z + 2 * U, GU);
            for (int64_t r = 0; r < rows; r++) {
                float *zr = z + r * GU, *hrow = hr + r * U;
                activate_all(zr + 2 * U, U, act);
                for (int64_t j = 0; j < U; j++)
                    hrow[j] = zr[j] * hrow[j] + (one + -zr[j]) * zr[2 * U + j];
            }
        } else { /* GRU, reset after: inner = h @ rk + rb */
            product(hr, U, rows, U, rk, GU, GU, pack1, NULL, 0, rb, z, GU);
            for (int64_t r = 0; r < rows; r++) {
                float *zr = z + r * GU, *hrow = hr + r * U;
                const float *xr = pt + r * T * GU;
                for (int64_t j = 0; j < 2 * U; j++)
                    zr[j] = xr[j] + zr[j];
                activate_all(zr, 2 * U, ract); /* z, r */
                for (int64_t j = 0; j < U; j++)
                    zr[2 * U + j] = xr[2 * U + j] + zr[U + j] * zr[2 * U + j];
                activate_all(zr + 2 * U, U, act);
                for (int64_t j = 0; j < U; j++)
                    hrow[j] = zr[j] * hrow[j] + (one + -zr[j]) * zr[2 * U + j];
            }
        }
        if (seq)
            for (int64_t r = 0; r < rows; r++)
                memcpy(out + (r0 + r) * T * U + t * U, hr + r * U, (size_t)U * sizeof(float));
    }
}

/* Take array ``i`` of the call: C-contiguous float32 of exactly ``count`` values (writable where asked). */
static int take_rnn(Py_buffer *views, int *held, int i, PyObject *obj, const char *what, int64_t count, int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &views[i], flags) < 0)
        return -1;
    held[i] = 1;
    Py_buffer *v = &views[i];
    if (!v->format || strcmp(v->format, "f") != 0 || v->itemsize != 4 || v->len != (Py_ssize_t)count * 4) {
        PyErr_Format(PyExc_ValueError, "_gemm.rnn_sequence: %s must be a C-contiguous float32 array of %lld values",
                     what, (long long)count);
        return -1;
    }
    return 0;
}

PyObject *gemm_rnn_sequence(PyObject *self, PyObject *args)
{
    int kind, act, ract, back, seq, threads;
    long long B, T, U;
    PyObject *op, *ork, *orb, *oh, *oc, *oout;
    if (!PyArg_ParseTuple(args, "iLLLOOOOOOiippi", &kind, &B, &T, &U, &op, &ork, &orb, &oh, &oc, &oout, &act, &ract,
                          &back, &seq, &threads))
        return NULL;
    if (sgemm_ptr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm.rnn_sequence: no sgemm configured");
        return NULL;
    }
    if (kind < 0 || kind > 2 || B < 1 || T < 1 || U < 1 || act < 0 || act > 4 || ract < 0 || ract > 4 ||
        threads < 1 || (kind == 2) != (orb != Py_None) || (kind == 0) != (oc != Py_None) ||
        (seq != 0) != (oout != Py_None) || B > (1LL << 31) || T > (1LL << 31) || U > (1LL << 20)) {
        PyErr_SetString(PyExc_ValueError, "_gemm.rnn_sequence: kind 0 (LSTM: c given), 1 (GRU) or 2 (GRU reset after: "
                                          "rb given); positive sizes; act codes 0-4; out given exactly with seq");
        return NULL;
    }
    const int64_t G = kind == 0 ? 4 : 3;
    Py_buffer views[N_RNN_ARRAYS];
    int held[N_RNN_ARRAYS] = {0};
    Job *job = NULL;
    int bad = take_rnn(views, held, P_, op, "p", B * T * G * U, 0) < 0 ||
              take_rnn(views, held, RK_, ork, "rk", U * G * U, 0) < 0 ||
              (orb != Py_None && take_rnn(views, held, RB_, orb, "rb", G * U, 0) < 0) ||
              take_rnn(views, held, H_, oh, "h", B * U, 1) < 0 ||
              (oc != Py_None && take_rnn(views, held, C_, oc, "c", B * U, 1) < 0) ||
              (oout != Py_None && take_rnn(views, held, OUT_, oout, "out", B * T * U, 1) < 0) ||
              (job = new_job()) == NULL;
    float *scratch = NULL, *pack1 = NULL, *pack2 = NULL;
    if (!bad) {
        const int64_t GU = G * U, chunk = (B + threads - 1) / threads, chunks = (B + chunk - 1) / chunk;
        const float *rk = views[RK_].buf;
        scratch = malloc((size_t)(chunks * chunk * (GU + U)) * sizeof(float));
        /* enough rows per chunk for the packed kernel: the recurrent kernel packed once for every step */
        if (scratch != NULL && chunk >= AVX512_PACK_MIN_ROWS && U <= avx512_k_max) {
            if (kind == 1) {
                if (posix_memalign((void **)&pack1, 64, (size_t)avx512_packed_size(U, 2 * U) * sizeof(float)))
                    pack1 = NULL;
                if (posix_memalign((void **)&pack2, 64, (size_t)avx512_packed_size(U, U) * sizeof(float)))
                    pack2 = NULL;
                if (pack1 && pack2) {
                    avx512_pack_into(pack1, rk, GU, U, 2 * U);
                    avx512_pack_into(pack2, rk + 2 * U, GU, U, U);
                } else { /* no memory for the packed copies: the products read the kernel as it is */
                    free(pack1);
                    free(pack2);
                    pack1 = pack2 = NULL;
                }
            } else {
                pack1 = avx512_pack(rk, U, GU);
            }
        }
        if (scratch == NULL) {
            free_job(job);
            PyErr_NoMemory();
            bad = 1;
        } else {
            for (int i = 0; i < N_RNN_ARRAYS; i++)
                job->ctx[i] = held[i] ? (int64_t)(uintptr_t)views[i].buf : 0;
            job->ctx[SCRATCH_] = (int64_t)(uintptr_t)scratch;
            job->ctx[PACK1_] = (int64_t)(uintptr_t)pack1;
            job->ctx[PACK2_] = (int64_t)(uintptr_t)pack2;
            int64_t ints[] = {B, T, U, kind, act, ract, back, seq, chunk};
            memcpy(job->ctx + CTX_INTS, ints, sizeof ints);
            job->rows = rnn_rows;
            job->m = B;
            job->chunk = chunk;
            job->chunks = (long)chunks;
            dispatch(job, threads);
        }
    } else if (job == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    free(scratch);
    free(pack1);
    free(pack2);
    for (int i = 0; i < N_RNN_ARRAYS; i++)
        if (held[i])
            PyBuffer_Release(&views[i]);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}
