/* The decode form's shared rules (attention_decode.h). */
#include "attention_decode.h"

#include <stdio.h>

#define MAX_D 256
#define MAX_KEYS_A_SLOT 8  /* block_n / key slots: the K and V words a work-item holds */
#define MIN_KEYS 256       /* the heuristic's least keys for the decode form, and its least keys a chunk */
#define GROUPS_A_UNIT 16   /* the heuristic's work-groups per compute unit: several waves, a short ragged end */
#define UNITS_UNKNOWN 128  /* a large GPU where the API does not say (Vulkan): more chunks cost little */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t lanes(int64_t d) { return d / 8; }

int trr_attention_decode_selected(const trr_config *c) {
    return (c->variant == TRR_VARIANT_AUTO || c->variant == TRR_VARIANT_SIMT) && c->split_k >= 2;
}

static int64_t kv_rows(const trr_call *call) {
    return call->attn.seq_q * (call->attn.heads_q / call->attn.heads_kv);
}

int64_t trr_attention_decode_row_blocks(const trr_call *call) {
    return ceil_div(kv_rows(call), call->config.block_m);
}

/* A stride that is followed (its dimension holds more than one element) in whole words of e elements. */
static int words(int64_t n, int64_t stride, int64_t e) { return n <= 1 || stride % e == 0; }

const char *trr_attention_decode_refusal(const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    if (a->head_dim % 8 || a->head_dim > MAX_D) return "takes head dims that are multiples of 8 up to 256";
    const int64_t e = call->y.dtype == TRR_F32 ? 4 : 8; /* elements a 16-byte word */
    const trr_operand *kv[2] = {&call->y, &call->u};
    for (int i = 0; i < 2; i++)
        if (kv[i]->offset % e || !words(a->batch, kv[i]->batch_stride, e) || !words(a->heads_kv, kv[i]->stride1, e) ||
            !words(a->seq_kv, kv[i]->stride0, e))
            return "reads k and v as 16-byte words: their offsets and strides must be multiples of 16 bytes";
    return NULL;
}

int trr_attention_decode_wanted(const trr_call *call) {
    const trr_config *c = &call->config;
    if (c->block_m || c->block_n || c->threads) return 0; /* tiles the caller set for the per-head kernel */
    return kv_rows(call) <= TRR_ATTN_DECODE_MAX_BM && call->attn.seq_kv >= MIN_KEYS &&
           !trr_attention_decode_refusal(call);
}

uint64_t trr_attention_decode_local_bytes(const trr_config *c, int64_t d) {
    const uint64_t bm = (uint64_t)c->block_m, bn = (uint64_t)c->block_n;
    const uint64_t parts = bn * bm * (uint64_t)(lanes(d) + 1), out = bm * (uint64_t)d;
    return 4u * ((parts > out ? parts : out) + 2 * bm * bn + 2 * bm);
}

void trr_attention_decode_fill(const trr_call *call, int units, uint64_t local_bytes, trr_config *c) {
    const int64_t d = call->attn.head_dim, rows = kv_rows(call);
    if (!c->threads) c->threads = 128;
    if (!c->block_m) c->block_m = rows < TRR_ATTN_DECODE_MAX_BM ? (int)rows : TRR_ATTN_DECODE_MAX_BM;
    if (!c->block_n) { /* 4 keys a slot (16 words of f16 in flight per work-item), fewer where local memory is short */
        const int slots = lanes(d) > 0 ? (int)(c->threads / lanes(d)) : 1;
        int nk = 4;
        c->block_n = nk * (slots > 0 ? slots : 1);
        while (nk > 1 && trr_attention_decode_local_bytes(c, d) > local_bytes) c->block_n = --nk * slots;
    }
    if (!c->split_k) { /* enough work-groups for several waves, each chunk keeping MIN_KEYS keys */
        const int64_t base = trr_attention_decode_row_blocks(call) * call->attn.heads_kv * call->attn.batch;
        const int64_t want = ceil_div((int64_t)(units > 0 ? units : UNITS_UNKNOWN) * GROUPS_A_UNIT, base);
        int64_t most = call->attn.seq_kv / MIN_KEYS, s = want < most ? want : most;
        c->split_k = s < 2 ? 2 : s > 128 ? 128 : (int)s;
    }
    if (!c->stages) c->stages = 1;
}

