/* attention on OpenCL: variant simt, the portable kernel (kernels/opencl/attention.cl, which says how it works), and
 * variant mma, tensor cores through inline PTX (kernels/opencl/attention_mma.cl), which the heuristic takes where
 * matmul's mma probe passed (mma_probe.c) and the call suits it (trr_cl_attention_mma_refusal). The mma config:
 *   block_m  query rows per work-group, 16 or 32 rows a warp (the rows a staged K and V block serves)
 *   threads  32 per warp, 1 to 8 warps
 *   block_n  keys per block, a multiple of 16 up to 128
 *   stages   1: a K and a V buffer, loaded alternately; 2-4: a ring of (K, V) stages, loaded stages - 1 blocks ahead
 * The simt config:
 *   block_m  query rows per work-group (fewer where there are fewer queries: a decode step takes one)
 *   block_n  keys per block (BN), a launch argument: sized so the work-group's tiles fit local memory
 *   threads  work-items per work-group (T)
 * One program per (BM, T) serves every head dim and dtype (both are arguments): PoCL takes seconds a compile. Where the
 * device cuts a work-item's loops short (llvmpipe), the keys are split across work-groups, each within the budget, into
 * f32 scratch that attention_combine merges. split_k >= 2 (the heuristic's choice for decode) runs the decode form
 * instead (attention_decode.c): variant simt its portable kernel, variant mma its tensor-core one. */
#include "opencl.h"

#include "attention_decode.h"
#include "attention_tile.h"
#include "op_table.h"

#include <stdio.h>

#define DMAX TRR_ATTN_MAX_HEAD_DIM

/* Local memory of an mma tile: q's rows where a warp's q fragments do not stay in its registers (32 rows at
 * D 128), then the K and V tiles of every stage; rows of D halves and 16 bytes of padding. */
static uint64_t mma_local_bytes(const trr_config *c, int64_t d) {
    const int64_t warps = c->threads >= 32 ? c->threads / 32 : 1;
    const int64_t q_rows = c->block_m / warps * d <= 16 * 128 ? 0 : c->block_m;
    const int64_t tiles = c->stages <= 1 ? 2 : 2 * (int64_t)c->stages;
    return (uint64_t)(q_rows + tiles * c->block_n) * (uint64_t)(d + 8) * 2u;
}

/* The heuristic's mma tiles, the first that fits the device's local memory and work-group size (NVIDIA's OpenCL
 * gives a work-group 48 KiB). Many rows at D 64: 128 rows, 4 warps of 32 (a K or V fragment read from local
 * memory feeds two row tiles' MMAs), two stages of 64 keys (36 KiB). At D 128 a warp's 32 rows of accumulators
 * and two-part weights leave no registers for q: 4 warps of 16 rows, a K and a V buffer of 64 keys, ran 7%
 * faster on NVIDIA than 8 warps of 16 rows sharing them (docs/performance.md). Then 64 rows (few queries, or a
 * grid short of the compute units), and decode: a warp of 16 rows. */
#define MMA_TILE(bm, bn, warps, st) {.block_m = bm, .block_n = bn, .threads = 32 * (warps), .stages = st}
static const trr_config mma_tiles_d64[] = {MMA_TILE(128, 64, 4, 2), MMA_TILE(128, 64, 4, 1), MMA_TILE(64, 64, 4, 2),
                                           MMA_TILE(64, 64, 4, 1), MMA_TILE(64, 32, 4, 1), MMA_TILE(64, 16, 4, 1)};
static const trr_config mma_tiles_d128[] = {MMA_TILE(64, 64, 4, 1), MMA_TILE(64, 32, 4, 1), MMA_TILE(64, 16, 4, 1)};
static const trr_config mma_tiles_decode[] = {MMA_TILE(16, 64, 1, 1), MMA_TILE(16, 32, 1, 1), MMA_TILE(16, 16, 1, 1)};

