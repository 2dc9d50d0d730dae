/* ndflow.backends.cpu._gemm: float32 matrix products split by rows over a small pool of native threads, with
 * the convolution epilogue (bias, residual, relu/relu6) applied to each chunk while it is in cache.
 *
 * Why: the cpu backend runs OpenBLAS on one thread (its own threads spin and stall on a shared machine) and splits
 * large products itself; a Python thread pool takes ~70 us to wake a worker, so products under ~40 MFLOP ran on
 * one core. Here a worker waits for work spinning (then sleeping, after a while without any), so handing over a
 * job costs a few microseconds.
 *
 * Robustness on a busy machine: the rows are cut into chunks that the caller and the workers claim one at a time
 * (an atomic counter). A worker that the OS has not scheduled claims nothing, and the caller does every chunk
 * itself: never slower than one thread, save the few chunks a worker claimed and is still running.
 *
 * Row jobs (run_rows): the same pool runs any kernel that computes independent output rows, given as a C function
 * ``fn(ctx, r0, r1)`` (the depthwise convolutions' rows, compiled by numba as C callbacks) and a context of 64
 * 64-bit slots: the arrays' data pointers (0-7), their shapes (8-39, four slots per array), integers (40-55)
 * and doubles (56-63). A row's values do not depend on which thread computes it.
 *
 * Products of fewer rows split by columns instead (``by_cols``): each thread then packs only its columns of the
 * right matrix. Products split by rows whose inner dimension is at most configure's avx512_k_max run
 * gemm_avx512.c's kernel (where the CPU has AVX-512F) instead of cblas_sgemm, epilogue included.
 *
 * Results: each chunk is one cblas_sgemm call on its rows (the library's single-threaded kernel), then the
 * epilogue in the order of the numba kernels (bias, residual, activation), so a chunk has the bits of np.matmul on
 * its rows and of the numba epilogue. Chunks depend only on the shape and the thread count (deterministic); the
 * whole product may differ from one unsplit np.matmul by float32 rounding, as OpenBLAS picks its kernels by the
 * number of rows. Built with -O3 -fno-trapping-math (the selects vectorize) and -ffp-contract=off (no fused
 * multiply-adds), which change no value.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dw_avx512.h"
#include "gemm_avx512.h"

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_WORKERS 15
static int64_t spin_ns = 100000; /* a worker spins this long after its last job before it sleeps */
static int64_t avx512_k_max = 0;  /* products of k <= this run avx512_gemm_rows (0: never) */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int32_t, int32_t, int32_t, float, const float *, int32_t,
                           const float *, int32_t, float, float *, int32_t);

static void *sgemm_ptr = NULL;
static int sgemm_ilp64 = 1;

#define CTX_SLOTS 64
#define CTX_ARRAYS 8
#define CTX_SHAPES 8
#define CTX_INTS 40
#define CTX_REALS 56
typedef void (*rows_fn)(int64_t *ctx, int64_t r0, int64_t r1);
/* a convolution job's column rows: writes rows [r0, r1) of the column matrix to ``dst`` (row-major, k per row) */
typedef void (*cols_fn)(int64_t *ctx, int64_t r0, int64_t r1, float *dst);

typedef struct {
    rows_fn rows;          /* a row job's kernel (NULL: a matrix product) */
    cols_fn cols;          /* a convolution job's im2col (NULL: ``a`` holds the left matrix) */
    atomic_int failed;     /* a thread could not get its column buffer */
    int64_t ctx[CTX_SLOTS];
    const float *a, *b, *bias, *add, *slopes;
    float *out;
    int64_t m, k, n, chunk;
    int by_cols;           /* a product's chunks are columns of ``chunk`` (else rows) */
    float *bpack;          /* the right matrix packed for avx512_gemm_rows, or NULL: cblas_sgemm */
    int own_cols;          /* a column split on the AVX-512 kernel, each chunk packing its own columns */
    int act;
    float alpha;
    atomic_long next;      /* next chunk to claim */
    atomic_long done;      /* chunks finished */
    atomic_int refs;       /* the caller and the workers holding it; the last one frees it */
    long chunks;
} Job;

