/* Back-propagation through an LSTM's time loop (``lstm_grad`` of the C module), for training: the loop of
 * backends/shared/rnn_loop.py's run_lstm_grad, the batch's rows split over the threads (each row's sequence is
 * independent), per step the gates' gradients in vectorized passes and one product with the transposed recurrent
 * kernel. The numpy loop took 12 ms of an LSTM(128) text model's 27 ms training step (batch 32, 50 steps). */
#include "rnn_seq.h"

#include <stdlib.h>
#include <string.h>

#include "rnn_math.h"

enum { DOUT_, DH_, DC_, RKT_, C0_, ZS_, CS_, DP_, SCRATCH_, PACKED_, N_GRAD_SLOTS };
/* scratch floats per row: the gates and their gradients (4U each), the cell's activation and its gradient (U each) */
#define ROW_SCRATCH(U) (10 * (U))
enum { I_T, I_U, I_ACT, I_RACT, I_BACK, I_SEQ, I_CHUNK };

/* d activation / d pre-activation from the pre-activation ``x`` and the activation ``y``, as the ops' gradients */
static inline float activation_grad(float x, float y, int code)
{
    switch (code) {
    case 1:
        return 1.0f - y * y;
    case 2:
        return y * (1.0f - y);
    case 3: {
        float s = 0.5f + 0.2f * x;
        return s >= 0.0f && s <= 1.0f ? 0.2f : 0.0f;
    }
    case 4:
        return x > 0.0f ? 1.0f : 0.0f;
    default:
        return 1.0f;
    }
}

/* ``activation_grad`` over ``n`` values, one loop per code (each vectorizes) */
static void activation_grad_all(float *out, const float *x, const float *y, int64_t n, int code)
{
    if (code == 1)
        for (int64_t j = 0; j < n; j++)
            out[j] = 1.0f - y[j] * y[j];
    else if (code == 2)
        for (int64_t j = 0; j < n; j++)
            out[j] = y[j] * (1.0f - y[j]);
    else if (code == 3)
        for (int64_t j = 0; j < n; j++)
            out[j] = activation_grad(x[j], y[j], 3);
    else if (code == 4)
        for (int64_t j = 0; j < n; j++)
            out[j] = x[j] > 0.0f ? 1.0f : 0.0f;
    else
        for (int64_t j = 0; j < n; j++)
            out[j] = 1.0f;
}

static void lstm_grad_rows(int64_t *ctx, int64_t r0, int64_t r1)
{
    const float *d_out = (const float *)(uintptr_t)ctx[DOUT_], *rkt = (const float *)(uintptr_t)ctx[RKT_];
    const float *c0 = (const float *)(uintptr_t)ctx[C0_], *zs = (const float *)(uintptr_t)ctx[ZS_];
    const float *cs = (const float *)(uintptr_t)ctx[CS_];
    float *dh_all = (float *)(uintptr_t)ctx[DH_], *dc_all = (float *)(uintptr_t)ctx[DC_];
    float *dp = (float *)(uintptr_t)ctx[DP_];
    const int64_t *in = ctx + CTX_INTS;
    const int64_t T = in[I_T], U = in[I_U], chunk = in[I_CHUNK], GU = 4 * U, rows = r1 - r0;
    const int act = (int)in[I_ACT], ract = (int)in[I_RACT], back = (int)in[I_BACK], seq = (int)in[I_SEQ];
    float *gates = (float *)(uintptr_t)ctx[SCRATCH_] + r0 / chunk * chunk * ROW_SCRATCH(U); /* this chunk's part */
    float *ac = gates + rows * GU, *dgates = ac + rows * U, *dac = dgates + rows * GU;
    const float *packed = (const float *)(uintptr_t)ctx[PACKED_];
    float *dh = dh_all + r0 * U, *dc = dc_all + r0 * U;
    if (!seq)
        for (int64_t j = 0; j < rows * U; j++)
            dh[j] += d_out[r0 * U + j];
    for (int64_t t = T - 1; t >= 0; t--) {
        const int64_t tt = back ? T - 1 - t : t;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t row = r0 + r;
            const float *z = zs + (row * T + t) * GU, *c = cs + (row * T + t) * U;
            const float *c_prev = t > 0 ? cs + (row * T + t - 1) * U : c0 + row * U;
            float *g = gates + r * GU, *a = ac + r * U, *dhr = dh + r * U, *dcr = dc + r * U;
            float *dg = dgates + r * GU, *da = dac + r * U;
            float *dz = dp + (row * T + tt) * GU;
            if (seq)
                for (int64_t j = 0; j < U; j++)
                    dhr[j] += d_out[(row * T + t) * U + j];
            memcpy(g, z, (size_t)GU * sizeof(float));
            activate_all(g, 2 * U, ract);
            activate_all(g + 2 * U, U, act);
            activate_all(g + 3 * U, U, ract);
            memcpy(a, c, (size_t)U * sizeof(float));
            activate_all(a, U, act);
            activation_grad_all(dg, z, g, 2 * U, ract);
            activation_grad_all(dg + 2 * U, z + 2 * U, g + 2 * U, U, act);
            activation_grad_all(dg + 3 * U, z + 3 * U, g + 3 * U, U, ract);
            activation_grad_all(da, c, a, U, act);
            for (int64_t j = 0; j < U; j++) {
                const float i = g[j], f = g[U + j], gg = g[2 * U + j], o = g[3 * U + j];
                const float d_c = dcr[j] + dhr[j] * o * da[j];
                dz[j] = d_c * gg * dg[j];
                dz[U + j] = d_c * c_prev[j] * dg[U + j];
                dz[2 * U + j] = d_c * i * dg[2 * U + j];
                dz[3 * U + j] = dhr[j] * a[j] * dg[3 * U + j];
                dcr[j] = d_c * f;
            }
        }
        /* dh = dz @ rk.T for the chunk's rows (their dz rows lie T * 4U apart) */
        product(dp + (r0 * T + tt) * GU, T * GU, rows, GU, rkt, U, U, packed, NULL, 0, NULL, dh, U);
    }
}