/* Loop iterations of one work-item, counted as if none were unrolled (each loop of n as n + 1, as
 * attention_tile.c counts): outside the key loop, and per step of block_n keys. */
static void loop_counts(const trr_call *call, uint64_t *fixed, uint64_t *per_step) {
    const trr_config *c = &call->config;
    const uint64_t t = (uint64_t)c->threads, bm = (uint64_t)c->block_m, bn = (uint64_t)c->block_n;
    const uint64_t d = (uint64_t)call->attn.head_dim, l = d / 8, ks = t / l, nk = bn / ks, w = 2;
    *fixed = bm * 10 + 1 + (bm + 1) + (bm + 1) + nk * (w + 1) + 1 + (bm + 1) + bm * (ks + 2) + 1 +
             ks * (bm * 10 + 2) + 1 + (bm * d + t - 1) / t + 1 + 16;
    *per_step = 1 + 2 * (nk * (w + 1) + 1) + nk * (bm + 1) + 1 + ((bn * bm + t - 1) / t) * (l + bm + 2) + 1 +
                bm * (2 * nk + 3) + 1 + 8;
}

/* Keys one work-group may take within budget: a multiple of block_n; 0 when not one step fits. */
static int64_t budget_keys(const trr_call *call, uint64_t budget) {
    if (budget == UINT64_MAX) return INT64_MAX;
    uint64_t fixed, per_step;
    loop_counts(call, &fixed, &per_step);
    const uint64_t room = budget - budget / 8;
    if (fixed + per_step > room) return 0;
    return (int64_t)((room - fixed) / per_step) * call->config.block_n;
}

int trr_attention_decode_config_ok(const trr_call *call, uint64_t local_bytes, uint64_t max_threads, uint64_t budget,
                                   char *why, size_t cap) {
    const trr_config *c = &call->config;
    const char *refusal = trr_attention_decode_refusal(call);
    if (refusal) {
        snprintf(why, cap, "the decode kernel (split_k >= 2) %s; split_k = 1 runs the per-head kernel", refusal);
        return 0;
    }
    const int64_t d = call->attn.head_dim, l = lanes(d);
    if (c->block_m < 1 || c->block_m > TRR_ATTN_DECODE_MAX_BM) {
        snprintf(why, cap, "the decode kernel takes block_m (rows a work-group) 1 to %d, not %d",
                 TRR_ATTN_DECODE_MAX_BM, c->block_m);
        return 0;
    }
    if (c->threads < l || (uint64_t)c->threads > max_threads || c->threads > 1024) {
        snprintf(why, cap, "the decode kernel takes threads from D / 8 = %lld to %llu, not %d", (long long)l,
                 (unsigned long long)(max_threads < 1024 ? max_threads : 1024), c->threads);
        return 0;
    }
    const int64_t slots = c->threads / l;
    if (c->block_n < slots || c->block_n % slots || c->block_n / slots > MAX_KEYS_A_SLOT) {
        snprintf(why, cap, "the decode kernel takes block_n a multiple of its %lld key slots (threads / (D / 8)), "
                 "up to %d of them, not %d", (long long)slots, MAX_KEYS_A_SLOT, c->block_n);
        return 0;
    }
    const uint64_t bytes = trr_attention_decode_local_bytes(c, d);
    if (bytes > local_bytes) {
        snprintf(why, cap, "the decode kernel at block_m %d, block_n %d, D = %lld takes %llu bytes of local memory; "
                 "the device has %llu", c->block_m, c->block_n, (long long)d, (unsigned long long)bytes,
                 (unsigned long long)local_bytes);
        return 0;
    }
    if (budget_keys(call, budget) < 1) {
        snprintf(why, cap, "the decode kernel at block_m %d, block_n %d, D = %lld does not fit one step of keys in "
                 "the device's %llu loop iterations", c->block_m, c->block_n, (long long)d,
                 (unsigned long long)budget);
        return 0;
    }
    return 1;
}

void trr_attention_decode_chunks(const trr_call *call, uint64_t budget, int64_t *out_keys, int64_t *out_splits) {
    const int64_t bn = call->config.block_n, skv = call->attn.seq_kv;
    int64_t keys = ceil_div(ceil_div(skv, call->config.split_k), bn) * bn;
    const int64_t most = budget_keys(call, budget);
    if (keys > most) keys = most;
    *out_keys = keys;
    *out_splits = ceil_div(skv, keys);
}
