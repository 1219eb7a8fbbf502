/*
 * attention's calls past the 32-bit index (parts.c's rule, for attention's own axes; validate.h). A kernel
 * indexes each operand from its offset in 32 bits, so a call whose q, k, v, o or lse spans the limit (2^31
 * elements) or more runs as parts that each span less, cut along what leaves every result as it was:
 *   - batches: each part a range of b;
 *   - query heads: whole groups of one key/value head (GQA), or, inside one group, ranges of its query heads
 *     (a part of Hq' heads and one key/value head then reads that head for all of them);
 *   - query rows: each part a range of rows [r0, r0 + n). Without causal every row sees every key, so the part
 *     keeps them all. With causal, bottom-right aligned, row i sees keys j <= i + Skv - Sq: the part runs with
 *     Skv' = r0 + n + Skv - Sq keys, which aligns its own last row as the whole call did; Skv' <= 0 (rows that
 *     see no key at all) writes o = 0 and lse = -inf itself.
 * The key axis is never cut (that would take a merge of partial softmaxes), so one key/value head whose [Skv, D]
 * spans the limit stays TRR_ERR_OVERFLOW, with the reason.
 */
#include "validate.h"

#include <stdio.h>

/* The axes a part is cut along: batches, query heads, query rows. */
enum { AX_B = 0, AX_H, AX_R, AXES };

/* The elements one operand spans from its offset over n0 x n1 x n2 rows of `inner` elements. */
static int64_t extent(const trr_operand *o, int64_t n0, int64_t n1, int64_t n2, int64_t inner) {
    return (n0 - 1) * o->batch_stride + (n1 - 1) * o->stride1 + (n2 - 1) * o->stride0 + inner;
}

/* The key/value heads a part of nh query heads reads: whole groups, or one. */
static int64_t kv_heads(const trr_attention_shape *a, int64_t nh) {
    const int64_t group = a->heads_q / a->heads_kv;
    return nh >= group ? nh / group : 1;
}

/* The span of operand slot s (q, k, o, v, lse) at part sizes n[]; 0 for lse when the call has none. */
static int64_t span(const trr_call *c, int s, const int64_t n[AXES]) {
    const trr_attention_shape *a = &c->attn;
    switch (s) {
    case TRR_SLOT_X: return extent(&c->x, n[AX_B], n[AX_H], n[AX_R], a->head_dim);
    case TRR_SLOT_Z: return extent(&c->z, n[AX_B], n[AX_H], n[AX_R], a->head_dim);
    case TRR_SLOT_W: return a->has_lse ? extent(&c->w, n[AX_B], n[AX_H], n[AX_R], 1) : 0;
    case TRR_SLOT_Y: return extent(&c->y, n[AX_B], kv_heads(a, n[AX_H]), a->seq_kv, a->head_dim);
    default: return extent(&c->u, n[AX_B], kv_heads(a, n[AX_H]), a->seq_kv, a->head_dim);
    }
}

static const char *const slot_names[TRR_SLOTS] = {"q", "k", "o", "v", "lse"};

/* The part sizes (batches, query heads, query rows): the call's own where every operand fits, else halved
 * along the first axis that shrinks the operand that does not; heads by whole key/value groups while a part
 * holds more than one. 0 when no cut gets there (why says which operand). */
static int part_sizes(const trr_call *c, int64_t n[AXES], char *why, size_t cap) {
    const trr_attention_shape *a = &c->attn;
    const int64_t group = a->heads_q / a->heads_kv, limit = trr_call_part_limit();
    n[AX_B] = a->batch;
    n[AX_H] = a->heads_q;
    n[AX_R] = a->seq_q;
    for (;;) {
        int slot = -1;
        int64_t e = 0;
        for (int s = 0; s < TRR_SLOTS && slot < 0; s++)
            if ((e = span(c, s, n)) >= limit) slot = s;
        if (slot < 0) return 1;
        int cut = 0;
        for (int ax = 0; ax < AXES && !cut; ax++) {
            if (n[ax] <= 1) continue;
            int64_t m[AXES] = {n[0], n[1], n[2]};
            if (ax == AX_H && n[ax] > group) m[ax] = (n[ax] / group + 1) / 2 * group; /* half the groups */
            else m[ax] = (n[ax] + 1) / 2;
            if (span(c, slot, m) < e) {
                n[ax] = m[ax];
                cut = 1;
            }
        }
        if (!cut) {
            snprintf(why, cap,
                     "attention: %s spans %lld elements from its offset even in the smallest part the call can be "
                     "cut into (%s), over the 2^31 a kernel indexes",
                     slot_names[slot], (long long)e,
                     slot == TRR_SLOT_Y || slot == TRR_SLOT_U ? "one key/value head of Skv x D: keys are never cut"
                                                              : "one row of one head");
            return 0;
        }
    }
}

