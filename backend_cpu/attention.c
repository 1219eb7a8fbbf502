/*
 * attention on the CPU (docs/ops.md, attention): blocked and online, as the GPU kernels are.
 *
 * A work item is one block of query positions [i0, i0 + bq) of every query head of one kv group (grouped-query
 * attention: the group's heads share their keys and values, so they share each loaded block too), in one batch.
 * Its rows are stacked head after head into one Q block of R = group x bq rows (bq = block_m / group, at least
 * 1), converted to f32 once. The keys are visited in blocks of BN = block_n: each block of K (transposed) and V
 * is converted to f32, the scores of the whole Q block come from one block product, each row's online softmax
 * step rescales its f32 accumulator, and a second block product adds P·V. A row's output is divided by its sum
 * and rounded once, on store; lse = m + ln l. Under causal a block stops at the last key its last row sees,
 * and each row masks the keys past its own limit.
 *
 * The pool runs the items (batch x kv heads x query blocks), the longest query blocks of a causal call first.
 * The block body (attention_block.h) is plain C compiled for the baseline ISA and, where the CPU has them, for
 * AVX2+FMA and AVX-512 (chosen once by a run-time check, as matmul.c does).
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu.h"
#include "cpu_math.h"
#include "op_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_MR 4   /* rows of one register tile of the block products */
#define ATTN_NR 16  /* columns of one register tile, and the vector chunk of every row loop */
#define ATTN_MAX_BLOCK 1024

typedef struct attn_job attn_job;
typedef void (*attn_block_fn)(const attn_job *job, int64_t b, int64_t g, int64_t i0, float *ws);

struct attn_job {
    const trr_call *call;
    int64_t group;     /* query heads per kv head */
    int64_t bq;        /* query positions per item */
    int64_t nqb;       /* query blocks per head */
    int64_t rp;        /* rows of the Q block: group * bq rounded up to ATTN_MR */
    int64_t dp;        /* D rounded up to ATTN_NR */
    int64_t bn;        /* keys per block, a multiple of ATTN_NR */
    float qscale;      /* scale * log2(e): scores in base 2 */
    attn_block_fn run_block;
    float *scratch;
    int64_t ws_floats; /* per worker */
};

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

/* Row (b, h, s) of q as D f32 values. */
static void attn_load_row(const trr_operand *op, int64_t b, int64_t h, int64_t s, int64_t D, float *dst) {
    trr_cpu_load_f32(op->mem, op->dtype, elem(op, b, h, s), dst, D);
}

/* Keys [j0, j0 + nb) of kv head (b, g): K transposed into kt [dp][bn], V into v [bn][dp]; the rest zero, so the
 * products over padded rows and columns add nothing (a masked weight is 0 and meets a 0, never NaN padding). */
static void attn_load_kv(const trr_call *c, int64_t b, int64_t g, int64_t j0, int64_t nb, const attn_job *job,
                         float *kt, float *v) {
    const int64_t D = c->attn.head_dim, dp = job->dp, bn = job->bn;
    float row[TRR_ATTN_MAX_HEAD_DIM];
    memset(kt, 0, (size_t)(dp * bn) * sizeof *kt);
    for (int64_t j = 0; j < nb; j++) {
        trr_cpu_load_f32(c->y.mem, c->y.dtype, elem(&c->y, b, g, j0 + j), row, D);
        for (int64_t d = 0; d < D; d++) kt[d * bn + j] = row[d];
        float *vr = v + j * dp;
        trr_cpu_load_f32(c->u.mem, c->u.dtype, elem(&c->u, b, g, j0 + j), vr, D);
        for (int64_t d = D; d < dp; d++) vr[d] = 0.0f;
    }
    if (nb < bn) memset(v + nb * dp, 0, (size_t)((bn - nb) * dp) * sizeof *v);
}

/* A finished row: o / l rounded once into o's dtype, and lse = m ln 2 + ln l; a row that saw no key (l = 0)
 * gives o = 0 and lse = -inf. */
static void attn_store_row(const trr_call *c, int64_t b, int64_t h, int64_t i, float *o, float m, float l) {
    const int64_t D = c->attn.head_dim;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int64_t d = 0; d < D; d++) o[d] = l > 0.0f ? o[d] * inv : 0.0f;
    trr_cpu_store_f32(c->z.mem, c->z.dtype, elem(&c->z, b, h, i), o, D);
    if (!c->attn.has_lse) return;
    const float lse = l > 0.0f ? (float)((double)m * 0.69314718055994530942 + log((double)l)) : -INFINITY;
    ((float *)c->w.mem)[elem(&c->w, b, h, i)] = lse;
}