static void release(Job *job)
{
    if (atomic_fetch_sub(&job->refs, 1) == 1) {
        free(job->bpack);
        PyMem_RawFree(job);
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static Job *volatile current = NULL;
static atomic_long generation = 0;
static atomic_int sleepers = 0;
static int n_workers = 0;

/* Rows [r0, r0 + rows) and columns [c0, c0 + cols) of the product, the left matrix's rows read from ``a``
 * (their first row). */
static void sgemm_block(const Job *job, const float *a, int64_t r0, int64_t rows, int64_t c0, int64_t cols)
{
    float *c = job->out + r0 * job->n + c0;
    if (sgemm_ilp64)
        ((sgemm64_fn)sgemm_ptr)(101, 111, 111, rows, cols, job->k, 1.0f, a, job->k, job->b + c0, job->n, 0.0f, c,
                                job->n);
    else
        ((sgemm32_fn)sgemm_ptr)(101, 111, 111, (int32_t)rows, (int32_t)cols, (int32_t)job->k, 1.0f, a,
                                (int32_t)job->k, job->b + c0, (int32_t)job->n, 0.0f, c, (int32_t)job->n);
}

/* The epilogue on rows [r0, r0 + rows) and columns [c0, c0 + cols) of the output: bias, residual, activation,
 * each value through the same operations in the same order whatever the block. */
static void epilogue(const Job *job, int64_t r0, int64_t rows, int64_t c0, int64_t cols)
{
    const int64_t n = job->n;
    const int act = job->act;
    const float *restrict bias = job->bias ? job->bias + c0 : NULL;
    float *restrict y = job->out + r0 * n + c0;
    const float zero = 0.0f, six = 6.0f;
    if (bias)
        for (int64_t i = 0; i < rows; i++) {
            float *restrict row = y + i * n;
            for (int64_t c = 0; c < cols; c++)
                row[c] += bias[c];
        }
    /* whole rows are one contiguous span; a block of columns is one span per row */
    const int64_t spans = cols == n ? 1 : rows, width = cols == n ? rows * n : cols;
    for (int64_t s = 0; s < spans; s++) {
        float *restrict ys = y + s * n;
        if (job->add) {
            const float *restrict as = job->add + r0 * n + c0 + s * n;
            for (int64_t j = 0; j < width; j++)
                ys[j] += as[j];
        }
        if (act == 1) {
            for (int64_t j = 0; j < width; j++) {
                float v = ys[j];
                ys[j] = v < zero ? zero : v;
            }
        } else if (act == 2) {
            for (int64_t j = 0; j < width; j++) {
                float v = ys[j];
                v = v < zero ? zero : v;
                ys[j] = v > six ? six : v;
            }
        } else if (act == 3) {
            /* v * 1 is v, bit for bit (NaN, -0 and infinities included); with -fno-trapping-math the select
             * and the multiply vectorize */
            const float alpha = job->alpha, one = 1.0f;
            for (int64_t j = 0; j < width; j++) {
                float v = ys[j];
                ys[j] = v * (v < zero ? alpha : one);
            }
        }
    }
    if (act == 4) {
        const float *restrict slopes = job->slopes + c0;
        const float one = 1.0f;
        for (int64_t i = 0; i < rows; i++) {
            float *restrict row = y + i * n;
            for (int64_t c = 0; c < cols; c++) {
                float v = row[c], slope = slopes[c]; /* loaded unconditionally, so the loop vectorizes */
                row[c] = v * (v < zero ? slope : one);
            }
        }
    }
}

/* Each thread's column buffer for convolution jobs, grown as needed, freed when the thread ends. */
static pthread_key_t scratch_key;
typedef struct {
    float *data;
    int64_t capacity;
} Scratch;

static void free_scratch(void *p)
{
    Scratch *s = p;
    free(s->data);
    free(s);
}

static float *thread_scratch(int64_t values)
{
    Scratch *s = pthread_getspecific(scratch_key);
    if (s == NULL) {
        s = calloc(1, sizeof(Scratch));
        if (s == NULL || pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->capacity < values) {
        float *data = NULL;
        if (posix_memalign((void **)&data, 64, (size_t)values * sizeof(float)) != 0)
            return NULL;
        free(s->data);
        s->data = data;
        s->capacity = values;
    }
    return s->data;
}

/* Rows [r0, r0 + rows) of a product on the AVX-512 kernel, epilogue included, from ``a``'s first row. */
static void avx512_chunk(const Job *job, const float *a, int64_t r0, int64_t rows)
{
    RowEpilogue ep = {job->bias, job->add ? job->add + r0 * job->n : NULL, job->slopes, job->n, job->act,
                        job->alpha};
    avx512_gemm_rows(a, job->k, rows, job->k, job->bpack, job->n, &ep, job->out + r0 * job->n, job->n);
}

/* Columns [c0, c0 + cols) of a product on the AVX-512 kernel: packed into this thread's buffer, then every row. */
static void avx512_cols(Job *job, int64_t c0, int64_t cols)
{
    float *packed = thread_scratch(avx512_packed_size(job->k, cols));
    if (packed == NULL) {
        atomic_store(&job->failed, 1);
        return;
    }
    avx512_pack_into(packed, job->b + c0, job->n, job->k, cols);
    RowEpilogue ep = {job->bias ? job->bias + c0 : NULL, job->add ? job->add + c0 : NULL,
                      job->slopes ? job->slopes + c0 : NULL, job->n, job->act, job->alpha};
    avx512_gemm_rows(job->a, job->k, job->m, job->k, packed, cols, &ep, job->out + c0, job->n);
}

/* Rows [r0, r0 + rows) of a product, epilogue included, the left matrix's rows read from ``a``. */
static void product_rows(const Job *job, const float *a, int64_t r0, int64_t rows)
{
    if (job->bpack) {
        avx512_chunk(job, a, r0, rows);
        return;
    }
    sgemm_block(job, a, r0, rows, 0, job->n);
    if (job->bias || job->add || job->act)
        epilogue(job, r0, rows, 0, job->n);
}

/* One chunk of a convolution job: its column rows into this thread's buffer (in cache), then their product. */
static void conv_chunk(Job *job, int64_t r0, int64_t rows)
{
    float *cols = thread_scratch(rows * job->k);
    if (cols == NULL) {
        atomic_store(&job->failed, 1);
        return;
    }
    job->cols(job->ctx, r0, r0 + rows, cols);
    product_rows(job, cols, r0, rows);
}

static void work(Job *job)
{
    for (;;) {
        long c = atomic_fetch_add(&job->next, 1);
        if (c >= job->chunks)
            return;
        int64_t start = c * job->chunk, total = job->by_cols ? job->n : job->m;
        int64_t size = total - start < job->chunk ? total - start : job->chunk;
        if (job->rows) {
            job->rows(job->ctx, start, start + size);
        } else if (job->by_cols && job->own_cols) {
            avx512_cols(job, start, size);
        } else if (job->by_cols) {
            sgemm_block(job, job->a, 0, job->m, start, size);
            if (job->bias || job->add || job->act)
                epilogue(job, 0, job->m, start, size);
        } else if (job->cols) {
            conv_chunk(job, start, size);
        } else {
            product_rows(job, job->a + start * job->k, start, size);
        }
        atomic_fetch_add(&job->done, 1);
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *arg)
{
    (void)arg;
    long seen = atomic_load(&generation);
    for (;;) {
        int64_t idle_since = now_ns();
        long g;
        int spins = 0;
        while ((g = atomic_load(&generation)) == seen) {
            CPU_RELAX();
            if (++spins % 64 == 0) {
                sched_yield();
                if (now_ns() - idle_since > spin_ns) {
                    pthread_mutex_lock(&lock);
                    atomic_fetch_add(&sleepers, 1);
                    while (atomic_load(&generation) == seen)
                        pthread_cond_wait(&wake, &lock);
                    atomic_fetch_sub(&sleepers, 1);
                    pthread_mutex_unlock(&lock);
                }
            }
        }
        seen = g;
        pthread_mutex_lock(&lock);
        Job *job = current; /* the job of generation g, or a later one; held while the caller has not let go */
        if (job)
            atomic_fetch_add(&job->refs, 1);
        pthread_mutex_unlock(&lock);
        if (job) {
            work(job); /* touches the arrays only in the chunks it claims, which the caller waits for */
            release(job);
        }
    }
    return NULL;
}

/* In a forked child the workers are gone (and a worker may have held the lock at the fork): start afresh. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    current = NULL;
    atomic_store(&sleepers, 0);
    n_workers = 0;
}

static int start_workers(int wanted)
{
    if (wanted > MAX_WORKERS)
        wanted = MAX_WORKERS;
    while (n_workers < wanted) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, worker, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            return -1;
        n_workers++;
    }
    return 0;
}

/* The product of one job on the caller and the workers; returns when every chunk is done. */
static void run_job(Job *job)
{
    pthread_mutex_lock(&lock);
    current = job;
    atomic_fetch_add(&generation, 1);
    if (atomic_load(&sleepers) > 0)
        pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    work(job);
    int spins = 0;
    while (atomic_load(&job->done) < job->chunks) {
        CPU_RELAX();
        if (++spins % 64 == 0)
            sched_yield();
    }
    pthread_mutex_lock(&lock);
    if (current == job)
        current = NULL;
    pthread_mutex_unlock(&lock);
    release(job);
}

/* Run a built job (its counters set here) on ``threads`` threads, the GIL released; frees it. Returns whether a
 * thread lacked memory for its column buffer (a convolution job: then the output is incomplete). */
static int dispatch(Job *job, int threads)
{
    atomic_init(&job->next, 0);
    atomic_init(&job->done, 0);
    atomic_init(&job->refs, 2); /* the caller's reference, and one held here until the flag is read */
    atomic_init(&job->failed, 0);
    int no_workers = 0, out_of_memory;
    Py_BEGIN_ALLOW_THREADS
    if (threads > 1 && job->chunks > 1) {
        pthread_mutex_lock(&lock);
        no_workers = start_workers(threads - 1);
        pthread_mutex_unlock(&lock);
    }
    if (threads > 1 && job->chunks > 1 && !no_workers) {
        run_job(job);
    } else {
        work(job);
        release(job);
    }
    out_of_memory = atomic_load(&job->failed);
    release(job);
    Py_END_ALLOW_THREADS
    return out_of_memory;
}

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

/* A zeroed job, or NULL with MemoryError set. */
static Job *new_job(void)
{
    Job *job = PyMem_RawMalloc(sizeof(Job));
    if (job == NULL)
        PyErr_NoMemory();
    else
        memset(job, 0, sizeof(Job));
    return job;
}

/* A product job's right matrix, output, epilogue and chunks, from the arrays taken. */
static void set_product(Job *job, const Arrays *arrays, int64_t m, int64_t k, int64_t n, int act, float alpha,
                        int64_t chunk, int by_cols)
{
    job->b = arrays->view[B_].buf;
    job->out = arrays->view[OUT_].buf;
    job->bias = arrays->held[BIAS_] ? arrays->view[BIAS_].buf : NULL;
    job->add = arrays->held[ADD_] ? arrays->view[ADD_].buf : NULL;
    job->slopes = arrays->held[SLOPES_] ? arrays->view[SLOPES_].buf : NULL;
    job->alpha = alpha;
    job->m = m;
    job->k = k;
    job->n = n;
    job->act = act;
    job->chunk = chunk;
    job->by_cols = by_cols;
    int64_t total = by_cols ? (m > 0 ? n : 0) : m;
    job->chunks = total > 0 ? (long)((total + chunk - 1) / chunk) : 0;
    /* a short inner dimension: the AVX-512 kernel (no memory for its packed copy: cblas_sgemm, the same meaning) */
    if (m > 0 && k <= avx512_k_max) {
        if (by_cols)
            job->own_cols = 1;
        else
            job->bpack = avx512_pack(job->b, k, n);
    }
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
        (job = new_job()) == NULL) {
        release_arrays(&arrays);
        return NULL;
    }
    job->a = arrays.view[A_].buf;
    set_product(job, &arrays, m, k, n, act, alpha, chunk, by_cols);
    int out_of_memory = dispatch(job, threads);
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
    if (take_epilogue(&arrays, obias, oadd, oslopes, m, n) < 0 || (job = new_job()) == NULL) {
        release_arrays(&arrays);
        return NULL;
    }
    Py_buffer views[CTX_ARRAYS];
    Py_ssize_t held = 0;
    PyObject *no_reals = PyTuple_New(0);
    int bad = no_reals == NULL || fill_context(job, ocarrays, ocints, no_reals, views, &held) < 0;
    Py_XDECREF(no_reals);
    if (bad) {
        PyMem_RawFree(job);
        release_views(views, held);
        release_arrays(&arrays);
        return NULL;
    }
    job->cols = (cols_fn)(uintptr_t)address;
    set_product(job, &arrays, m, k, n, act, alpha, chunk, 0);
    int out_of_memory = dispatch(job, threads);
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
    Job *job = new_job();
    if (job == NULL)
        return NULL;
    Py_buffer views[CTX_ARRAYS];
    Py_ssize_t held = 0;
    if (fill_context(job, oarrays, oints, oreals, views, &held) < 0) {
        PyMem_RawFree(job);
        release_views(views, held);
        return NULL;
    }
    job->rows = (rows_fn)(uintptr_t)address;
    job->m = rows;
    job->chunk = chunk;
    job->chunks = rows > 0 ? (long)((rows + chunk - 1) / chunk) : 0;
    dispatch(job, threads);
    release_views(views, held);
    Py_RETURN_NONE;
}

static PyObject *gemm_workers(PyObject *self, PyObject *noargs) { return PyLong_FromLong(n_workers); }

static PyObject *gemm_avx512_k_max(PyObject *self, PyObject *noargs) { return PyLong_FromLongLong(avx512_k_max); }

/* dw3_address(): the address of dw_avx512.c's row function for run_rows (0 where the CPU lacks AVX-512F) */
static PyObject *gemm_dw3_address(PyObject *self, PyObject *noargs)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)dw3_avx512_rows());
}

