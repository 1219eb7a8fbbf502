/*
 * attention on the CPU (docs/ops.md, attention): blocked and online, as the GPU kernels are, with both block
 * products on the system BLAS (blas.h: OpenBLAS's sgemm) and the exponentials on SLEEF's vector exp (vmath.h).
 *
 * A work item is one block of query positions [i0, i0 + bq) of every query head of one kv group (grouped-query
 * attention: the group's heads share their keys and values, so they share each block product too), in one batch.
 * Its rows are stacked head after head into one Q block of R = group x bq rows (bq = block_m / group, at least
 * 1), converted to f32 and multiplied by scale once. The keys are visited in blocks of BN = block_n: the scores of
 * the whole Q block are one sgemm against the block of K (read transposed), each row's online softmax step turns
 * its scores into weights e^(s - m) and rescales its f32 accumulator, and a second sgemm adds P·V. A row's output
 * is divided by its sum and rounded once, on store; lse = m + ln l. Under causal a block stops at the last key
 * its last row sees, and each row gives the keys past its own limit weight 0.
 *
 * f32 keys and values whose rows are at least D elements apart (any view that is not an overlapping one) go to
 * the BLAS where they are, with their row stride as the leading dimension; f16 and bf16 ones, and overlapping
 * views, are widened a block at a time into per-worker f32 copies that stay in cache for the two products.
 *
 * The pool runs the items (batch x kv heads x query blocks), the longest query blocks of a causal call first,
 * each item's GEMMs on its own thread with OpenBLAS's threads off (blas.h), so there are never more threads than
 * cores.
 *
 * split_k (docs/ops.md: the keys split over blocks whose partial results a second pass combines) cuts each item's
 * keys into chunks of whole key blocks, one more item each: a chunk leaves its rows' unnormalised accumulators,
 * running maxima and sums in a scratch, and a second pass over the items merges a row's chunks in order (the sums
 * and accumulators rescaled to the largest maximum) and stores it as above. The heuristic splits where the items
 * are fewer than the cores (decode: a few kv heads, one query, many keys).
 */
#define _POSIX_C_SOURCE 200809L

#include "blas.h"
#include "cpu.h"
#include "cpu_math.h"
#include "op_table.h"
#include "vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_MAX_BLOCK 1024
#define ATTN_MAX_SPLIT 128  /* key chunks a call may ask for */
#define ATTN_SPLIT_KEYS 512 /* the heuristic's fewest keys a chunk */

typedef struct {
    const trr_call *call;
    int64_t group;    /* query heads per kv head */
    int64_t bq;       /* query positions per item */
    int64_t nqb;      /* query blocks per head */
    int64_t rows;     /* rows of the Q block: group * bq */
    int64_t bn;       /* keys per block */
    int direct_k;     /* k read in place by the BLAS (f32, rows apart by at least D) */
    int direct_v;     /* the same for v */
    float *scratch;
    int64_t ws_floats; /* per worker */
    int64_t split;     /* key chunks per item (1: none) */
    int64_t chunk;     /* keys per chunk, a multiple of bn */
    float *parts;      /* split: per item and chunk, rows x (D + 3): o [rows][D], m [rows], l [rows] as double */
} attn_job;

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* The keys query row i sees (docs/ops.md, attention: j <= i + Skv - Sq under causal). */
static int64_t attn_visible(const trr_attention_shape *a, int64_t i) {
    if (!a->causal) return a->seq_kv;
    const int64_t last = i + (a->seq_kv - a->seq_q);
    return last < 0 ? 0 : last + 1 < a->seq_kv ? last + 1 : a->seq_kv;
}

static int64_t elem(const trr_operand *o, int64_t b, int64_t h, int64_t s) {
    return o->offset + b * o->batch_stride + h * o->stride1 + s * o->stride0;
}

static const void *elem_ptr(const trr_operand *o, int64_t idx) {
    return (const unsigned char *)o->mem + (size_t)idx * trr_cpu_dtype_bytes(o->dtype);
}

