/* attention (docs/ops.md, attention; kernels/cuda/attention.cu): the kernel families, the heuristic's tiles, the
 * limits a config must respect, the split over the keys and its scratch memory, and the launches.
 *
 * Families (the config's variant):
 *   mma    f16/bf16 on mma.sync (compute capability 8.0 and up): block_m rows in blocks of threads / 32 warps,
 *          16 or 32 rows a warp; block_n keys a step (a multiple of 16); stages 1 (a K and a V buffer, loaded
 *          alternately) or 2-4 (a ring of K, V stages).
 *   simt   any dtype on the CUDA cores in f32 (the precise path for f32): block_m 32, 128 threads, block_n 16 or 32.
 *   wgmma  f16/bf16 on Hopper's warpgroup MMA (sm_90a; attention.cu, KIND 3); never chosen by the heuristic.
 * split_k: how many splits of the keys (flash-decoding): each split's blocks write partial results to the
 * context's scratch, a second kernel combines them. The heuristic splits when the blocks of a call fill less than
 * one wave of the device.
 * The head dimension D is compiled in as DP, D rounded up to a bucket (a multiple of 16); columns past D are
 * zeros, so any D in 1..256 runs.
 */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

/* The kernels' argument (attention.cu's attn_args, field for field). */
typedef struct attn_args {
    CUdeviceptr q, k, v, o, lse, part_o, part_lse;
    long long q_b, q_h, q_s, k_b, k_h, k_s, v_b, v_h, v_s, o_b, o_h, o_s, l_b, l_h, l_s;
    int batch, hq, hkv, group, sq, skv, d, rows;
    int causal, has_lse, nsplit, split_blocks, vec;
    float scale_log2;
} attn_args;
_Static_assert(sizeof(attn_args) == 232, "attn_args must match attention.cu's layout");

enum { KIND_MMA = 0, KIND_SIMT = 1, KIND_COMBINE = 2, KIND_WGMMA = 3 };
/* P . V with the weights as two 16-bit parts (attention.cu's PSPLIT): one 16-bit rounding of the weights puts
 * errors of 2^-12 (f16) and 2^-9 (bf16) of each weight into o, which elements of o that cancel to near zero
 * cannot absorb within docs/ops.md's element bound for half outputs; two parts keep ~22 and ~16 bits, for half
 * again the P . V products. */
#define PSPLIT 1
#define SIMT_BM 32
#define SIMT_THREADS 128
#define COMBINE_THREADS 128 /* a warp per row */

/* The head-dimension buckets the kernels are compiled for. */
static const int dp_buckets[] = {16, 32, 64, 80, 96, 128, 160, 192, 256};
#define N_BUCKETS ((int)(sizeof dp_buckets / sizeof dp_buckets[0]))

int trr_cuda_attention_dp(int64_t d) {
    for (int i = 0; i < N_BUCKETS; i++)
        if (d <= dp_buckets[i]) return dp_buckets[i];
    return dp_buckets[N_BUCKETS - 1];
}

/* The heuristic's mma tiles per bucket: one for many rows (prefill), one for a kv head's rows that fit 16 (decode).
 * Every tile fits the 99 KB of shared memory a block has on compute capability 8.6/8.9, so one table serves every
 * sm_80+ device. Many rows: 128 rows a block, 4 warps of 32 rows (half the shared-memory reads of K and V per
 * product of 16-row warps, which are what limits mma.sync at these sizes) up to DP 128, where a K and a V buffer
 * (stages 1) keep it within 99 KB; 8 warps of 16 rows past it, where 32 rows' accumulators do not fit the
 * registers. Decode: a warp a block, so that a split over the keys spreads over every SM; two stages in flight. */
typedef struct attn_tiles {
    int dp;
    trr_config prefill, decode;
} attn_tiles;

#define MMA_TILE(bm, bn, warps, st)                                                                              \
    { .block_m = bm, .block_n = bn, .threads = 32 * (warps), .stages = st, .split_k = 1, .variant = TRR_VARIANT_MMA }
static const attn_tiles mma_tiles[N_BUCKETS] = {
    {16, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 64, 1, 2)},  {32, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 64, 1, 2)},
    {64, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 64, 1, 2)},  {80, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 64, 1, 2)},
    {96, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 64, 1, 2)},  {128, MMA_TILE(128, 64, 4, 1), MMA_TILE(16, 64, 1, 2)},
    {160, MMA_TILE(128, 64, 8, 1), MMA_TILE(16, 64, 1, 2)}, {192, MMA_TILE(128, 32, 8, 1), MMA_TILE(16, 32, 1, 2)},
    {256, MMA_TILE(128, 32, 8, 1), MMA_TILE(16, 32, 1, 2)},
};

