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
#include "rnn_math.h"

enum { P_, RK_, RB_, H_, C_, OUT_, N_RNN_ARRAYS };
/* context slots beyond the arrays: the scratch (every chunk's gates and temporaries) and the packed recurrent
 * kernel (its first 2U or all columns, then its last U for the GRU's second product), or 0 */
enum { SCRATCH_ = N_RNN_ARRAYS, PACK1_, PACK2_, ZS_, CS_, HS_ };
enum { I_B, I_T, I_U, I_KIND, I_ACT, I_RACT, I_BACK, I_SEQ, I_CHUNK };


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
    float *zs = (float *)(uintptr_t)ctx[ZS_], *cs = (float *)(uintptr_t)ctx[CS_], *hs = (float *)(uintptr_t)ctx[HS_];
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
                if (zs) /* training: the pre-activations, kept for the gradient */
                    memcpy(zs + ((r0 + r) * T + t) * GU, zr, (size_t)GU * sizeof(float));
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
                if (cs) {
                    memcpy(cs + ((r0 + r) * T + t) * U, crow, (size_t)U * sizeof(float));
                    memcpy(hs + ((r0 + r) * T + t) * U, hrow, (size_t)U * sizeof(float));
                }
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
int take_rnn(Py_buffer *views, int *held, int i, PyObject *obj, const char *what, int64_t count, int writable)
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
    PyObject *op, *ork, *orb, *oh, *oc, *oout, *ozs = Py_None, *ocs = Py_None, *ohs = Py_None;
    if (!PyArg_ParseTuple(args, "iLLLOOOOOOiippi|OOO", &kind, &B, &T, &U, &op, &ork, &orb, &oh, &oc, &oout, &act,
                          &ract, &back, &seq, &threads, &ozs, &ocs, &ohs))
        return NULL;
    const int save = ozs != Py_None;
    if ((save && kind != 0) || (ozs == Py_None) != (ocs == Py_None) || (ozs == Py_None) != (ohs == Py_None)) {
        PyErr_SetString(PyExc_ValueError, "_gemm.rnn_sequence: zs, cs and hs (the training form) together, LSTM only");
        return NULL;
    }
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
    Py_buffer views[N_RNN_ARRAYS], kept[3];
    int held[N_RNN_ARRAYS] = {0}, kept_held[3] = {0};
    Job *job = NULL;
    int bad = take_rnn(views, held, P_, op, "p", B * T * G * U, 0) < 0 ||
              take_rnn(views, held, RK_, ork, "rk", U * G * U, 0) < 0 ||
              (orb != Py_None && take_rnn(views, held, RB_, orb, "rb", G * U, 0) < 0) ||
              take_rnn(views, held, H_, oh, "h", B * U, 1) < 0 ||
              (oc != Py_None && take_rnn(views, held, C_, oc, "c", B * U, 1) < 0) ||
              (oout != Py_None && take_rnn(views, held, OUT_, oout, "out", B * T * U, 1) < 0) ||
              (save && (take_rnn(kept, kept_held, 0, ozs, "zs", B * T * G * U, 1) < 0 ||
                        take_rnn(kept, kept_held, 1, ocs, "cs", B * T * U, 1) < 0 ||
                        take_rnn(kept, kept_held, 2, ohs, "hs", B * T * U, 1) < 0)) ||
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
            for (int i = 0; i < 3; i++)
                job->ctx[ZS_ + i] = kept_held[i] ? (int64_t)(uintptr_t)kept[i].buf : 0;
            int64_t ints[] = {B, T, U, kind, act, ract, back, seq, chunk};
            memcpy(job->ctx + CTX_INTS, ints, sizeof ints);
            dispatch_rows(job, rnn_rows, B, chunk, threads);
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
    for (int i = 0; i < 3; i++)
        if (kept_held[i])
            PyBuffer_Release(&kept[i]);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}