trr_status trr_attention_check_parts(trr_context *ctx, const trr_call *call) {
    int64_t n[AXES];
    char why[320];
    if (!part_sizes(call, n, why, sizeof why)) return trr_error(ctx, TRR_ERR_OVERFLOW, "%s", why);
    return TRR_OK;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* One part: batches [b0, b0 + nb), query heads [h0, h0 + nh) (inside one group, or whole groups), rows
 * [r0, r0 + nr). */
static trr_status run_part(trr_context *ctx, const trr_call *call, int64_t b0, int64_t nb, int64_t h0, int64_t nh,
                           int64_t r0, int64_t nr, trr_status (*run)(trr_context *ctx, const trr_call *part)) {
    const trr_attention_shape *a = &call->attn;
    const int64_t group = a->heads_q / a->heads_kv;
    trr_call p = *call;
    p.x.offset += b0 * call->x.batch_stride + h0 * call->x.stride1 + r0 * call->x.stride0;
    p.z.offset += b0 * call->z.batch_stride + h0 * call->z.stride1 + r0 * call->z.stride0;
    if (a->has_lse) p.w.offset += b0 * call->w.batch_stride + h0 * call->w.stride1 + r0 * call->w.stride0;
    p.y.offset += b0 * call->y.batch_stride + h0 / group * call->y.stride1;
    p.u.offset += b0 * call->u.batch_stride + h0 / group * call->u.stride1;
    p.attn.batch = p.batch = nb;
    p.attn.heads_q = nh;
    p.attn.heads_kv = kv_heads(a, nh);
    p.attn.seq_q = p.rows = nr;
    if (a->causal) p.attn.seq_kv = min64(a->seq_kv, r0 + nr + a->seq_kv - a->seq_q);
    p.k = p.attn.seq_kv;
    if (p.attn.seq_kv <= 0) return trr_attention_write_empty(ctx, &p); /* no row of the part sees a key */
    return run(ctx, &p);
}

trr_status trr_attention_run_parts(trr_context *ctx, const trr_call *call,
                                   trr_status (*run)(trr_context *ctx, const trr_call *part)) {
    int64_t n[AXES];
    char why[320];
    if (!part_sizes(call, n, why, sizeof why)) return trr_error(ctx, TRR_ERR_OVERFLOW, "%s", why);
    const trr_attention_shape *a = &call->attn;
    if (n[AX_B] == a->batch && n[AX_H] == a->heads_q && n[AX_R] == a->seq_q) return run(ctx, call);
    const int64_t group = a->heads_q / a->heads_kv;
    /* heads in chunks of whole groups; a part under one group steps through each group on its own */
    const int64_t chunk = n[AX_H] >= group ? n[AX_H] : group;
    for (int64_t b0 = 0; b0 < a->batch; b0 += n[AX_B])
        for (int64_t c0 = 0; c0 < a->heads_q; c0 += chunk)
            for (int64_t h0 = c0; h0 < min64(c0 + chunk, a->heads_q); h0 += n[AX_H])
                for (int64_t r0 = 0; r0 < a->seq_q; r0 += n[AX_R])
                    TRR_TRY(run_part(ctx, call, b0, min64(n[AX_B], a->batch - b0), h0,
                                     min64(n[AX_H], min64(c0 + chunk, a->heads_q) - h0), r0,
                                     min64(n[AX_R], a->seq_q - r0), run));
    return TRR_OK;
}