static const attn_tiles *tiles_for(int dp) {
    for (int i = 0; i < N_BUCKETS; i++)
        if (mma_tiles[i].dp == dp) return &mma_tiles[i];
    return &mma_tiles[N_BUCKETS - 1];
}

/* The simt kernel's keys a step: 32, or 16 where the f32 tiles of DP > 128 would pass 64 KB. */
static int simt_bn(int dp) { return dp <= 128 ? 32 : 16; }

static int esize(trr_dtype d) { return d == TRR_F32 ? 4 : 2; }

size_t trr_cuda_attention_smem(int variant, int dp, const trr_config *c) {
    if (variant == TRR_VARIANT_SIMT) {
        const size_t bn = (size_t)c->block_n;
        return 4u * ((size_t)SIMT_BM * (dp + 1) + bn * (dp + 1) + bn * dp + (size_t)SIMT_BM * (bn + 1));
    }
    const size_t row = (size_t)dp * 2 + 16;
    const size_t kv_tiles = c->stages <= 1 ? 2 : 2 * (size_t)c->stages;
    return row * ((size_t)c->block_m + kv_tiles * (size_t)c->block_n);
}

void trr_cuda_variant_attention(trr_cuda_variant *v, int variant, trr_dtype dt, int dp, const trr_config *c) {
    memset(v, 0, sizeof *v);
    v->file = "attention.cu";
    if (variant == TRR_VARIANT_SIMT)
        trr_cuda_define(v, "-DKIND=%d -DDT=%d -DDP=%d -DBN=%d", KIND_SIMT, (int)dt, dp, c->block_n);
    else
        trr_cuda_define(v, "-DKIND=%d -DDT=%d -DDP=%d -DBM=%d -DBN=%d -DWARPS=%d -DSTAGES=%d -DPSPLIT=%d", KIND_MMA,
                        (int)dt, dp, c->block_m, c->block_n, c->threads / 32, c->stages, PSPLIT);
}

static void variant_combine(trr_cuda_variant *v, trr_dtype dt) {
    memset(v, 0, sizeof *v);
    v->file = "attention.cu";
    trr_cuda_define(v, "-DKIND=%d -DDT=%d", KIND_COMBINE, (int)dt);
}

void trr_cuda_attention_variants(trr_cuda_variant_fn fn, void *user) {
    trr_cuda_variant v;
    const trr_dtype halves[2] = {TRR_F16, TRR_BF16};
    const trr_dtype all[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int i = 0; i < N_BUCKETS; i++) {
        for (int h = 0; h < 2; h++) {
            trr_cuda_variant_attention(&v, TRR_VARIANT_MMA, halves[h], mma_tiles[i].dp, &mma_tiles[i].prefill);
            fn(&v, user);
            trr_cuda_variant_attention(&v, TRR_VARIANT_MMA, halves[h], mma_tiles[i].dp, &mma_tiles[i].decode);
            fn(&v, user);
        }
        /* the precise path for f32, and the fallback for halves below compute capability 8.0 */
        trr_config s = {.block_m = SIMT_BM, .block_n = simt_bn(mma_tiles[i].dp), .threads = SIMT_THREADS, .stages = 1};
        for (int d = 0; d < 3; d++) {
            trr_cuda_variant_attention(&v, TRR_VARIANT_SIMT, all[d], mma_tiles[i].dp, &s);
            fn(&v, user);
        }
    }
    for (int d = 0; d < 3; d++) {
        variant_combine(&v, all[d]);
        fn(&v, user);
    }
}

/* ---- the call's geometry ---- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A kv head's rows: its G query heads times Sq (attention.cu packs them into one block's rows). */
static int64_t kv_rows(const trr_call *call) {
    return call->attn.seq_q * (call->attn.heads_q / call->attn.heads_kv);
}

/* Blocks of one split: query blocks x kv heads x batch. */
static int64_t base_blocks(const trr_call *call, int bm) {
    return ceil_div(kv_rows(call), bm) * call->attn.heads_kv * call->attn.batch;
}

/* How many blocks of this tile an SM holds at once, from its shared memory, threads and (at most 255 a thread)
 * registers. */