PyObject *gemm_lstm_grad(PyObject *self, PyObject *args)
{
    long long B, T, U;
    PyObject *od_out, *odh, *odc, *orkt, *oc0, *ozs, *ocs, *odp;
    int act, ract, back, seq, threads;
    if (!PyArg_ParseTuple(args, "LLLOOOOOOOOiippi", &B, &T, &U, &od_out, &odh, &odc, &orkt, &oc0, &ozs, &ocs, &odp,
                          &act, &ract, &back, &seq, &threads))
        return NULL;
    if (B < 1 || T < 1 || U < 1 || act < 0 || act > 4 || ract < 0 || ract > 4 || threads < 1 || B > (1LL << 31) ||
        T > (1LL << 31) || U > (1LL << 20)) {
        PyErr_SetString(PyExc_ValueError, "_gemm.lstm_grad: positive sizes; act codes 0-4; threads positive");
        return NULL;
    }
    if (sgemm_ptr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm.lstm_grad: no sgemm configured");
        return NULL;
    }
    Py_buffer views[8];
    int held[8] = {0};
    Job *job = NULL;
    int bad = take_rnn(views, held, DOUT_, od_out, "d_out", seq ? B * T * U : B * U, 0) < 0 ||
              take_rnn(views, held, DH_, odh, "dh", B * U, 1) < 0 || take_rnn(views, held, DC_, odc, "dc", B * U, 1) < 0 ||
              take_rnn(views, held, RKT_, orkt, "rkt", 4 * U * U, 0) < 0 ||
              take_rnn(views, held, C0_, oc0, "c0", B * U, 0) < 0 ||
              take_rnn(views, held, ZS_, ozs, "zs", B * T * 4 * U, 0) < 0 ||
              take_rnn(views, held, CS_, ocs, "cs", B * T * U, 0) < 0 ||
              take_rnn(views, held, DP_, odp, "dp", B * T * 4 * U, 1) < 0 || (job = new_job()) == NULL;
    float *scratch = NULL, *packed = NULL;
    if (!bad) {
        const int64_t chunk = (B + threads - 1) / threads, chunks = (B + chunk - 1) / chunk;
        scratch = malloc((size_t)(chunks * chunk * ROW_SCRATCH(U)) * sizeof(float));
        /* enough rows per chunk for the packed kernel: the transposed recurrent kernel packed once for every step */
        if (scratch != NULL && chunk >= AVX512_PACK_MIN_ROWS && 4 * U <= avx512_k_max)
            packed = avx512_pack(views[RKT_].buf, 4 * U, U);
        if (scratch == NULL) {
            free_job(job);
            PyErr_NoMemory();
            bad = 1;
        } else {
            for (int i = 0; i < 8; i++)
                job->ctx[i] = (int64_t)(uintptr_t)views[i].buf;
            job->ctx[SCRATCH_] = (int64_t)(uintptr_t)scratch;
            job->ctx[PACKED_] = (int64_t)(uintptr_t)packed;
            int64_t ints[] = {T, U, act, ract, back, seq, chunk};
            memcpy(job->ctx + CTX_INTS, ints, sizeof ints);
            dispatch_rows(job, lstm_grad_rows, B, chunk, threads);
        }
    } else if (job == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    free(scratch);
    free(packed);
    for (int i = 0; i < 8; i++)
        if (held[i])
            PyBuffer_Release(&views[i]);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}
