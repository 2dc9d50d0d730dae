/* The Python entry points of ndflow.backends.cpu.native._gemm (configure, matmul, conv, run_rows, ...): arguments
 * checked and taken here, jobs built and run by the pool (gemm_pool.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "dw_avx512.h"
#include "gemm_avx512.h"
#include "gemm_pool.h"
#include "pack_cache.h"
#include "pool_avx512.h"
#include "rnn_seq.h"

/* The arrays of one call: a, b, out, then bias, add, slopes where given (a NULL object: not given). */
enum { A_, B_, OUT_, BIAS_, ADD_, SLOPES_, N_ARRAYS };

typedef struct {
    Py_buffer view[N_ARRAYS];
    int held[N_ARRAYS];
} Arrays;

static void release_arrays(Arrays *arrays)
{
    for (int i = 0; i < N_ARRAYS; i++)
        if (arrays->held[i])
            PyBuffer_Release(&arrays->view[i]);
}

/* Take array ``i`` (a C-contiguous float32 array of ``ndim`` dims; ``rows``/``cols`` checked where >= 0). */
static int take(Arrays *arrays, int i, PyObject *obj, const char *what, int ndim, int64_t rows, int64_t cols)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND | (i == OUT_ ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &arrays->view[i], flags) < 0)
        return -1;
    arrays->held[i] = 1;
    Py_buffer *v = &arrays->view[i];
    int ok = v->format && strcmp(v->format, "f") == 0 && v->itemsize == 4 && v->ndim == ndim;
    if (ok && ndim == 2)
        ok = (rows < 0 || v->shape[0] == rows) && (cols < 0 || v->shape[1] == cols);
    else if (ok)
        ok = cols < 0 || v->shape[0] == cols;
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "_gemm.matmul: %s must be a C-contiguous float32 array of the right shape",
                     what);
        return -1;
    }
    return 0;
}

/* The epilogue's arrays where given (Py_None: not given): bias and slopes of n values, add of m x n. */
static int take_epilogue(Arrays *arrays, PyObject *obias, PyObject *oadd, PyObject *oslopes, int64_t m, int64_t n)
{
    if (obias != Py_None && take(arrays, BIAS_, obias, "bias", 1, -1, n) < 0)
        return -1;
    if (oadd != Py_None && take(arrays, ADD_, oadd, "add", 2, m, n) < 0)
        return -1;
    if (oslopes != Py_None && take(arrays, SLOPES_, oslopes, "slopes", 1, -1, n) < 0)
        return -1;
    return 0;
}

/* A job (MemoryError set where there is no memory for one). */
static Job *job_or_error(void)
{
    Job *job = new_job();
    if (job == NULL)
        PyErr_NoMemory();
    return job;
}

/* A product job's right matrix, output, epilogue and chunks, from the arrays taken. */
static void set_product_from(Job *job, const Arrays *arrays, int64_t m, int64_t k, int64_t n, int act, float alpha,
                             int64_t chunk, int by_cols, const float *prepacked)
{
    set_product(job, arrays->view[B_].buf, arrays->view[OUT_].buf,
                arrays->held[BIAS_] ? arrays->view[BIAS_].buf : NULL, arrays->held[ADD_] ? arrays->view[ADD_].buf : NULL,
                arrays->held[SLOPES_] ? arrays->view[SLOPES_].buf : NULL, m, k, n, act, alpha, chunk, by_cols,
                prepacked);
}

/* The kept packed copy of the right matrix (pack_cache.c) where the product packs it and its memory is a kept
 * region; NULL otherwise. Released by the caller after the job (pack_cache_release). */
static const float *kept_pack(const Arrays *arrays, int64_t m, int64_t k, int64_t n, int by_cols)
{
    return product_packs(m, k, by_cols) ? pack_cache_get(arrays->view[B_].buf, k, n) : NULL;
}