static int blocks_per_sm(const trr_cuda_dev *dev, size_t smem, int threads) {
    const size_t sm_smem = (size_t)(dev ? dev->smem_optin : 227 * 1024) + 1024;
    int by_smem = (int)(sm_smem / (smem + 1024));
    int by_regs = 65536 / (threads * 256);
    int by_threads = 2048 / threads;
    int n = by_smem < by_regs ? by_smem : by_regs;
    n = n < by_threads ? n : by_threads;
    return n > 0 ? n : 1;
}

/* The splits of the keys for a call whose blocks fill less than most of a wave: the fewest that reach within 85%
 * of the best wave efficiency (blocks / (waves * slots)) over 1..64 splits, each keeping at least two key blocks
 * (FlashAttention-2's rule for its split-KV kernel). */
static int choose_splits(const trr_cuda_dev *dev, const trr_call *call, int variant, int dp, const trr_config *c) {
    const int64_t blocks = base_blocks(call, c->block_m);
    const int64_t kblocks = ceil_div(call->attn.seq_kv, c->block_n);
    const int64_t slots = (int64_t)(dev ? dev->sm_count : 132) *
                          blocks_per_sm(dev, trr_cuda_attention_smem(variant, dp, c), c->threads);
    if (blocks * 10 >= slots * 8 || kblocks < 4) return 1;
    int64_t max_splits = kblocks / 2 < 64 ? kblocks / 2 : 64;
    double eff[65], best = 0.0;
    for (int64_t s = 1; s <= max_splits; s++) {
        const double waves = (double)(blocks * s) / (double)slots;
        const double whole = waves > (double)(int64_t)waves ? (double)(int64_t)waves + 1.0 : waves;
        eff[s] = waves / whole;
        if (eff[s] > best) best = eff[s];
    }
    for (int64_t s = 1; s <= max_splits; s++)
        if (eff[s] >= 0.85 * best) return (int)s;
    return 1;
}

/* ---- config: heuristic and limits ---- */

static int mma_device(const trr_cuda_dev *dev) { return !dev || dev->cc_major >= 8; }

void trr_cuda_choose_attention(const trr_cuda_dev *dev, trr_call *call) {
    trr_config *c = &call->config;
    const int dp = trr_cuda_attention_dp(call->attn.head_dim);
    const int half = call->x.dtype == TRR_F16 || call->x.dtype == TRR_BF16;
    if (!c->variant) c->variant = half && mma_device(dev) ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT;
    trr_config h;
    memset(&h, 0, sizeof h);
    if (c->variant == TRR_VARIANT_SIMT) {
        h = (trr_config){.block_m = SIMT_BM, .block_n = simt_bn(dp), .threads = SIMT_THREADS, .stages = 1};
    } else {
        /* rows that fit one 16-row warp: the decode tile (a kv head's group of heads, Sq small) */
        const attn_tiles *t = tiles_for(dp);
        h = kv_rows(call) <= 16 ? t->decode : t->prefill;
        /* a given block_m picks the warps: of 16 rows each up to 4, then of 32 rows (at most 8 warps) */
        if (c->block_m && !c->threads) {
            const int warps = c->block_m <= 64 ? c->block_m / 16 : c->block_m / 32;
            h.threads = 32 * (warps < 1 ? 1 : warps > 8 ? 8 : warps);
        }
    }
    h.variant = c->variant;
    if (!c->block_m) c->block_m = h.block_m;
    if (!c->block_n) c->block_n = h.block_n;
    if (!c->threads) c->threads = h.threads;
    if (!c->stages) c->stages = h.stages;
    if (!c->split_k) c->split_k = choose_splits(dev, call, c->variant, dp, c);
}

