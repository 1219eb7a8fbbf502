/* attention's decode form on OpenCL: variant simt, the portable kernel (kernels/opencl/attention_decode.cl, which
 * says how it works; the rules both portable backends share are core/attention_decode.h), and variant mma, tensor
 * cores through inline PTX (kernels/opencl/attention_decode_mma.cl), which the heuristic takes where the mma probe
 * passed and the call suits the mma kernels. Their heuristics, limits and launches, the chunks of the keys merged by
 * attention.c's combine launch. attention.c hands a call here where split_k >= 2 selects it. The mma config:
 *   threads  32 (one warp a work-group)
 *   block_m  16 (rows of a kv head's group a work-group: its G = Hq / Hkv heads times Sq queries)
 *   block_n  keys per block, a multiple of 16 up to 64
 *   stages   2-4: a ring of (K, V) blocks in local memory, loaded stages - 1 blocks ahead
 *   split_k  chunks of the keys at least (each a multiple of block_n) */
#include "attention_decode.h"

#include "opencl.h"

#include <stdio.h>

/* attention.cl's build options the merge compiles that program with: the per-head kernel's heuristic ones on a
 * CPU device (block_m 16, 64 work-items), so PoCL compiles that program once for both paths. */
#define COMBINE_OPTIONS "-cl-std=CL1.2 -DBMMAX=16 -DT=64 -DDMAX=256"

#define MMA_THREADS 32
#define MMA_ROWS 16
#define MMA_MAX_BLOCK_N 64
#define MMA_LEAST_KEYS 512   /* the heuristic's least keys a chunk: the ring's fill is paid once a chunk */
#define MMA_MOST_KEYS 2048   /* ... and its most: long contexts take more chunks, for a short ragged end */
#define MMA_GROUPS_A_UNIT 16 /* work-groups a compute unit at least: several warps of a unit stream at once */
#define MMA_MAX_SPLITS 128

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int trr_attention_decode_mma_selected(const trr_config *c) {
    return c->variant == TRR_VARIANT_MMA && c->split_k >= 2;
}

/* Local memory of the mma kernel's ring: stages (K, V) blocks of block_n rows of D halves and 16 bytes of padding */
static uint64_t mma_local_bytes(const trr_config *c, int64_t d) {
    return 2ull * (uint64_t)c->stages * (uint64_t)c->block_n * (uint64_t)(d + 8) * 2ull;
}

/* The mma decode form's heuristic: one warp a work-group, 16 keys a block in a ring of 4 (3 blocks, 24 KiB at
 * D 128 in f16, in flight a warp while it computes one; fewer stages where local memory is short), and chunks
 * enough for MMA_GROUPS_A_UNIT work-groups a compute unit, each MMA_LEAST_KEYS to MMA_MOST_KEYS keys. */
static void fill_mma(const trr_cl_dev *dev, const trr_call *call, trr_config *c) {
    const trr_attention_shape *a = &call->attn;
    if (!c->threads) c->threads = MMA_THREADS;
    if (!c->block_m) c->block_m = MMA_ROWS;
    if (!c->block_n) c->block_n = 16;
    if (!c->stages) {
        c->stages = 4;
        while (c->stages > 2 && mma_local_bytes(c, a->head_dim) > dev->local_memory) c->stages--;
    }
    if (!c->split_k) {
        const int64_t units = dev->info.compute_units > 0 ? dev->info.compute_units : 64;
        const int64_t base = ceil_div(a->seq_q * (a->heads_q / a->heads_kv), MMA_ROWS) * a->heads_kv * a->batch;
        int64_t s = ceil_div(units * MMA_GROUPS_A_UNIT, base);
        if (s > a->seq_kv / MMA_LEAST_KEYS) s = a->seq_kv / MMA_LEAST_KEYS;
        if (s < ceil_div(a->seq_kv, MMA_MOST_KEYS)) s = ceil_div(a->seq_kv, MMA_MOST_KEYS);
        c->split_k = s < 2 ? 2 : s > MMA_MAX_SPLITS ? MMA_MAX_SPLITS : (int)s;
    }
}