static PyObject *gemm_configure(PyObject *self, PyObject *args)
{
    unsigned long long address;
    int ilp64;
    long long spin_us = 100, k_max = 0;
    if (!PyArg_ParseTuple(args, "Kp|LL", &address, &ilp64, &spin_us, &k_max))
        return NULL;
    if (spin_us < 0 || k_max < 0) {
        PyErr_SetString(PyExc_ValueError, "_gemm.configure: spin_us and avx512_k_max must be at least 0");
        return NULL;
    }
    sgemm_ptr = (void *)(uintptr_t)address;
    sgemm_ilp64 = ilp64;
    spin_ns = spin_us * 1000;
    avx512_k_max = avx512_gemm_supported() ? k_max : 0;
    Py_RETURN_NONE;
}

/* matmul(a, b, out, bias, add, act, threads, chunk, alpha=0, slopes=None, by_cols=False): out = act(a @ b + bias +
 * add); act 0 linear, 1 relu, 2 relu6, 3 leaky relu (alpha), 4 prelu (one slope per column). Chunks of ``chunk``
 * rows, or with ``by_cols`` of ``chunk`` columns (each thread then packs only its columns of ``b``). */
static PyObject *gemm_matmul(PyObject *self, PyObject *args)
{
    PyObject *oa, *ob, *oout, *obias, *oadd, *oslopes = Py_None;
    int act, threads;
    long long chunk;
    float alpha = 0.0f;
    int by_cols = 0;
    if (!PyArg_ParseTuple(args, "OOOOOiiL|fOp", &oa, &ob, &oout, &obias, &oadd, &act, &threads, &chunk, &alpha,
                          &oslopes, &by_cols))
        return NULL;
    if (sgemm_ptr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm.matmul: no sgemm configured");
        return NULL;
    }
    if (act < 0 || act > 4 || threads < 1 || chunk < 1 || (act == 4) != (oslopes != Py_None)) {
        PyErr_SetString(PyExc_ValueError,
                        "_gemm.matmul: act must be 0-4 (slopes given exactly for 4), threads and chunk_rows positive");
        return NULL;
    }
    Arrays arrays = {0};
    if (take(&arrays, A_, oa, "a", 2, -1, -1) < 0) {
        release_arrays(&arrays);
        return NULL;
    }
    int64_t m = arrays.view[A_].shape[0], k = arrays.view[A_].shape[1];
    if (take(&arrays, B_, ob, "b", 2, k, -1) < 0) {
        release_arrays(&arrays);
        return NULL;
    }
    int64_t n = arrays.view[B_].shape[1];
    Job *job = NULL;
    if (take(&arrays, OUT_, oout, "out", 2, m, n) < 0 || take_epilogue(&arrays, obias, oadd, oslopes, m, n) < 0 ||
        (job = job_or_error()) == NULL) {
        release_arrays(&arrays);
        return NULL;
    }
    job->a = arrays.view[A_].buf;
    const float *packed = kept_pack(&arrays, m, k, n, by_cols);
    set_product_from(job, &arrays, m, k, n, act, alpha, chunk, by_cols, packed);
    int out_of_memory = dispatch(job, threads);
    pack_cache_release(packed);
    release_arrays(&arrays);
    if (out_of_memory)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* Take array ``i`` as a C-contiguous float32 buffer of exactly ``count`` values, whatever its shape. */
static int take_flat(Arrays *arrays, int i, PyObject *obj, const char *what, int64_t count)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (i == OUT_ ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &arrays->view[i], flags) < 0)
        return -1;
    arrays->held[i] = 1;
    Py_buffer *v = &arrays->view[i];
    if (!v->format || strcmp(v->format, "f") != 0 || v->itemsize != 4 || v->len != (Py_ssize_t)count * 4) {
        PyErr_Format(PyExc_ValueError, "_gemm.product: %s must be a C-contiguous float32 array of %lld values", what,
                     (long long)count);
        return -1;
    }
    return 0;
}

/* product(a, b, out, bias, add, slopes, m, k, n, act, threads, chunk, alpha, by_cols): matmul's product and
 * epilogue on arrays of any shape holding m x k, k x n and m x n values (bias and slopes n, or None): no
 * reshapes to make first, and one fast call. ValueError, with nothing written, for an array that does not fit. */