/* Whether the BLAS can read an operand's rows where they are: f32, and a row stride that is a valid leading
 * dimension (at least D, below 2^31). */
static int attn_direct(const trr_operand *o, int64_t D) {
    return o->dtype == TRR_F32 && o->stride0 >= D && o->stride0 < ((int64_t)1 << 31);
}

/* Rows [j0, j0 + nb) of kv operand o at (b, g) as an f32 matrix with leading dimension *ld: in place when
 * direct, else widened into buf [nb][D]. */
static const float *attn_kv_block(const trr_operand *o, int direct, int64_t b, int64_t g, int64_t j0, int64_t nb,
                                  int64_t D, float *buf, int64_t *ld) {
    if (direct) {
        *ld = o->stride0;
        return (const float *)o->mem + elem(o, b, g, j0);
    }
    for (int64_t j = 0; j < nb; j++) trr_cpu_widen(elem_ptr(o, elem(o, b, g, j0 + j)), o->dtype, buf + j * D, D);
    *ld = D;
    return buf;
}

/* One row's online softmax step over a key block: s[0 .. nb) are its scores, the first `seen` visible. Turns s
 * into the weights (0 past seen), rescales the row's accumulator o[0 .. D) and updates its running max *m and sum
 * *l. A row with no finite score yet keeps weights 0 and stays as it is. */
static void attn_softmax_step(float *s, int64_t seen, int64_t nb, float *o, int64_t D, float *m, double *l) {
    const float mb = seen > 0 ? trr_cpu_max_f32(s, seen) : -INFINITY;
    const float mnew = mb > *m ? mb : *m;
    if (mnew == -INFINITY) {
        memset(s, 0, (size_t)nb * sizeof *s);
        return;
    }
    const double sum = trr_cpu_exp_shift_sum(s, mnew, s, seen);
    if (seen < nb) memset(s + seen, 0, (size_t)(nb - seen) * sizeof *s);
    if (mnew != *m) {
        const float alpha = *m == -INFINITY ? 0.0f : expf(*m - mnew);
        trr_cpu_scale_f32(o, alpha, o, D);
        *l *= alpha;
        *m = mnew;
    }
    *l += sum;
}

/* A finished row: o / l rounded once into o's dtype, and lse = m + ln l; a row that saw no key (l = 0) gives
 * o = 0 and lse = -inf. */
static void attn_store_row(const trr_call *c, int64_t b, int64_t h, int64_t i, float *o, float m, double l) {
    const int64_t D = c->attn.head_dim;
    if (l > 0.0) trr_cpu_scale_f32(o, (float)(1.0 / l), o, D);
    else memset(o, 0, (size_t)D * sizeof *o);
    trr_cpu_store_f32(c->z.mem, c->z.dtype, elem(&c->z, b, h, i), o, D);
    if (!c->attn.has_lse) return;
    const float lse = l > 0.0 ? (float)((double)m + log(l)) : -INFINITY;
    ((float *)c->w.mem)[elem(&c->w, b, h, i)] = lse;
}

/* Where chunk `part` of item `item` leaves its rows' state (attn_job.parts). */
static float *attn_part(const attn_job *job, int64_t item, int64_t part) {
    return job->parts + (item * job->split + part) * job->rows * (job->call->attn.head_dim + 3);
}

/* One work item: the query rows [i0, i0 + bq) of every head of kv group g in batch b, against the keys they see
 * among [k0, k1); part (non-NULL under a split) takes the rows' state instead of C. */