int trr_cl_attention_decode_choose(trr_context *ctx, trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_MMA || (c->variant == TRR_VARIANT_AUTO && dev->mma.ok)) {
        /* the mma form where it is asked for (split_k >= 2) or the call is decode-shaped and the mma kernels take
         * it; a call that is neither goes on to the per-head kernels (an auto one may still take the simt decode
         * form below, where the mma kernels refuse it) */
        const int mma = dev->mma.ok && !trr_cl_attention_mma_refusal(call);
        if (c->split_k >= 2 || (!c->split_k && mma && dev->info.is_gpu && trr_attention_decode_wanted(call))) {
            if (c->variant == TRR_VARIANT_MMA || mma) {
                c->variant = TRR_VARIANT_MMA;
                fill_mma(dev, call, c);
                return 1;
            }
        }
        if (c->variant == TRR_VARIANT_MMA) return 0;
    }
    if (c->variant != TRR_VARIANT_AUTO && c->variant != TRR_VARIANT_SIMT) return 0;
    if (c->split_k == 1 || (!c->split_k && !(dev->info.is_gpu && trr_attention_decode_wanted(call)))) return 0;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    if (!c->threads && dev->max_work_group < 128) c->threads = (int)dev->max_work_group;
    trr_attention_decode_fill(call, dev->info.compute_units, dev->local_memory, c);
    return 1;
}

trr_status trr_cl_attention_decode_check(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    char why[320];
    if (!trr_attention_decode_config_ok(call, dev->local_memory, dev->max_work_group, dev->loop_budget, why,
                                        sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: attention: %s", why);
    return TRR_OK;
}

#define ARG(i, x) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(x), &(x)))

/* The decode kernel's launch over (row blocks, kv heads, batch x chunks), writing o and lse (one chunk) or the
 * chunks' partial results to part and part_lse. */
static trr_status launch(trr_context *ctx, const trr_call *call, int64_t keys, int64_t nsplit, cl_mem part,
                         cl_mem part_lse) {
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    const int64_t slots = cfg->threads / (a->head_dim / 8);
    char options[192] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DT=%d -DBM=%d -DNK=%d", cfg->threads, cfg->block_m,
               (int)(cfg->block_n / slots));
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention_decode.cl", options, "attention_decode", &k));
    /* without lse the kernel is handed o's buffer for it, and never writes it */
    const cl_mem mems[7] = {call->x.mem, call->y.mem, call->u.mem, call->z.mem,
                            a->has_lse ? call->w.mem : call->z.mem, part, part_lse};
    for (int i = 0; i < 7; i++) ARG(i, mems[i]);
    TRR_TRY(trr_cl_set_arg(ctx, k, 7, (size_t)trr_attention_decode_local_bytes(cfg, a->head_dim), NULL));
    const trr_operand *views[5] = {&call->x, &call->y, &call->u, &call->z, &call->w};
    for (int i = 0; i < 5; i++) {
        const cl_long vw[4] = {views[i]->offset, views[i]->batch_stride, views[i]->stride1, views[i]->stride0};
        for (int j = 0; j < 4; j++) ARG(8 + 4 * i + j, vw[j]);
    }
    const cl_int ints[11] = {(cl_int)a->heads_q, (cl_int)(a->heads_q / a->heads_kv), (cl_int)a->seq_q,
                             (cl_int)a->seq_kv, (cl_int)a->head_dim, cfg->block_n, a->causal, a->has_lse,
                             (cl_int)nsplit, (cl_int)keys, nsplit > 1};
    for (int i = 0; i < 11; i++) ARG(28 + i, ints[i]);
    const cl_float qscale = (cl_float)((double)a->scale * 1.44269504088896340736);
    ARG(39, qscale);
    const cl_int dt = trr_cl_dtype_code(call->x.dtype);
    ARG(40, dt);
    const size_t global[3] = {(size_t)trr_attention_decode_row_blocks(call) * (size_t)cfg->threads,
                              (size_t)a->heads_kv, (size_t)a->batch * (size_t)nsplit};
    const size_t local[3] = {(size_t)cfg->threads, 1, 1};
    return trr_cl_launch(ctx, k, 3, global, local);
}

typedef trr_status (*chunk_launch)(trr_context *, const trr_call *, int64_t, int64_t, cl_mem, cl_mem);

/* The keys in nsplit chunks of `keys`: one launch writing o and lse where there is one chunk; else the chunks'
 * partial results into scratch, merged by attention.cl's combine. */
static trr_status run_chunks(trr_context *ctx, const trr_call *call, int64_t keys, int64_t nsplit, chunk_launch fn) {
    trr_cl_dev *dev = ctx->dev;
    const trr_attention_shape *a = &call->attn;
    if (nsplit == 1) return fn(ctx, call, keys, 1, call->z.mem, call->z.mem); /* part: never written */
    const size_t rows = (size_t)(a->batch * a->heads_q * a->seq_q);
    cl_mem part, part_lse;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->partials, (size_t)nsplit * rows * (size_t)a->head_dim * 4,
                               "attention's chunks", &part));
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->partial_sums, (size_t)nsplit * rows * 4, "attention's chunk sums",
                               &part_lse));
    trr_status st = fn(ctx, call, keys, nsplit, part, part_lse);
    if (st == TRR_OK)
        st = trr_cl_attention_combine(ctx, call, COMBINE_OPTIONS, part, part_lse,
                                      a->has_lse ? call->w.mem : call->z.mem, (cl_int)nsplit);
    return st;
}