static PyObject *gemm_product(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError,
                        "_gemm.product(a, b, out, bias, add, slopes, m, k, n, act, threads, chunk, alpha, by_cols)");
        return NULL;
    }
    long long dims[6];
    for (int i = 0; i < 6; i++)
        if ((dims[i] = PyLong_AsLongLong(args[6 + i])) == -1 && PyErr_Occurred())
            return NULL;
    long long m = dims[0], k = dims[1], n = dims[2], act = dims[3], threads = dims[4], chunk = dims[5];
    double alpha = PyFloat_AsDouble(args[12]);
    int by_cols = PyObject_IsTrue(args[13]);
    if ((alpha == -1.0 && PyErr_Occurred()) || by_cols < 0)
        return NULL;
    if (sgemm_ptr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm.product: no sgemm configured");
        return NULL;
    }
    if (m < 1 || k < 1 || n < 1 || act < 0 || act > 4 || threads < 1 || threads > 1024 || chunk < 1 ||
        (act == 4) != (args[5] != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "_gemm.product: m, k, n, threads and chunk positive, act 0-4 (slopes given "
                                          "exactly for 4)");
        return NULL;
    }
    long long mk, kn, mn, most = PY_SSIZE_T_MAX / 4;
    if (__builtin_mul_overflow(m, k, &mk) || __builtin_mul_overflow(k, n, &kn) || __builtin_mul_overflow(m, n, &mn) ||
        mk > most || kn > most || mn > most) {
        PyErr_SetString(PyExc_ValueError, "_gemm.product: m, k and n too large");
        return NULL;
    }
    Arrays arrays = {0};
    Job *job = NULL;
    if (take_flat(&arrays, A_, args[0], "a", mk) < 0 || take_flat(&arrays, B_, args[1], "b", kn) < 0 ||
        take_flat(&arrays, OUT_, args[2], "out", mn) < 0 ||
        (args[3] != Py_None && take_flat(&arrays, BIAS_, args[3], "bias", n) < 0) ||
        (args[4] != Py_None && take_flat(&arrays, ADD_, args[4], "add", mn) < 0) ||
        (args[5] != Py_None && take_flat(&arrays, SLOPES_, args[5], "slopes", n) < 0) || (job = job_or_error()) == NULL) {
        release_arrays(&arrays);
        return NULL;
    }
    job->a = arrays.view[A_].buf;
    const float *packed = kept_pack(&arrays, m, k, n, by_cols);
    set_product_from(job, &arrays, m, k, n, (int)act, (float)alpha, chunk, by_cols, packed);
    int out_of_memory = dispatch(job, (int)threads);
    pack_cache_release(packed);
    release_arrays(&arrays);
    if (out_of_memory)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* The context of a row or convolution job from Python: ``arrays`` (up to 8 C-contiguous float32 arrays of at
 * most 4 dims; their buffers are held in ``views`` until the caller releases the first ``*held``), ``ints`` (up
 * to 16) and ``reals`` (up to 8 floats). -1 with an exception set on bad input. */