static int mma_fits(const trr_cl_dev *dev, const trr_config *c, int64_t d) {
    return mma_local_bytes(c, d) <= dev->local_memory && (size_t)c->threads <= dev->max_work_group;
}

static trr_config mma_heuristic(const trr_cl_dev *dev, const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    const int64_t units = dev->info.compute_units > 0 ? dev->info.compute_units : 64;
    const trr_config *list = a->head_dim <= 64 ? mma_tiles_d64 : mma_tiles_d128;
    size_t n = a->head_dim <= 64 ? sizeof mma_tiles_d64 / sizeof *list : sizeof mma_tiles_d128 / sizeof *list;
    if (a->seq_q <= 16) {
        list = mma_tiles_decode;
        n = sizeof mma_tiles_decode / sizeof *list;
    }
    for (size_t i = 0; i < n; i++) {
        const int64_t bm = list[i].block_m;
        const int64_t grid = (a->seq_q + bm - 1) / bm * a->heads_q * a->batch;
        if (bm > 64 && (a->seq_q <= 64 || grid < units)) continue;
        if (mma_fits(dev, &list[i], a->head_dim)) return list[i];
    }
    return list[n - 1];
}

static int multiple_of(const trr_operand *t, int64_t n) {
    return t->offset % n == 0 && t->batch_stride % n == 0 && t->stride1 % n == 0 && t->stride0 % n == 0;
}

/* Why the mma kernel cannot take this call, or NULL where it can: it takes f16 and bf16, head dims 64 and 128
 * (compiled in), q and o in element pairs (4-byte fragment loads and pair stores), k and v rows in 16-byte
 * chunks. */
const char *trr_cl_attention_mma_refusal(const trr_call *call) {
    if (call->x.dtype != TRR_F16 && call->x.dtype != TRR_BF16) return "takes f16 or bf16 operands";
    if (call->attn.head_dim != 64 && call->attn.head_dim != 128) return "takes head dims 64 and 128";
    if (!multiple_of(&call->x, 2) || !multiple_of(&call->z, 2))
        return "needs q's and o's offsets and strides even (pairs of elements)";
    if (!multiple_of(&call->y, 8) || !multiple_of(&call->u, 8))
        return "needs k's and v's offsets and strides multiples of 8 elements (16-byte rows)";
    return NULL;
}

void trr_cl_attention_choose_config(trr_context *ctx, trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    const int64_t d = call->attn.head_dim;
    if (trr_cl_attention_decode_choose(ctx, call)) return; /* attention_decode.c */
    if (!c->variant) c->variant = dev->mma.ok && !trr_cl_attention_mma_refusal(call) ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT;
    if (c->variant == TRR_VARIANT_MMA) {
        const trr_config t = mma_heuristic(dev, call);
        /* a given block_m picks the warps: 32 rows each where q stays in registers beside them (D 64) from 128
         * rows on, else 16 (at most 8 warps); given warps keep the tile's rows per warp */
        if (c->block_m && !c->threads) {
            const int warps = c->block_m / (c->block_m >= 128 && d <= 64 ? 32 : 16);
            c->threads = 32 * (warps < 1 ? 1 : warps > 8 ? 8 : warps);
        }
        if (!c->block_m && c->threads) c->block_m = c->threads / 32 * (t.block_m / (t.threads / 32));
        if (!c->block_m) c->block_m = t.block_m;
        if (!c->threads) c->threads = t.threads;
        if (!c->stages) c->stages = t.stages;
        if (!c->block_n) {
            c->block_n = t.block_n;
            while (c->block_n > 16 && mma_local_bytes(c, d) > dev->local_memory) c->block_n /= 2;
        }
        return;
    }
    if (!c->threads) c->threads = dev->max_work_group >= 64 ? 64 : (int)dev->max_work_group;
    /* few query rows (decode) waste little of a 16-row block; more take 32 rows where a GPU has room */
    if (!c->block_m) c->block_m = call->attn.seq_q > 16 && dev->info.is_gpu ? 32 : 16;
    if (!c->block_n) {
        int bn = 64;
        while (bn > 1 && trr_attention_tile_bytes(c->block_m, bn, d) > dev->local_memory) bn /= 2;
        c->block_n = bn;
    }
    if (!c->stages) c->stages = 1;
}