static PyMethodDef methods[] = {
    {"configure", gemm_configure, METH_VARARGS,
     "configure(sgemm_address, ilp64, spin_us=100, avx512_k_max=0): the cblas_sgemm to call; how long idle workers "
     "spin; products whose b has at most avx512_k_max rows run gemm_avx512.c's kernel (where AVX-512F is)"},
    {"dw3_address", gemm_dw3_address, METH_NOARGS,
     "dw3_address(): the AVX-512 3x3 depthwise row function for run_rows (0: not on this CPU)"},
    {"avx512_k_max", gemm_avx512_k_max, METH_NOARGS, "avx512_k_max(): the configured limit (0: the AVX-512 kernel is off)"},
    {"matmul", gemm_matmul, METH_VARARGS,
     "matmul(a, b, out, bias, add, act, threads, chunk, alpha=0, slopes=None, by_cols=False): "
     "out = act(a @ b + bias + add), in chunks of rows (or of columns)"},
    {"run_rows", gemm_run_rows, METH_VARARGS,
     "run_rows(fn_address, arrays, ints, reals, rows, chunk_rows, threads): fn(ctx, r0, r1) over the rows' chunks"},
    {"conv", gemm_conv, METH_VARARGS,
     "conv(cols_address, arrays, ints, b, out, bias, add, act, threads, chunk_rows, alpha=0, slopes=None): "
     "im2col per chunk, then out = act(cols @ b + bias + add)"},
    {"workers", gemm_workers, METH_NOARGS, "workers(): native worker threads started so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gemm", "float32 products split over native threads",
                                    -1, methods};

PyMODINIT_FUNC PyInit__gemm(void)
{
    if (pthread_key_create(&scratch_key, free_scratch) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "_gemm: no thread-local key for the column buffers");
        return NULL;
    }
    pthread_atfork(NULL, NULL, after_fork_in_child);
    return PyModule_Create(&module);
}