static int fill_context(Job *job, PyObject *oarrays, PyObject *oints, PyObject *oreals, Py_buffer *views,
                        Py_ssize_t *held)
{
    Py_ssize_t n_arrays = PyTuple_GET_SIZE(oarrays), n_ints = PyTuple_GET_SIZE(oints),
               n_reals = PyTuple_GET_SIZE(oreals);
    *held = 0;
    if (n_arrays > CTX_ARRAYS || n_ints > CTX_REALS - CTX_INTS || n_reals > CTX_SLOTS - CTX_REALS) {
        PyErr_SetString(PyExc_ValueError, "_gemm: a job's context holds at most 8 arrays, 16 ints and 8 reals");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n_arrays; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(oarrays, i), &views[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND) <
            0)
            return -1;
        *held = i + 1;
        Py_buffer *v = &views[i];
        if (!v->format || strcmp(v->format, "f") != 0 || v->itemsize != 4 || v->ndim > 4) {
            PyErr_Format(PyExc_ValueError,
                         "_gemm: context array %zd must be a C-contiguous float32 array of at most 4 dimensions", i);
            return -1;
        }
        job->ctx[i] = (int64_t)(uintptr_t)v->buf;
        for (int d = 0; d < v->ndim; d++)
            job->ctx[CTX_SHAPES + 4 * i + d] = (int64_t)v->shape[d];
    }
    for (Py_ssize_t i = 0; i < n_ints; i++) {
        long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(oints, i));
        if (value == -1 && PyErr_Occurred())
            return -1;
        job->ctx[CTX_INTS + i] = value;
    }
    for (Py_ssize_t i = 0; i < n_reals; i++) {
        double value = PyFloat_AsDouble(PyTuple_GET_ITEM(oreals, i));
        if (value == -1.0 && PyErr_Occurred())
            return -1;
        memcpy(&job->ctx[CTX_REALS + i], &value, sizeof value);
    }
    return 0;
}

static void release_views(Py_buffer *views, Py_ssize_t held)
{
    for (Py_ssize_t i = 0; i < held; i++)
        PyBuffer_Release(&views[i]);
}

/* conv(cols_address, arrays, ints, b, out, bias, add, act, threads, chunk_rows, alpha=0, slopes=None): a
 * convolution as im2col and one product, ``out = act(cols @ b + bias + add)``, where each chunk's rows of the
 * column matrix are written by ``cols(ctx, r0, r1, dst)`` (the context from ``arrays`` and ``ints``) into the
 * claiming thread's buffer just before their product: they never leave its cache. */
static PyObject *gemm_conv(PyObject *self, PyObject *args)
{
    unsigned long long address;
    PyObject *ocarrays, *ocints, *ob, *oout, *obias, *oadd, *oslopes = Py_None;
    int act, threads;
    long long chunk;
    float alpha = 0.0f;
    if (!PyArg_ParseTuple(args, "KO!O!OOOOiiL|fO", &address, &PyTuple_Type, &ocarrays, &PyTuple_Type, &ocints, &ob,
                          &oout, &obias, &oadd, &act, &threads, &chunk, &alpha, &oslopes))
        return NULL;
    if (sgemm_ptr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm.conv: no sgemm configured");
        return NULL;
    }
    if (address == 0 || act < 0 || act > 4 || threads < 1 || chunk < 1 || (act == 4) != (oslopes != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "_gemm.conv: a function address; act must be 0-4 (slopes given exactly "
                                          "for 4), threads and chunk_rows positive");
        return NULL;
    }
    Arrays arrays = {0};
    if (take(&arrays, B_, ob, "b", 2, -1, -1) < 0) {
        release_arrays(&arrays);
        return NULL;
    }
    int64_t k = arrays.view[B_].shape[0], n = arrays.view[B_].shape[1];
    if (take(&arrays, OUT_, oout, "out", 2, -1, n) < 0) {
        release_arrays(&arrays);
        return NULL;
    }
    int64_t m = arrays.view[OUT_].shape[0];
    Job *job = NULL;
    if (take_epilogue(&arrays, obias, oadd, oslopes, m, n) < 0 || (job = job_or_error()) == NULL) {
        release_arrays(&arrays);
        return NULL;
    }
    Py_buffer views[CTX_ARRAYS];
    Py_ssize_t held = 0;
    PyObject *no_reals = PyTuple_New(0);
    int bad = no_reals == NULL || fill_context(job, ocarrays, ocints, no_reals, views, &held) < 0;
    Py_XDECREF(no_reals);
    if (bad) {
        free_job(job);
        release_views(views, held);
        release_arrays(&arrays);
        return NULL;
    }
    job->cols = (cols_fn)(uintptr_t)address;
    const float *packed = kept_pack(&arrays, m, k, n, 0);
    set_product_from(job, &arrays, m, k, n, act, alpha, chunk, 0, packed);
    int out_of_memory = dispatch(job, threads);
    pack_cache_release(packed);
    release_views(views, held);
    release_arrays(&arrays);
    if (out_of_memory)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* run_rows(fn_address, arrays, ints, reals, rows, chunk_rows, threads): fn(ctx, r0, r1) over [0, rows) in chunks
 * of chunk_rows, on the caller and the workers (the context's layout above; the caller sees that the arrays
 * written are writable) */
static PyObject *gemm_run_rows(PyObject *self, PyObject *args)
{
    unsigned long long address;
    PyObject *oarrays, *oints, *oreals;
    long long rows, chunk;
    int threads;
    if (!PyArg_ParseTuple(args, "KO!O!O!LLi", &address, &PyTuple_Type, &oarrays, &PyTuple_Type, &oints,
                          &PyTuple_Type, &oreals, &rows, &chunk, &threads))
        return NULL;
    if (address == 0 || rows < 0 || chunk < 1 || threads < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "_gemm.run_rows: a function address; rows >= 0, chunk_rows and threads positive");
        return NULL;
    }
    Job *job = job_or_error();
    if (job == NULL)
        return NULL;
    Py_buffer views[CTX_ARRAYS];
    Py_ssize_t held = 0;
    if (fill_context(job, oarrays, oints, oreals, views, &held) < 0) {
        free_job(job);
        release_views(views, held);
        return NULL;
    }
    dispatch_rows(job, (rows_fn)(uintptr_t)address, rows, chunk, threads);
    release_views(views, held);
    Py_RETURN_NONE;
}

