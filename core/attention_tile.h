/* The portable attention kernel's tile (kernels/opencl/attention.cl and kernels/vulkan/attention.comp share one
 * structure): its query rows, its local memory, and how many keys one work-group may take within a device's loop
 * budget. */
#ifndef TRR_ATTENTION_TILE_H
#define TRR_ATTENTION_TILE_H

#include "backend.h"

#include <stdint.h>

/* The query rows of one work-group: block_m, or Sq where it is shorter. */
int64_t trr_attention_tile_rows(const trr_call *call);
/* Local (shared) memory of a work-group: Q [BM][D], K [BN][D + 1], V [BN][D], S [BM][BN], three [BM] vectors. */
uint64_t trr_attention_tile_bytes(int64_t bm, int64_t bn, int64_t d);
/* Keys one work-group may take within budget loop iterations per invocation (a multiple of block_n; 0 when not
 * even one key block fits; INT64_MAX when budget is UINT64_MAX, no limit). */
int64_t trr_attention_tile_keys(const trr_call *call, uint64_t budget);

#endif