trr_status trr_cl_attention_decode_run(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    int64_t keys, nsplit;
    trr_attention_decode_chunks(call, dev->loop_budget, &keys, &nsplit);
    return run_chunks(ctx, call, keys, nsplit, launch);
}

trr_status trr_cl_attention_decode_mma_check(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    TRR_TRY(trr_cl_attention_mma_usable(ctx, call));
    if (c->threads != MMA_THREADS || c->block_m != MMA_ROWS)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma with split_k >= 2 (the decode form) takes "
                         "threads %d and block_m %d, not %d and %d",
                         MMA_THREADS, MMA_ROWS, c->threads, c->block_m);
    if (c->block_n < 16 || c->block_n > MMA_MAX_BLOCK_N || c->block_n % 16 || c->stages < 2 || c->stages > 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma with split_k >= 2 takes block_n a multiple of "
                         "16 up to %d and stages 2 to 4, not %d and %d",
                         MMA_MAX_BLOCK_N, c->block_n, c->stages);
    const uint64_t local = mma_local_bytes(c, call->attn.head_dim);
    if (local > dev->local_memory)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma with split_k >= 2, block_n %d and stages %d "
                         "at D = %lld takes %llu bytes of local memory; the device has %llu",
                         c->block_n, c->stages, (long long)call->attn.head_dim, (unsigned long long)local,
                         (unsigned long long)dev->local_memory);
    return TRR_OK;
}

/* The mma decode kernel's launch over (row blocks, kv heads, batch x chunks), writing o and lse (one chunk) or the
 * chunks' partial results to part and part_lse. */
static trr_status launch_mma(trr_context *ctx, const trr_call *call, int64_t keys, int64_t nsplit, cl_mem part,
                             cl_mem part_lse) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    char options[192] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DHEAD_DIM=%d -DBLOCK_N=%d -DSTAGES=%d -DX_DT=%d -DADDR_MODE=%d -DCP_ASYNC=%d",
               (int)a->head_dim, cfg->block_n, cfg->stages, trr_cl_dtype_code(call->x.dtype), dev->mma.addr_mode,
               dev->mma.cp_async);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention_decode_mma.cl", options, "attention_decode_mma", &k));
    /* without lse the kernel is handed o's buffer for it, and never writes it */
    const cl_mem mems[7] = {call->x.mem, call->y.mem, call->u.mem, call->z.mem,
                            a->has_lse ? call->w.mem : call->z.mem, part, part_lse};
    for (int i = 0; i < 7; i++) ARG(i, mems[i]);
    const trr_operand *views[5] = {&call->x, &call->y, &call->u, &call->z, &call->w};
    for (int i = 0; i < 5; i++) {
        const cl_long vw[4] = {views[i]->offset, views[i]->batch_stride, views[i]->stride1, views[i]->stride0};
        for (int j = 0; j < 4; j++) ARG(7 + 4 * i + j, vw[j]);
    }
    const cl_int ints[9] = {(cl_int)a->heads_q, (cl_int)(a->heads_q / a->heads_kv), (cl_int)a->seq_q,
                            (cl_int)a->seq_kv, a->causal, a->has_lse, (cl_int)nsplit, (cl_int)keys, nsplit > 1};
    for (int i = 0; i < 9; i++) ARG(27 + i, ints[i]);
    const cl_float qscale = (cl_float)((double)a->scale * 1.44269504088896340736);
    ARG(36, qscale);
    const size_t row_blocks = (size_t)ceil_div(a->seq_q * (a->heads_q / a->heads_kv), MMA_ROWS);
    const size_t global[3] = {row_blocks * MMA_THREADS, (size_t)a->heads_kv, (size_t)a->batch * (size_t)nsplit};
    const size_t local[3] = {MMA_THREADS, 1, 1};
    return trr_cl_launch(ctx, k, 3, global, local);
}

trr_status trr_cl_attention_decode_mma_run(trr_context *ctx, const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    const int64_t bn = call->config.block_n;
    const int64_t keys = ceil_div(ceil_div(a->seq_kv, call->config.split_k), bn) * bn;
    return run_chunks(ctx, call, keys, ceil_div(a->seq_kv, keys), launch_mma);
}