static PyObject *gemm_workers(PyObject *self, PyObject *noargs) { return PyLong_FromLong(n_workers); }

/* packs(clear=False): (entries, bytes, regions) of the kept packed weights (pack_cache.c), after dropping the
 * copies not in use when ``clear`` */
static PyObject *gemm_packs(PyObject *self, PyObject *args)
{
    int clear = 0;
    if (!PyArg_ParseTuple(args, "|p", &clear))
        return NULL;
    if (clear)
        pack_cache_clear();
    int64_t count, bytes, kept;
    pack_cache_stats(&count, &bytes, &kept);
    return Py_BuildValue("(LLL)", (long long)count, (long long)bytes, (long long)kept);
}

/* keep(address, bytes) / forget(address, bytes): memory that no kernel writes (a model's weights) whose products
 * keep their packed right matrices; forget before the memory is freed */
static PyObject *gemm_keep(PyObject *self, PyObject *args)
{
    unsigned long long address;
    long long bytes;
    if (!PyArg_ParseTuple(args, "KL", &address, &bytes))
        return NULL;
    if (address == 0 || bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "_gemm.keep: an address and a size of at least 0");
        return NULL;
    }
    return PyBool_FromLong(pack_cache_keep((const void *)(uintptr_t)address, bytes) == 0);
}

static PyObject *gemm_forget(PyObject *self, PyObject *args)
{
    unsigned long long address;
    long long bytes;
    if (!PyArg_ParseTuple(args, "KL", &address, &bytes))
        return NULL;
    pack_cache_forget((const void *)(uintptr_t)address, bytes);
    Py_RETURN_NONE;
}

/* hold(delta, threads): a run of many kernels starts (1: the workers for ``threads`` started and kept awake) or
 * ends (-1); the number of holds now */
static PyObject *gemm_hold(PyObject *self, PyObject *args)
{
    int delta, threads;
    if (!PyArg_ParseTuple(args, "ii", &delta, &threads))
        return NULL;
    if (delta != 1 && delta != -1) {
        PyErr_SetString(PyExc_ValueError, "hold: delta must be 1 or -1");
        return NULL;
    }
    int held = pool_hold(delta, threads);
    if (held < 0) {
        PyErr_SetString(PyExc_RuntimeError, "hold: could not start the worker threads");
        return NULL;
    }
    return PyLong_FromLong(held);
}

static PyObject *gemm_avx512_k_max(PyObject *self, PyObject *noargs) { return PyLong_FromLongLong(avx512_k_max); }

