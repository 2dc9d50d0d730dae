/* The native pool of ndflow.backends.cpu.native._gemm (gemm_pool.c): jobs, their context and how they run. The
 * Python entry points are in gemm_module.c. */
#ifndef NDFLOW_GEMM_POOL_H
#define NDFLOW_GEMM_POOL_H

#include <stdatomic.h>
#include <stdint.h>

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
    int shared_pack;       /* bpack belongs to the pack cache (pack_cache.c), not to the job */
    int own_cols;          /* a column split on the AVX-512 kernel, each chunk packing its own columns */
    int direct;            /* few rows on the AVX-512 kernel, reading the right matrix unpacked */
    int act;
    float alpha;
    atomic_long next;      /* next chunk to claim */
    atomic_long done;      /* chunks finished */
    atomic_int refs;       /* the caller and the workers holding it; the last one frees it */
    long chunks;
} Job;

/* The pool's settings (gemm_module.c's configure): cblas_sgemm's address and integer width, how long an idle
 * worker spins, and the inner dimensions that run the AVX-512 kernel (0: none). */
extern void *sgemm_ptr;
extern int sgemm_ilp64;
extern int64_t spin_ns;
extern int64_t avx512_k_max;
extern int n_workers;

/* The pool's thread-local key and fork handler; 0, or -1 when the key cannot be made. */
int pool_init(void);
/* A zeroed job (NULL without memory); free_job frees one that was never dispatched. */
Job *new_job(void);
void free_job(Job *job);
/* A product job: out = act(a @ b + bias + add), in chunks of ``chunk`` rows (or columns, ``by_cols``); the
 * caller sets ``a`` (or ``cols`` for a convolution job). ``prepacked``: ``b`` already in avx512_pack's layout (kept
 * by the caller until the job is done), or NULL. */
void set_product(Job *job, const float *b, float *out, const float *bias, const float *add, const float *slopes,
                 int64_t m, int64_t k, int64_t n, int act, float alpha, int64_t chunk, int by_cols,
                 const float *prepacked);
/* Whether a product of this shape on ``by_cols`` chunks runs the AVX-512 kernel on a packed right matrix. */
int product_packs(int64_t m, int64_t k, int by_cols);
/* A run of many kernels starts (``delta`` 1, its workers started for ``threads`` and woken) or ends (-1): while
 * any run holds the pool, idle workers spin instead of sleeping. The holds now, or -1 when a thread could not be
 * started. */
int pool_hold(int delta, int threads);
/* Run ``fn`` over ``rows`` rows in chunks of ``chunk`` (a row job, its context filled by the caller) on ``threads``
 * threads; frees the job. */
void dispatch_rows(Job *job, rows_fn fn, int64_t rows, int64_t chunk, int threads);
/* Run a built job on ``threads`` threads, the GIL released; frees it. Whether a thread lacked memory. */
int dispatch(Job *job, int threads);

#endif
