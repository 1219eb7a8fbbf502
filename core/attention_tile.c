/* The portable attention kernel's tile rules (attention_tile.h). */
#include "attention_tile.h"

int64_t trr_attention_tile_rows(const trr_call *call) {
    return call->attn.seq_q < call->config.block_m ? call->attn.seq_q : call->config.block_m;
}

uint64_t trr_attention_tile_bytes(int64_t bm, int64_t bn, int64_t d) {
    return 4u * (uint64_t)(bm * d + bn * (d + 1) + bn * d + bm * bn + 3 * bm);
}

/* Loop iterations of one work-item, counted as if none were unrolled: outside the key loop, and per key block. */
static void loop_counts(const trr_call *call, uint64_t *fixed, uint64_t *per_block) {
    const trr_config *c = &call->config;
    const uint64_t t = (uint64_t)c->threads, bm = (uint64_t)trr_attention_tile_rows(call), bn = (uint64_t)c->block_n;
    const uint64_t d = (uint64_t)call->attn.head_dim, opt = (bm * d + t - 1) / t;
    const uint64_t loads = (bn * d + t - 1) / t, scores = (bm * bn + t - 1) / t, rows = (bm + t - 1) / t;
    /* a loop of n iterations counted as n + 1 (llvmpipe's count runs past short loops' bodies: with one-key
     * blocks the plain count came out a fifth short and the keys were cut) */
    *fixed = ((bm * d + t - 1) / t + 1) + (rows + 1) + 2 * (opt + 1) + 16;
    *per_block = 1 + (loads + 1) + (scores * (d + 2) + 1) + (rows * (2 * bn + 3) + 1) + (opt * (bn + 2) + 1) + 8;
}

int64_t trr_attention_tile_keys(const trr_call *call, uint64_t budget) {
    if (budget == UINT64_MAX) return INT64_MAX;
    uint64_t fixed, per_block;
    loop_counts(call, &fixed, &per_block);
    const uint64_t room = budget - budget / 8;
    if (fixed + per_block > room) return 0;
    return (int64_t)((room - fixed) / per_block) * call->config.block_n;
}