trr_status trr_cl_attention_mma_usable(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    if (!dev->mma.ok)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: variant mma (tensor cores through inline PTX) is unavailable on %s: %s",
                         dev->info.name, dev->mma.reason);
    const char *why = trr_cl_attention_mma_refusal(call);
    if (why) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: attention variant mma %s", why);
    return TRR_OK;
}

static trr_status check_mma(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    TRR_TRY(trr_cl_attention_mma_usable(ctx, call));
    const int warps = c->threads / 32;
    if (c->threads % 32 || (warps != 1 && warps != 2 && warps != 4 && warps != 8) ||
        (c->block_m != 16 * warps && c->block_m != 32 * warps))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma threads %d must be 1, 2, 4 or 8 warps of 32 "
                         "and block_m %d 16 or 32 rows a warp",
                         c->threads, c->block_m);
    if (c->stages < 1 || c->stages > 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma stages %d must be 1 to 4", c->stages);
    if (c->block_n < 16 || c->block_n > 128 || c->block_n % 16)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma block_n %d must be a multiple of 16 up to "
                         "128",
                         c->block_n);
    const uint64_t local = mma_local_bytes(c, call->attn.head_dim);
    if (!mma_fits(dev, c, call->attn.head_dim))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: attention variant mma with block_m %d, block_n %d, stages %d at "
                         "D = %lld takes %llu bytes of local memory and %d work-items; the device has %llu and %zu",
                         c->block_m, c->block_n, c->stages, (long long)call->attn.head_dim, (unsigned long long)local,
                         c->threads, (unsigned long long)dev->local_memory, dev->max_work_group);
    return TRR_OK;
}

trr_status trr_cl_attention_check_config(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_MMA)
        return trr_attention_decode_mma_selected(c) ? trr_cl_attention_decode_mma_check(ctx, call)
                                                    : check_mma(ctx, call);
    TRR_TRY(trr_cl_check_common(ctx, call));
    if (trr_attention_decode_selected(c)) return trr_cl_attention_decode_check(ctx, call);
    if (c->block_m < 1 || c->block_m > 256)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: attention block_m %d must be 1 to 256", c->block_m);
    if (c->block_n < 1 || c->block_n > 1024)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: attention block_n %d must be 1 to 1024", c->block_n);
    const uint64_t local = trr_attention_tile_bytes(trr_attention_tile_rows(call), c->block_n, call->attn.head_dim);
    if (local > dev->local_memory)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: attention tiles of block_m %d, block_n %d at D = %lld take "
                         "%llu bytes of local memory; the device has %llu",
                         c->block_m, c->block_n, (long long)call->attn.head_dim, (unsigned long long)local,
                         (unsigned long long)dev->local_memory);
    if (trr_attention_tile_keys(call, dev->loop_budget) < 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: attention tiles of block_m %d, block_n %d at D = %lld do not "
                         "fit one key block in the device's loop budget",
                         c->block_m, c->block_n, (long long)call->attn.head_dim);
    return TRR_OK;
}

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

/* o's and lse's view arguments, shared by both kernels at arguments `at` onward */
static trr_status out_args(trr_context *ctx, cl_kernel k, cl_uint at, const trr_call *call) {
    const trr_operand *o = &call->z, *l = &call->w;
    const cl_long v[8] = {o->offset, o->batch_stride, o->stride1, o->stride0,
                          l->offset, l->batch_stride, l->stride1, l->stride0};
    for (int i = 0; i < 8; i++) ARG(at + (cl_uint)i, v[i]);
    return TRR_OK;
}