trr_status trr_cuda_check_attention(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    const trr_config *c = &call->config;
    const int dp = trr_cuda_attention_dp(call->attn.head_dim);
    const int half = call->x.dtype == TRR_F16 || call->x.dtype == TRR_BF16;
    const size_t limit = dev ? (size_t)dev->smem_optin : 227u * 1024u;
    if (c->split_k < 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: split_k (splits of the keys) must be >= 1");
    if (c->variant == TRR_VARIANT_SIMT) {
        if (c->block_m != SIMT_BM || c->threads != SIMT_THREADS || (c->block_n != 16 && c->block_n != 32) ||
            c->stages != 1)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (simt): block_m 32, 128 threads, block_n 16 or 32, stages 1 (got %d, %d, "
                             "%d, %d)",
                             c->block_m, c->threads, c->block_n, c->stages);
    } else if (c->variant == TRR_VARIANT_MMA) {
        if (!half)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): f16 or bf16 only (f32 is the simt variant's: no TF32, docs/ops.md)");
        if (!mma_device(dev))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (mma): needs compute capability 8.0 or later");
        const int warps = c->threads / 32;
        if (c->threads % 32 || warps < 1 || warps > 8 || c->block_m % (16 * warps) ||
            (c->block_m / warps != 16 && c->block_m / warps != 32))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): threads / 32 warps (1 to 8) of 16 or 32 rows each must make "
                             "block_m (got block_m %d, %d threads)",
                             c->block_m, c->threads);
        if (c->block_n % 16 || c->block_n < 16 || c->block_n > 128)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): block_n must be a multiple of 16 up to 128 (got %d)", c->block_n);
        if (c->stages < 1 || c->stages > 4)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (mma): stages 1 to 4 (got %d)", c->stages);
    } else if (c->variant == TRR_VARIANT_WGMMA) {
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (wgmma): not built yet");
    } else {
        const char *vname = "?";
        trr_variant_name((trr_variant)c->variant, &vname);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: variant %s; its kernels are mma, simt and wgmma",
                         vname);
    }
    const size_t smem = trr_cuda_attention_smem(c->variant, dp, c);
    if (smem > limit)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda attention: the config needs %zu bytes of shared memory at head dimension %d, the device "
                         "allows %zu",
                         smem, dp, limit);
    const int64_t grid = base_blocks(call, c->block_m) * c->split_k;
    if (grid > 0x7fffffff)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: %lld blocks exceed the grid", (long long)grid);
    return TRR_OK;
}

/* ---- the split's scratch ---- */

/* The context's split scratch, grown to at least bytes: the memory of the previous size may still be read by
 * kernels on the stream or queued, so they finish first. */