static void attn_block(const attn_job *job, int64_t b, int64_t g, int64_t i0, int64_t k0, int64_t k1, float *ws,
                       float *part) {
    const trr_call *c = job->call;
    const trr_attention_shape *a = &c->attn;
    const int64_t D = a->head_dim, bn = job->bn, group = job->group;
    const int64_t bq = i0 + job->bq <= a->seq_q ? job->bq : a->seq_q - i0; /* the last block may be short */
    const int64_t rows = group * bq; /* row r = hh * bq + ii: head g * group + hh, query i0 + ii */
    double *l = (double *)(void *)ws;
    float *q = ws + 2 * job->rows, *o = q + job->rows * D, *s = o + job->rows * D, *m = s + job->rows * bn;
    float *kbuf = m + job->rows, *vbuf = kbuf + (job->direct_k ? 0 : bn * D);
    const float scale = (float)a->scale;
    for (int64_t hh = 0; hh < group; hh++)
        for (int64_t ii = 0; ii < bq; ii++) {
            float *qr = q + (hh * bq + ii) * D;
            trr_cpu_widen(elem_ptr(&c->x, elem(&c->x, b, g * group + hh, i0 + ii)), c->x.dtype, qr, D);
            trr_cpu_scale_f32(qr, scale, qr, D);
        }
    memset(o, 0, (size_t)(rows * D) * sizeof *o);
    for (int64_t r = 0; r < rows; r++) m[r] = -INFINITY, l[r] = 0.0;
    int64_t keys = attn_visible(a, i0 + bq - 1); /* the block's last row sees the most */
    if (keys > k1) keys = k1;
    for (int64_t j0 = k0; j0 < keys; j0 += bn) {
        const int64_t nb = keys - j0 < bn ? keys - j0 : bn;
        int64_t ldk, ldv;
        const float *kb = attn_kv_block(&c->y, job->direct_k, b, g, j0, nb, D, kbuf, &ldk);
        /* cleared here and accumulated onto: OpenBLAS clears C for beta = 0 with a slower loop than memset's */
        memset(s, 0, (size_t)(rows * nb) * sizeof *s);
        trr_cpu_sgemm(0, 1, rows, nb, D, q, D, kb, ldk, 1.0f, s, nb);
        for (int64_t hh = 0; hh < group; hh++)
            for (int64_t ii = 0; ii < bq; ii++) {
                const int64_t r = hh * bq + ii;
                int64_t seen = attn_visible(a, i0 + ii) - j0;
                seen = seen < 0 ? 0 : seen > nb ? nb : seen;
                attn_softmax_step(s + r * nb, seen, nb, o + r * D, D, &m[r], &l[r]);
            }
        const float *vb = attn_kv_block(&c->u, job->direct_v, b, g, j0, nb, D, vbuf, &ldv);
        trr_cpu_sgemm(0, 0, rows, D, nb, s, nb, vb, ldv, 1.0f, o, D);
    }
    if (part) { /* o [rows][D], then m, then l (two floats each) */
        memcpy(part, o, (size_t)(rows * D) * sizeof *o);
        memcpy(part + job->rows * D, m, (size_t)rows * sizeof *m);
        memcpy(part + job->rows * (D + 1), l, (size_t)rows * sizeof *l);
        return;
    }
    for (int64_t hh = 0; hh < group; hh++)
        for (int64_t ii = 0; ii < bq; ii++) {
            const int64_t r = hh * bq + ii;
            attn_store_row(c, b, g * group + hh, i0 + ii, o + r * D, m[r], l[r]);
        }
}