trr_status trr_cl_attention_combine(trr_context *ctx, const trr_call *call, const char *options, cl_mem part, cl_mem part_lse,
                          cl_mem lse, cl_int nsplit) {
    const trr_attention_shape *a = &call->attn;
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention.cl", options, "attention_combine", &k));
    cl_mem o = call->z.mem;
    ARG(0, part);
    ARG(1, part_lse);
    ARG(2, o);
    ARG(3, lse);
    TRR_TRY(out_args(ctx, k, 4, call));
    const cl_int hq = (cl_int)a->heads_q, sq = (cl_int)a->seq_q, d = (cl_int)a->head_dim;
    const cl_int rows = (cl_int)(a->batch * a->heads_q * a->seq_q), has_lse = a->has_lse;
    ARG(12, hq);
    ARG(13, sq);
    ARG(14, d);
    ARG(15, rows);
    ARG(16, nsplit);
    ARG(17, has_lse);
    const cl_int dt = trr_cl_dtype_code(call->z.dtype);
    ARG(18, dt);
    const size_t local = 64, global = ((size_t)rows * (size_t)d + local - 1) / local * local;
    return trr_cl_launch(ctx, k, 1, &global, &local);
}

/* The mma variant: one launch over (query blocks, query heads, batch), every key in one work-group. */
static trr_status run_mma(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    char options[192] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DHEAD_DIM=%d -DBLOCK_M=%d -DBLOCK_N=%d -DWARPS=%d -DSTAGES=%d -DX_DT=%d",
               (int)a->head_dim, cfg->block_m, cfg->block_n, cfg->threads / 32, cfg->stages,
               trr_cl_dtype_code(call->x.dtype));
    trr_cl_opt(options, sizeof options, " -DADDR_MODE=%d -DCP_ASYNC=%d", dev->mma.addr_mode, dev->mma.cp_async);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention_mma.cl", options, "attention_mma", &k));
    /* without lse the kernel is handed o's buffer for it, and never writes it */
    const cl_mem mems[5] = {call->x.mem, call->y.mem, call->u.mem, call->z.mem, a->has_lse ? call->w.mem : call->z.mem};
    for (int i = 0; i < 5; i++) ARG(i, mems[i]);
    const trr_operand *views[5] = {&call->x, &call->y, &call->u, &call->z, &call->w};
    for (int i = 0; i < 5; i++) {
        const cl_long v[4] = {views[i]->offset, views[i]->batch_stride, views[i]->stride1, views[i]->stride0};
        for (int j = 0; j < 4; j++) ARG(5 + 4 * i + j, v[j]);
    }
    const cl_int ints[5] = {(cl_int)(a->heads_q / a->heads_kv), (cl_int)a->seq_q, (cl_int)a->seq_kv, a->causal,
                            a->has_lse};
    for (int i = 0; i < 5; i++) ARG(25 + i, ints[i]);
    const cl_float qscale = (cl_float)((double)a->scale * 1.44269504088896340736);
    ARG(30, qscale);
    const size_t nqb = (size_t)((a->seq_q + cfg->block_m - 1) / cfg->block_m);
    const size_t global[3] = {nqb * (size_t)cfg->threads, (size_t)a->heads_q, (size_t)a->batch};
    const size_t local[3] = {(size_t)cfg->threads, 1, 1};
    return trr_cl_launch(ctx, k, 3, global, local);
}