/* dw_address(size): the address of dw_avx512.c's row function of size x size filters (3 or 5) for run_rows (0
 * where the CPU lacks AVX-512F or for another size) */
static PyObject *gemm_dw_address(PyObject *self, PyObject *args)
{
    int size;
    if (!PyArg_ParseTuple(args, "i", &size))
        return NULL;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)dw_avx512_rows(size));
}

/* max_pool_address(): the address of pool_avx512.c's max pooling row function for run_rows (0 without AVX-512F) */
static PyObject *gemm_max_pool_address(PyObject *self, PyObject *noargs)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)max_pool_avx512_rows());
}

static PyMethodDef methods[] = {
    {"configure", gemm_configure, METH_VARARGS,
     "configure(sgemm_address, ilp64, spin_us=100, avx512_k_max=0): the cblas_sgemm to call; how long idle workers "
     "spin; products whose b has at most avx512_k_max rows run gemm_avx512.c's kernel (where AVX-512F is)"},
    {"max_pool_address", gemm_max_pool_address, METH_NOARGS,
     "max_pool_address(): the AVX-512 max pooling row function for run_rows (0: not on this CPU)"},
    {"dw_address", gemm_dw_address, METH_VARARGS,
     "dw_address(size): the AVX-512 size x size depthwise row function for run_rows (0: not on this CPU, or size)"},
    {"avx512_k_max", gemm_avx512_k_max, METH_NOARGS, "avx512_k_max(): the configured limit (0: the AVX-512 kernel is off)"},
    {"matmul", gemm_matmul, METH_VARARGS,
     "matmul(a, b, out, bias, add, act, threads, chunk, alpha=0, slopes=None, by_cols=False): "
     "out = act(a @ b + bias + add), in chunks of rows (or of columns)"},
    {"product", (PyCFunction)(void (*)(void))gemm_product, METH_FASTCALL,
     "product(a, b, out, bias, add, slopes, m, k, n, act, threads, chunk, alpha, by_cols): matmul on arrays of any "
     "shape holding m x k, k x n, m x n values"},
    {"run_rows", gemm_run_rows, METH_VARARGS,
     "run_rows(fn_address, arrays, ints, reals, rows, chunk_rows, threads): fn(ctx, r0, r1) over the rows' chunks"},
    {"conv", gemm_conv, METH_VARARGS,
     "conv(cols_address, arrays, ints, b, out, bias, add, act, threads, chunk_rows, alpha=0, slopes=None): "
     "im2col per chunk, then out = act(cols @ b + bias + add)"},
    {"hold", gemm_hold, METH_VARARGS,
     "hold(delta, threads): 1 when a run of many kernels starts (workers kept spinning), -1 when it ends"},
    {"packs", gemm_packs, METH_VARARGS,
     "packs(clear=False): (entries, bytes, regions) of the packed weights kept between calls"},
    {"keep", gemm_keep, METH_VARARGS, "keep(address, bytes): memory no kernel writes; its products keep their packs"},
    {"forget", gemm_forget, METH_VARARGS, "forget(address, bytes): drop a kept region and its packs"},
    {"rnn_sequence", gemm_rnn_sequence, METH_VARARGS,
     "rnn_sequence(kind, B, T, U, p, rk, rb, h, c, out, act, ract, backwards, seq, threads): an LSTM's or GRU's time "
     "loop (rnn_seq.h)"},
    {"lstm_grad", gemm_lstm_grad, METH_VARARGS,
     "lstm_grad(B, T, U, d_out, dh, dc, rkt, c0, zs, cs, dp, act, ract, backwards, seq, threads): back-propagation "
     "through an LSTM's loop (rnn_seq.h)"},
    {"workers", gemm_workers, METH_NOARGS, "workers(): native worker threads started so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gemm", "float32 products split over native threads",
                                    -1, methods};

PyMODINIT_FUNC PyInit__gemm(void)
{
    if (pool_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm: no thread-local key for the column buffers");
        return NULL;
    }
    return PyModule_Create(&module);
}
