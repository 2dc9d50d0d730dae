/* Packed copies of a model's weights, kept between calls.
 *
 * A product on gemm_avx512.c's kernel first copies its right matrix into the kernel's blocked layout. For a model's
 * convolutions that copy of the weights, made again at every call, took 7% of movenet-lightning's time on one core
 * (perf, 2-core AMD EPYC). The weights do not change: the cpu backend registers their memory here (``keep``) when a
 * graph program is built from them, and a product whose right matrix lies in registered memory packs it once and
 * reuses the copy. When the weights' array is freed the backend forgets the region first (a finalizer on the array),
 * so a copy never outlives the memory it was made from.
 *
 * Entries in use by a running call (other Python threads run while a product's threads work) are never freed under
 * it: forgetting marks them, and the last release frees them. Every function here runs with the GIL held.
 */
#include "pack_cache.h"

#include <stdlib.h>

#include "gemm_avx512.h"

#define PACK_SLOTS 2048
#define REGION_SLOTS 8192
/* at most this many bytes of packed copies; past it the least recently used entries not in use go */
#define PACK_MAX_BYTES ((int64_t)1 << 30)

typedef struct {
    const float *b;
    int64_t k, n, bytes;
    float *packed;
    int users;
    int doomed; /* its region was forgotten while in use: freed at the last release */
    uint64_t used_at;
} Entry;

typedef struct {
    const char *start;
    int64_t bytes;
} Region;

static Entry entries[PACK_SLOTS];
static int n_entries = 0;
static Region regions[REGION_SLOTS];
static int n_regions = 0;
static int64_t total_bytes = 0;
static uint64_t ticks = 0;

static void drop(int i)
{
    total_bytes -= entries[i].bytes;
    free(entries[i].packed);
    entries[i] = entries[--n_entries];
}

static int evict_one(void)
{
    int victim = -1;
    for (int i = 0; i < n_entries; i++)
        if (entries[i].users == 0 && (victim < 0 || entries[i].used_at < entries[victim].used_at))
            victim = i;
    if (victim < 0)
        return 0;
    drop(victim);
    return 1;
}

int pack_cache_keep(const void *start, int64_t bytes)
{
    for (int i = 0; i < n_regions; i++)
        if (regions[i].start == start && regions[i].bytes == bytes)
            return 0;
    if (n_regions == REGION_SLOTS)
        return -1;
    regions[n_regions++] = (Region){start, bytes};
    return 0;
}

void pack_cache_forget(const void *start, int64_t bytes)
{
    const char *lo = start, *hi = (const char *)start + bytes;
    for (int i = n_regions - 1; i >= 0; i--)
        if (regions[i].start == lo && regions[i].bytes == bytes)
            regions[i] = regions[--n_regions];
    for (int i = n_entries - 1; i >= 0; i--) {
        const char *b = (const char *)entries[i].b;
        if (b >= lo && b < hi) {
            if (entries[i].users > 0)
                entries[i].doomed = 1;
            else
                drop(i);
        }
    }
}

static int in_region(const char *b, int64_t bytes)
{
    for (int i = 0; i < n_regions; i++)
        if (b >= regions[i].start && b + bytes <= regions[i].start + regions[i].bytes)
            return 1;
    return 0;
}

const float *pack_cache_get(const float *b, int64_t k, int64_t n)
{
    for (int i = 0; i < n_entries; i++) {
        Entry *e = &entries[i];
        if (e->b == b && e->k == k && e->n == n && !e->doomed) {
            e->users++;
            e->used_at = ++ticks;
            return e->packed;
        }
    }
    if (n_regions == 0 || !in_region((const char *)b, k * n * (int64_t)sizeof(float)))
        return NULL;
    int64_t bytes = avx512_packed_size(k, n) * (int64_t)sizeof(float);
    if (bytes > PACK_MAX_BYTES / 4)
        return NULL;
    while ((n_entries == PACK_SLOTS || total_bytes + bytes > PACK_MAX_BYTES) && evict_one())
        ;
    if (n_entries == PACK_SLOTS || total_bytes + bytes > PACK_MAX_BYTES)
        return NULL;
    float *packed = avx512_pack(b, k, n);
    if (packed == NULL)
        return NULL;
    entries[n_entries++] = (Entry){b, k, n, bytes, packed, 1, 0, ++ticks};
    total_bytes += bytes;
    return packed;
}

void pack_cache_release(const float *packed)
{
    if (packed == NULL)
        return;
    for (int i = 0; i < n_entries; i++)
        if (entries[i].packed == packed) {
            if (--entries[i].users == 0 && entries[i].doomed)
                drop(i);
            return;
        }
}

void pack_cache_clear(void)
{
    for (int i = n_entries - 1; i >= 0; i--)
        if (entries[i].users == 0)
            drop(i);
}

void pack_cache_stats(int64_t *count, int64_t *bytes, int64_t *n_kept)
{
    *count = n_entries;
    *bytes = total_bytes;
    *n_kept = n_regions;
}