/* The second pass of a split: item it's rows merged over its chunks, in order, and stored. */
static void attn_merge(const attn_job *job, int64_t it, float *ws) {
    const trr_call *c = job->call;
    const trr_attention_shape *a = &c->attn;
    const int64_t D = a->head_dim, group = job->group, qb = it % job->nqb, bg = it / job->nqb;
    const int64_t b = bg / a->heads_kv, g = bg % a->heads_kv, i0 = qb * job->bq;
    const int64_t bq = i0 + job->bq <= a->seq_q ? job->bq : a->seq_q - i0;
    for (int64_t hh = 0; hh < group; hh++)
        for (int64_t ii = 0; ii < bq; ii++) {
            const int64_t r = hh * bq + ii;
            float m = -INFINITY;
            for (int64_t p = 0; p < job->split; p++) {
                const float mp = attn_part(job, it, p)[job->rows * D + r];
                m = mp > m ? mp : m; /* as the softmax step takes its maximum: a NaN never wins */
            }
            double l = 0.0;
            memset(ws, 0, (size_t)D * sizeof *ws);
            for (int64_t p = 0; p < job->split; p++) {
                const float *part = attn_part(job, it, p);
                const float mp = part[job->rows * D + r];
                double lp;
                memcpy(&lp, part + job->rows * (D + 1) + 2 * r, sizeof lp);
                if (mp == -INFINITY) continue; /* a chunk whose keys this row does not see */
                const float alpha = expf(mp - m);
                l += lp * alpha;
                for (int64_t d = 0; d < D; d++) ws[d] += part[r * D + d] * alpha;
            }
            attn_store_row(c, b, g * group + hh, i0 + ii, ws, m, l);
        }
}

static void attn_task(void *arg, int64_t begin, int64_t end, int worker) {
    const attn_job *job = arg;
    const trr_attention_shape *a = &job->call->attn;
    float *ws = job->scratch + (int64_t)worker * job->ws_floats;
    for (int64_t at = begin; at < end; at++) {
        const int64_t part = at % job->split, it = at / job->split;
        const int64_t qb = job->nqb - 1 - it % job->nqb; /* the long (late) causal blocks first */
        const int64_t bg = it / job->nqb;
        const int64_t k0 = part * job->chunk, k1 = job->split > 1 ? k0 + job->chunk : a->seq_kv;
        attn_block(job, bg / a->heads_kv, bg % a->heads_kv, qb * job->bq, k0, k1, ws,
                   job->split > 1 ? attn_part(job, bg * job->nqb + qb, part) : NULL);
    }
}

static void attn_merge_task(void *arg, int64_t begin, int64_t end, int worker) {
    const attn_job *job = arg;
    float *ws = job->scratch + (int64_t)worker * job->ws_floats;
    for (int64_t it = begin; it < end; it++) attn_merge(job, it, ws);
}

/* Query blocks of 128 rows (a GQA group's heads together) and key blocks of 256: large enough that each sgemm's
 * call and packing costs are a small part of it, small enough that a worker's Q, O and score blocks (256 KiB at
 * D = 128, twice that with the f32 copies of half keys and values) stay in a typical L2. A call with too few items
 * for the pool halves the query block, down to 16 positions, until there are two items per core; where the items
 * are still fewer than the cores, the keys are split into enough chunks of at least ATTN_SPLIT_KEYS for two items
 * a core. */
void trr_cpu_attention_choose_config(trr_call *call) {
    trr_config *c = &call->config;
    const trr_attention_shape *a = &call->attn;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    if (!c->block_m) {
        const int64_t group = a->heads_kv > 0 ? a->heads_q / a->heads_kv : 1;
        const int64_t heads = a->batch * a->heads_kv, want = 2 * (int64_t)trr_cpu_core_count();
        int64_t bq = 128 / group > 16 ? 128 / group : 16;
        while (bq > 16 && heads * ((a->seq_q + bq - 1) / bq) < want) bq /= 2;
        c->block_m = (int)(bq * group < ATTN_MAX_BLOCK ? bq * group : ATTN_MAX_BLOCK);
    }
    if (!c->block_n) c->block_n = 256;
    if (!c->split_k) {
        const int64_t group = a->heads_kv > 0 ? a->heads_q / a->heads_kv : 1;
        const int64_t bq = c->block_m / group > 1 ? c->block_m / group : 1;
        const int64_t cores = trr_cpu_core_count(), want = 2 * cores;
        const int64_t items = a->batch * a->heads_kv * ((a->seq_q + bq - 1) / bq);
        int64_t split = 1;
        if (items > 0 && items < cores) {
            split = (want + items - 1) / items;
            if (split > a->seq_kv / ATTN_SPLIT_KEYS) split = a->seq_kv / ATTN_SPLIT_KEYS;
            if (split > ATTN_MAX_SPLIT) split = ATTN_MAX_SPLIT;
        }
        c->split_k = split >= 2 ? (int)split : 1;
    }
    if (!c->threads) c->threads = 1;
    if (!c->stages) c->stages = 1;
}

