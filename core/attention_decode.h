/* The decode form of the portable attention kernels (kernels/vulkan/attention_decode.comp and
 * kernels/opencl/attention_decode.cl share one structure): a work-group takes a chunk of the keys of one kv head
 * and up to 16 rows of its group of query heads, reading K and V once for all of them; a second pass merges the
 * chunks. Config: variant simt (or auto) with split_k >= 2 selects it, split_k 1 the per-head kernel
 * (attention_tile.h); in it
 *   block_m  rows of a kv head per work-group (its G = Hq / Hkv heads times Sq queries), 1 to 16
 *   block_n  keys a step: a multiple of the key slots, threads / (D / 8), up to 8 of them
 *   threads  work-items: key slots of D / 8 lanes, each lane 8 elements of a key's row
 *   split_k  chunks of the keys at least (more where a device's loop budget needs them)
 * This file holds what both backends decide alike: which calls it takes, its heuristic config, its local
 * memory, its loop count and the chunks. */
#ifndef TRR_ATTENTION_DECODE_H
#define TRR_ATTENTION_DECODE_H

#include "backend.h"

#include <stddef.h>
#include <stdint.h>

#define TRR_ATTN_DECODE_MAX_BM 16

/* The config selects the decode form. */
int trr_attention_decode_selected(const trr_config *c);
/* NULL where the decode kernel takes the call, else why not: D a multiple of 8 up to 256, and k and v read as
 * 16-byte words (offsets and followed strides multiples of 16 bytes). */
const char *trr_attention_decode_refusal(const trr_call *call);
/* The heuristic: 1 where the call is decode-shaped (a kv head's rows fit one work-group, the keys are many), the
 * kernel takes it and the config sets no tile (block_m, block_n, threads: a caller's tiles are the per-head
 * kernel's). The backends ask it on GPUs only. */
int trr_attention_decode_wanted(const trr_call *call);
/* Fills the fields of c left at zero for the decode form; units: the device's compute units (0: unknown). */
void trr_attention_decode_fill(const trr_call *call, int units, uint64_t local_bytes, trr_config *c);
/* Local (shared) memory of a work-group under c at head dim d. */
uint64_t trr_attention_decode_local_bytes(const trr_config *c, int64_t d);
/* 1 where the config's fields suit the kernel at this call on a device of local_bytes of local memory,
 * max_threads work-items a group and a loop budget (UINT64_MAX: none), else 0 with the reason. */
int trr_attention_decode_config_ok(const trr_call *call, uint64_t local_bytes, uint64_t max_threads, uint64_t budget,
                                   char *why, size_t cap);
/* Keys per chunk (a multiple of block_n) and the chunks, from split_k and the loop budget. */
void trr_attention_decode_chunks(const trr_call *call, uint64_t budget, int64_t *out_keys, int64_t *out_splits);
/* Work-groups per chunk along the rows: ceil(G·Sq / block_m). */
int64_t trr_attention_decode_row_blocks(const trr_call *call);

#endif