static trr_status scratch(trr_context *ctx, size_t bytes, CUdeviceptr *out) {
    trr_cuda_dev *dev = ctx->dev;
    if (dev->attn_scratch && dev->attn_scratch_bytes >= bytes) {
        *out = dev->attn_scratch;
        return TRR_OK;
    }
    if (dev->attn_scratch) {
        TRR_TRY(trr_cuda_batch_flush(ctx));
        TRR_CU_CHECK(ctx, trr_cuda_wait_stream(dev), "cuStreamSynchronize");
        trr_cuda_waited(dev);
        trr_cu.MemFree(dev->attn_scratch);
        dev->attn_scratch = 0;
        dev->attn_scratch_bytes = 0;
    }
    /* room to grow: the next call of a similar size finds it large enough */
    size_t want = bytes + bytes / 4;
    want = (want + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
    CUdeviceptr p = 0;
    TRR_CU_CHECK(ctx, trr_cu.MemAlloc(&p, want), "cuMemAlloc (attention's split scratch)");
    dev->attn_scratch = p;
    dev->attn_scratch_bytes = want;
    *out = p;
    return TRR_OK;
}

/* ---- launch ---- */

/* A stride that is followed (its dimension holds more than one element) keeps 16-byte rows. */
static int stride_ok(int64_t n, int64_t stride, int es) { return n <= 1 || (stride * es) % 16 == 0; }

static int operand_vec(const trr_operand *op, int64_t b, int64_t h, int64_t s) {
    const int es = esize(op->dtype);
    return trr_cuda_operand_ptr(op) % 16 == 0 && stride_ok(b, op->batch_stride, es) && stride_ok(h, op->stride1, es) &&
           stride_ok(s, op->stride0, es);
}

/* The launch-path cache key: attention's high byte, then the kernel and its compile-time sizes. */
static uint64_t attn_key(int kind, trr_dtype dt, int dp, const trr_config *c) {
    return ((uint64_t)0x50 << 56) | ((uint64_t)((kind << 4) | (int)dt) << 48) | ((uint64_t)(dp / 16) << 40) |
           ((uint64_t)(c->block_m & 0xff) << 32) | ((uint64_t)(c->block_n & 0xff) << 24) |
           ((uint64_t)(c->threads / 32 & 0xff) << 16) | ((uint64_t)(c->stages & 0xff) << 8);
}

static trr_status function(trr_context *ctx, int kind, trr_dtype dt, int dp, const trr_config *c, CUfunction *out) {
    trr_cuda_dev *dev = ctx->dev;
    trr_config zero;
    memset(&zero, 0, sizeof zero);
    const uint64_t key = attn_key(kind, dt, dp, kind == KIND_COMBINE ? &zero : c);
    if ((*out = trr_cuda_fast_get(dev, key)) != NULL) return TRR_OK;
    trr_cuda_variant v;
    const char *name;
    if (kind == KIND_COMBINE) {
        variant_combine(&v, dt);
        name = "attention_combine";
    } else {
        trr_cuda_variant_attention(&v, c->variant, dt, dp, c);
        name = kind == KIND_SIMT ? "attention_simt" : "attention_mma";
    }
    TRR_TRY(trr_cuda_get_function(ctx, &v, name, out));
    trr_cuda_fast_put(dev, key, *out);
    return TRR_OK;
}

trr_status trr_cuda_run_attention(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    const trr_attention_shape *s = &call->attn;
    const trr_dtype dt = call->x.dtype;
    const int dp = trr_cuda_attention_dp(s->head_dim);
    const int kind = c->variant == TRR_VARIANT_SIMT ? KIND_SIMT : KIND_MMA;

    attn_args a;
    memset(&a, 0, sizeof a);
    a.q = trr_cuda_operand_ptr(&call->x);
    a.k = trr_cuda_operand_ptr(&call->y);
    a.v = trr_cuda_operand_ptr(&call->u);
    a.o = trr_cuda_operand_ptr(&call->z);
    a.lse = s->has_lse ? trr_cuda_operand_ptr(&call->w) : 0;
    a.q_b = call->x.batch_stride, a.q_h = call->x.stride1, a.q_s = call->x.stride0;
    a.k_b = call->y.batch_stride, a.k_h = call->y.stride1, a.k_s = call->y.stride0;
    a.v_b = call->u.batch_stride, a.v_h = call->u.stride1, a.v_s = call->u.stride0;
    a.o_b = call->z.batch_stride, a.o_h = call->z.stride1, a.o_s = call->z.stride0;
    if (s->has_lse) a.l_b = call->w.batch_stride, a.l_h = call->w.stride1, a.l_s = call->w.stride0;
    a.batch = (int)s->batch, a.hq = (int)s->heads_q, a.hkv = (int)s->heads_kv;
    a.group = (int)(s->heads_q / s->heads_kv);
    a.sq = (int)s->seq_q, a.skv = (int)s->seq_kv, a.d = (int)s->head_dim;
    a.rows = (int)kv_rows(call);
    a.causal = s->causal, a.has_lse = s->has_lse;
    a.scale_log2 = (float)((double)s->scale * 1.4426950408889634);
    a.vec = operand_vec(&call->x, s->batch, s->heads_q, s->seq_q) && operand_vec(&call->y, s->batch, s->heads_kv, s->seq_kv) &&
            operand_vec(&call->u, s->batch, s->heads_kv, s->seq_kv);

    /* whole key blocks per split; no split is left without keys */
    const int64_t kblocks = ceil_div(s->seq_kv, c->block_n);
    int64_t per = ceil_div(kblocks, c->split_k);
    const int64_t nsplit = ceil_div(kblocks, per);
    a.nsplit = (int)nsplit;
    a.split_blocks = (int)per;
    const int64_t rows_total = s->batch * s->heads_q * s->seq_q;
    if (nsplit > 1) {
        const size_t bytes = (size_t)nsplit * (size_t)rows_total * ((size_t)s->head_dim + 1) * sizeof(float);
        CUdeviceptr sc = 0;
        TRR_TRY(scratch(ctx, bytes, &sc));
        a.part_lse = sc;
        a.part_o = sc + (CUdeviceptr)nsplit * (CUdeviceptr)rows_total * sizeof(float);
    }

    CUfunction fn;
    TRR_TRY(function(ctx, kind, dt, dp, c, &fn));
    const int64_t grid = base_blocks(call, kind == KIND_SIMT ? SIMT_BM : c->block_m) * nsplit;
    if (grid > 0x7fffffff)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: %lld blocks exceed the grid", (long long)grid);
    void *args[] = {&a};
    TRR_TRY(trr_cuda_launch_3d(ctx, fn, (unsigned)grid, 1, 1, (unsigned)c->threads,
                               (unsigned)trr_cuda_attention_smem(c->variant, dp, c), args));
    if (nsplit == 1) return TRR_OK;
    CUfunction comb;
    TRR_TRY(function(ctx, KIND_COMBINE, dt, 0, c, &comb));
    const int64_t per_block = COMBINE_THREADS / 32;
    return trr_cuda_launch_3d(ctx, comb, (unsigned)ceil_div(rows_total, per_block), 1, 1, COMBINE_THREADS, 0, args);
}