/* The block body, once per ISA. No FP traps are enabled anywhere in the library, so the body may say so:
 * without it GCC keeps the selects of the softmax step (masking, clamping) as branches and vectorises none of
 * those loops. */
#define ATTN_FN(name) name##_base
#define ATTN_TARGET __attribute__((optimize("no-trapping-math")))
#define ATTN_MADD(a, b, c) ((c) + (a) * (b))
#include "attention_block.h"
#undef ATTN_FN
#undef ATTN_TARGET
#undef ATTN_MADD

#if defined(__GNUC__) && defined(__x86_64__)
#define TRR_CPU_ATTN_X86 1
#define ATTN_FN(name) name##_avx2
#define ATTN_TARGET __attribute__((target("avx2,fma"), optimize("no-trapping-math")))
#define ATTN_MADD(a, b, c) fmaf((a), (b), (c))
#include "attention_block.h"
#undef ATTN_FN
#undef ATTN_TARGET
#define ATTN_FN(name) name##_avx512
#define ATTN_TARGET __attribute__((target("avx512f,fma"), optimize("no-trapping-math")))
#include "attention_block.h"
#undef ATTN_FN
#undef ATTN_TARGET
#undef ATTN_MADD
#endif

static attn_block_fn pick_block(void) {
#ifdef TRR_CPU_ATTN_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return run_block_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return run_block_avx2;
#endif
    return run_block_base;
}

static void attn_task(void *arg, int64_t begin, int64_t end, int worker) {
    const attn_job *job = arg;
    const trr_attention_shape *a = &job->call->attn;
    float *ws = job->scratch + (int64_t)worker * job->ws_floats;
    for (int64_t it = begin; it < end; it++) {
        const int64_t qb = job->nqb - 1 - it % job->nqb; /* the long (late) causal blocks first */
        const int64_t bg = it / job->nqb;
        job->run_block(job, bg / a->heads_kv, bg % a->heads_kv, qb * job->bq, ws);
    }
}

void trr_cpu_attention_choose_config(trr_call *call) {
    trr_config *c = &call->config;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    if (!c->block_m) c->block_m = 64;
    if (!c->block_n) c->block_n = 64;
    if (!c->threads) c->threads = 1;
    if (!c->stages) c->stages = 1;
}

trr_status trr_cpu_attention_check_config(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    if (c->block_m < 1 || c->block_m > ATTN_MAX_BLOCK || c->block_n < 1 || c->block_n > ATTN_MAX_BLOCK)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu attention: block_m %d and block_n %d must be 1 to %d",
                         c->block_m, c->block_n, ATTN_MAX_BLOCK);
    return TRR_OK;
}

trr_status trr_cpu_attention(trr_context *ctx, const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    attn_job job = {.call = call, .group = a->heads_q / a->heads_kv, .run_block = pick_block()};
    job.bq = call->config.block_m / job.group;
    if (job.bq < 1) job.bq = 1;
    if (job.bq > a->seq_q) job.bq = a->seq_q;
    job.nqb = (a->seq_q + job.bq - 1) / job.bq;
    job.rp = round_up(job.group * job.bq, ATTN_MR);
    job.dp = round_up(a->head_dim, ATTN_NR);
    job.bn = round_up(call->config.block_n, ATTN_NR);
    job.qscale = (float)((double)a->scale * 1.44269504088896340736);
    /* per worker: q [rp][dp], kt [dp][bn], v [bn][dp], s [rp][bn], o [rp][dp], m and l [rp]; whole cache lines */
    job.ws_floats = round_up(2 * job.rp * job.dp + 2 * job.dp * job.bn + job.rp * job.bn + 2 * job.rp, 16);
    trr_cpu_pool *pool = trr_cpu_ctx_pool(ctx);
    const size_t bytes = (size_t)job.ws_floats * (size_t)trr_cpu_pool_workers(pool) * sizeof(float);
    void *scratch = NULL;
    if (posix_memalign(&scratch, 64, bytes) != 0 || !scratch)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu attention: %zu bytes of block scratch", bytes);
    job.scratch = scratch;
    trr_cpu_parallel_for(pool, a->batch * a->heads_kv * job.nqb, 1, attn_task, &job);
    free(scratch);
    return TRR_OK;
}
