/* Packed copies of a model's weights kept between calls (pack_cache.c). */
#ifndef NDFLOW_PACK_CACHE_H
#define NDFLOW_PACK_CACHE_H

#include <stdint.h>

/* Memory [start, start + bytes) holds values that no kernel writes until pack_cache_forget (a model's weights):
 * products whose right matrix lies in it keep its packed copy. -1 when the table is full. */
int pack_cache_keep(const void *start, int64_t bytes);
/* The memory is about to be freed: its region and the copies made from it go (a copy in use by a running call
 * goes when that call releases it). */
void pack_cache_forget(const void *start, int64_t bytes);
/* The packed copy (avx512_pack's layout) of the k x n right matrix at ``b`` where it lies in a kept region, made at
 * its first use; NULL otherwise (the caller packs for its call alone), or without memory. A non-NULL result is
 * held until pack_cache_release. */
const float *pack_cache_get(const float *b, int64_t k, int64_t n);
void pack_cache_release(const float *packed);
/* Drop every copy not in use (the regions stay); entries, bytes and regions after. */
void pack_cache_clear(void);
void pack_cache_stats(int64_t *entries, int64_t *bytes, int64_t *regions);

#endif