trr_status trr_cl_run_attention(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    if (cfg->variant == TRR_VARIANT_MMA)
        return trr_attention_decode_mma_selected(cfg) ? trr_cl_attention_decode_mma_run(ctx, call)
                                                      : run_mma(ctx, call);
    if (trr_attention_decode_selected(cfg)) return trr_cl_attention_decode_run(ctx, call);
    char options[192] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DBMMAX=%d -DT=%d -DDMAX=%d", cfg->block_m, cfg->threads, DMAX);
    const cl_int bm = (cl_int)trr_attention_tile_rows(call);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention.cl", options, "attention", &k));

    const int64_t kps = trr_attention_tile_keys(call, dev->loop_budget);
    const int64_t nsplit64 = kps >= a->seq_kv ? 1 : (a->seq_kv + kps - 1) / kps;
    const cl_int nsplit = (cl_int)nsplit64, kpsplit = (cl_int)(kps >= a->seq_kv ? a->seq_kv : kps);
    const int64_t rows = a->batch * a->heads_q * a->seq_q;
    cl_mem part = call->z.mem, part_lse = call->z.mem; /* not read unless the keys are split */
    if (nsplit > 1) {
        TRR_TRY(trr_cl_scratch_get(ctx, &dev->partials, (size_t)(nsplit64 * rows * a->head_dim) * 4,
                                   "attention's splits", &part));
        TRR_TRY(trr_cl_scratch_get(ctx, &dev->partial_sums, (size_t)(nsplit64 * rows) * 4, "attention's split sums",
                                   &part_lse));
    }
    /* without lse the kernels are handed o's buffer for it, and never write it */
    cl_mem q = call->x.mem, kk = call->y.mem, v = call->u.mem, o = call->z.mem,
           lse = a->has_lse ? call->w.mem : call->z.mem;
    const cl_long views[12] = {call->x.offset, call->x.batch_stride, call->x.stride1, call->x.stride0,
                               call->y.offset, call->y.batch_stride, call->y.stride1, call->y.stride0,
                               call->u.offset, call->u.batch_stride, call->u.stride1, call->u.stride0};
    const cl_int hq = (cl_int)a->heads_q, group = (cl_int)(a->heads_q / a->heads_kv), sq = (cl_int)a->seq_q;
    const cl_int skv = (cl_int)a->seq_kv, d = (cl_int)a->head_dim, bn = cfg->block_n, causal = a->causal;
    const cl_int has_lse = a->has_lse, mode = nsplit > 1, dt = trr_cl_dtype_code(call->x.dtype);
    const cl_float qscale = (cl_float)((double)a->scale * 1.44269504088896340736);
    trr_status st = trr_cl_set_arg(ctx, k, 0, sizeof q, &q);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 1, sizeof kk, &kk);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 2, sizeof v, &v);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 3, sizeof o, &o);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 4, sizeof lse, &lse);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 5, sizeof part, &part);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 6, sizeof part_lse, &part_lse);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 7, (size_t)trr_attention_tile_bytes(bm, bn, d), NULL);
    for (int i = 0; i < 12 && st == TRR_OK; i++)
        st = trr_cl_set_arg(ctx, k, (cl_uint)(8 + i), sizeof views[i], &views[i]);
    if (st == TRR_OK) st = out_args(ctx, k, 20, call);
    const cl_int ints[10] = {hq, group, sq, skv, d, bn, causal, has_lse, nsplit, kpsplit};
    for (int i = 0; i < 10 && st == TRR_OK; i++)
        st = trr_cl_set_arg(ctx, k, (cl_uint)(28 + i), sizeof ints[i], &ints[i]);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 38, sizeof mode, &mode);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 39, sizeof qscale, &qscale);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 40, sizeof dt, &dt);
    if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 41, sizeof bm, &bm);
    const size_t nqb = (size_t)((a->seq_q + bm - 1) / bm);
    const size_t global[3] = {nqb * (size_t)cfg->threads, (size_t)a->heads_q, (size_t)a->batch * (size_t)nsplit};
    const size_t local[3] = {(size_t)cfg->threads, 1, 1};
    if (st == TRR_OK) st = trr_cl_launch(ctx, k, 3, global, local);
    if (st == TRR_OK && nsplit > 1) st = trr_cl_attention_combine(ctx, call, options, part, part_lse, lse, nsplit);
    return st;
}
