/* The pool of ndflow.backends.cpu.native._gemm (entry points: gemm_module.c): float32 matrix products split by rows over
 * a small pool of native threads, with
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

#include "gemm_avx512.h"
#include "gemm_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_WORKERS 15

int64_t spin_ns = 100000; /* a worker spins this long after its last job before it sleeps */
int64_t avx512_k_max = 0;  /* products of k <= this run avx512_gemm_rows (0: never) */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int32_t, int32_t, int32_t, float, const float *, int32_t,
                           const float *, int32_t, float, float *, int32_t);

void *sgemm_ptr = NULL;
int sgemm_ilp64 = 1;

static void release(Job *job)
{
    if (atomic_fetch_sub(&job->refs, 1) == 1) {
        if (!job->shared_pack)
            free(job->bpack);
        PyMem_RawFree(job);
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static Job *volatile current = NULL;
static atomic_long generation = 0;
static atomic_int sleepers = 0;
/* Callers inside a run of many kernels (a model's program: pool_hold): while any hold, idle workers spin (yielding
 * the core to anything else runnable) instead of sleeping, so each kernel's split starts at once. Waking a sleeping
 * worker costs 75-85 us on a 2-core VM, more after a pause: a model's run after 1-20 ms of idleness took 1.7x as
 * long on two threads when its workers slept between kernels. */
static atomic_int holders = 0;
int n_workers = 0;

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
    if (job->direct)
        avx512_gemm_rows_direct(a, job->k, rows, job->k, job->b, job->n, job->n, &ep, job->out + r0 * job->n,
                                job->n);
    else
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

/* Columns [c0, c0 + cols) of a product of few rows on the AVX-512 kernel, the right matrix read as it is. */
static void direct_cols(const Job *job, int64_t c0, int64_t cols)
{
    RowEpilogue ep = {job->bias ? job->bias + c0 : NULL, job->add ? job->add + c0 : NULL,
                      job->slopes ? job->slopes + c0 : NULL, job->n, job->act, job->alpha};
    avx512_gemm_rows_direct(job->a, job->k, job->m, job->k, job->b + c0, job->n, cols, &ep, job->out + c0, job->n);
}

/* Rows [r0, r0 + rows) of a product, epilogue included, the left matrix's rows read from ``a``. */
static void product_rows(const Job *job, const float *a, int64_t r0, int64_t rows)
{
    if (job->bpack || job->direct) {
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
        } else if (job->by_cols && job->direct) {
            direct_cols(job, start, size);
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

/* The CPU the caller of the last job or hold ran on (-1: unknown). A worker woken by the caller is often placed on
 * the caller's CPU (the scheduler's wake-affine choice) while the other cores idle; there it only takes turns with
 * the caller, and the kernel may leave it there for milliseconds: a two-thread model run then took its one-thread
 * time (measured: a third of the runs after 20-50 ms of idleness on a 2-core VM). */
static atomic_int caller_cpu = -1;

static void note_caller_cpu(void)
{
#ifdef __linux__
    atomic_store(&caller_cpu, sched_getcpu());
#endif
}

/* A worker on the caller's CPU moves to another one it may run on (its affinity narrowed for the move, then given
 * back: the scheduler leaves it where it is). */
static void leave_caller_cpu(void)
{
#ifdef __linux__
    int me = sched_getcpu(), caller = atomic_load(&caller_cpu);
    if (me < 0 || me != caller)
        return;
    cpu_set_t allowed, others;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2 || !CPU_ISSET(me, &allowed))
        return;
    others = allowed;
    CPU_CLR(me, &others);
    if (sched_setaffinity(0, sizeof others, &others) == 0)
        sched_setaffinity(0, sizeof allowed, &allowed);
#endif
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
                leave_caller_cpu();
                if (atomic_load(&holders) > 0) {
                    idle_since = now_ns(); /* held: spin on; the spin limit counts from the hold's end */
                } else if (now_ns() - idle_since > spin_ns) {
                    pthread_mutex_lock(&lock);
                    atomic_fetch_add(&sleepers, 1);
                    while (atomic_load(&generation) == seen && atomic_load(&holders) == 0)
                        pthread_cond_wait(&wake, &lock);
                    atomic_fetch_sub(&sleepers, 1);
                    pthread_mutex_unlock(&lock);
                    idle_since = now_ns();
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
            leave_caller_cpu();
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
    atomic_store(&holders, 0);
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

int pool_hold(int delta, int threads)
{
    int held = atomic_fetch_add(&holders, delta) + delta;
    if (delta > 0 && threads > 1) {
        note_caller_cpu();
        pthread_mutex_lock(&lock);
        int failed = start_workers(threads - 1);
        if (atomic_load(&sleepers) > 0)
            pthread_cond_broadcast(&wake); /* they spin from now on: the run's first split finds them awake */
        pthread_mutex_unlock(&lock);
        if (failed) {
            atomic_fetch_sub(&holders, 1);
            return -1;
        }
    }
    return held;
}

/* The product of one job on the caller and the workers; returns when every chunk is done. */
static void run_job(Job *job)
{
    note_caller_cpu();
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
int dispatch(Job *job, int threads)
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

void dispatch_rows(Job *job, rows_fn fn, int64_t rows, int64_t chunk, int threads)
{
    job->rows = fn;
    job->m = rows;
    job->chunk = chunk;
    job->chunks = rows > 0 ? (long)((rows + chunk - 1) / chunk) : 0;
    dispatch(job, threads);
}

/* The arrays of one call: a, b, out, then bias, add, slopes where given (a NULL object: not given). */

/* A zeroed job, or NULL. */
Job *new_job(void)
{
    Job *job = PyMem_RawMalloc(sizeof(Job));
    if (job != NULL)
        memset(job, 0, sizeof(Job));
    return job;
}

void free_job(Job *job)
{
    if (!job->shared_pack)
        free(job->bpack);
    PyMem_RawFree(job);
}

int product_packs(int64_t m, int64_t k, int by_cols)
{
    return m >= AVX512_PACK_MIN_ROWS && k > 0 && k <= avx512_k_max && !by_cols;
}

void set_product(Job *job, const float *b, float *out, const float *bias, const float *add, const float *slopes,
                 int64_t m, int64_t k, int64_t n, int act, float alpha, int64_t chunk, int by_cols,
                 const float *prepacked)
{
    job->b = b;
    job->out = out;
    job->bias = bias;
    job->add = add;
    job->slopes = slopes;
    job->alpha = alpha;
    job->m = m;
    job->k = k;
    job->n = n;
    job->act = act;
    job->chunk = chunk;
    job->by_cols = by_cols;
    int64_t total = by_cols ? (m > 0 ? n : 0) : m;
    job->chunks = total > 0 ? (long)(total / chunk + (total % chunk != 0)) : 0; /* no overflow for a huge chunk */
    /* a short inner dimension: the AVX-512 kernel (no memory for its packed copy: cblas_sgemm, the same meaning) */
    if (m > 0 && k > 0 && k <= avx512_k_max) {
        if (m < AVX512_PACK_MIN_ROWS)
            job->direct = 1; /* by rows or by columns */
        else if (by_cols)
            job->own_cols = 1;
        else if (prepacked != NULL) {
            job->bpack = (float *)prepacked;
            job->shared_pack = 1;
        } else
            job->bpack = avx512_pack(job->b, k, n);
    }
}

int pool_init(void)
{
    if (pthread_key_create(&scratch_key, free_scratch) != 0)
        return -1;
    pthread_atfork(NULL, NULL, after_fork_in_child);
    return 0;
}