trr_status trr_cpu_attention_check_config(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    if (c->block_m < 1 || c->block_m > ATTN_MAX_BLOCK || c->block_n < 1 || c->block_n > ATTN_MAX_BLOCK)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu attention: block_m %d and block_n %d must be 1 to %d",
                         c->block_m, c->block_n, ATTN_MAX_BLOCK);
    if (c->split_k < 1 || c->split_k > ATTN_MAX_SPLIT)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu attention: split_k %d must be 1 to %d (chunks of the keys)",
                         c->split_k, ATTN_MAX_SPLIT);
    return TRR_OK;
}

trr_status trr_cpu_attention(trr_context *ctx, const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    const int64_t D = a->head_dim;
    attn_job job = {.call = call, .group = a->heads_q / a->heads_kv};
    job.bq = call->config.block_m / job.group;
    if (job.bq < 1) job.bq = 1;
    if (job.bq > a->seq_q) job.bq = a->seq_q;
    job.nqb = (a->seq_q + job.bq - 1) / job.bq;
    job.rows = job.group * job.bq;
    job.bn = call->config.block_n < a->seq_kv ? call->config.block_n : a->seq_kv;
    job.direct_k = attn_direct(&call->y, D);
    job.direct_v = attn_direct(&call->u, D);
    /* per worker: l [rows] in double, q and o [rows][D], s [rows][bn], m [rows], the K and V copies [bn][D] where
     * they are made; whole cache lines */
    job.ws_floats = round_up(2 * job.rows + 2 * job.rows * D + job.rows * job.bn + job.rows +
                                 (job.direct_k ? 0 : job.bn * D) + (job.direct_v ? 0 : job.bn * D),
                             16);
    /* the keys in chunks of whole key blocks; a split that leaves a chunk empty has fewer chunks */
    const int64_t items = a->batch * a->heads_kv * job.nqb;
    job.split = 1;
    job.chunk = a->seq_kv;
    if (call->config.split_k > 1 && job.bn > 0) {
        job.chunk = round_up((a->seq_kv + call->config.split_k - 1) / call->config.split_k, job.bn);
        job.split = (a->seq_kv + job.chunk - 1) / job.chunk;
    }
    const size_t part_bytes =
        job.split > 1 ? (size_t)(items * job.split * job.rows * (D + 3)) * sizeof(float) : 0;
    trr_cpu_pool *pool = trr_cpu_ctx_pool(ctx);
    const size_t bytes = (size_t)job.ws_floats * (size_t)trr_cpu_pool_workers(pool) * sizeof(float);
    const uint64_t memory = ctx->info.global_memory;
    if (memory > 0 && part_bytes > memory / 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cpu attention: split_k %d's partial results need %zu bytes, past a quarter of the %llu "
                         "bytes of memory; split fewer ways",
                         call->config.split_k, part_bytes, (unsigned long long)memory);
    void *scratch = NULL;
    if (posix_memalign(&scratch, 64, bytes + part_bytes) != 0 || !scratch)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu attention: %zu bytes of block scratch", bytes + part_bytes);
    job.scratch = scratch;
    job.parts = job.split > 1 ? (float *)scratch + bytes / sizeof(float) : NULL;
    trr_cpu_blas_begin();
    trr_cpu_parallel_for(pool, items * job.split, 1, attn_task, &job);
    trr_cpu_blas_end();
    if (job.split > 1) trr_cpu_parallel_for(pool, items, 1, attn_merge_task, &job);
    free(scratch);
    return TRR_OK;
}
