/* attention (docs/ops.md, attention; kernels/cuda/attention.cu): the kernel families, the heuristic's tiles, the
 * limits a config must respect, the split over the keys and its scratch memory, and the launches.
 *
 * Families (the config's variant):
 *   mma    f16/bf16 on mma.sync (compute capability 8.0 and up): block_m rows in blocks of threads / 32 warps,
 *          16 or 32 rows a warp; block_n keys a step (a multiple of 16); stages 1 (a K and a V buffer, loaded
 *          alternately) or 2-4 (a ring of K, V stages). block_m 16 over 2-8 warps is the decode form: every warp
 *          holds the 16 rows and walks its own share of the key blocks through its own ring of stages (2-4), and
 *          the block joins the warps' partial results in shared memory; it keeps many key blocks in flight per
 *          SM, which is what decode's speed is made of (a kv head's few rows do little arithmetic per byte).
 *   simt   any dtype on the CUDA cores in f32 (the precise path for f32): block_m 32, 128 threads, block_n 16 or 32.
 *   wgmma  f16/bf16 on Hopper's warpgroup MMA with TMA loads (sm_90a; attention.cu, KIND 3): block_m 128, 384
 *          threads (a producer and two consumer warpgroups that take turns on the tensor cores), block_n 64 or
 *          128, stages 2-4 (as shared memory allows: 3 at D 128 with block_n 128); D up to 128, operands
 *          with 16-byte rows. The heuristic's choice on sm_90a wherever it runs the call and the query rows of a
 *          kv head fill its 128-row block (prefill, where it is well ahead of mma: docs/performance.md); decode
 *          and the calls it cannot take (f32, D past 128, unaligned or overlapping rows) keep mma.
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

/* The heuristic's mma tiles per bucket: one for many rows (prefill), one for a kv head's rows that fit 16 (decode)
 * and the decode tile's stand-in where the device's shared memory is smaller than it needs. The prefill and
 * small-decode tiles fit the 99 KB of shared memory a block has on compute capability 8.6/8.9, and none spills
 * registers (ptxas for sm_80 and sm_90a). Many rows: 128 rows a block; 4 warps of
 * 32 rows up to DP 96 (K and V fragments read from shared memory once for two 16-row tiles, which halves those
 * reads, the limit of mma.sync at these sizes), keys 32 at a time at DP 96; past it 8 warps of 16 rows, where 32
 * rows' accumulators and the two-part weights do not fit the registers, with a K and a V buffer (stages 1) to stay
 * within 99 KB. Decode: 4 warps over the keys, 16 keys a step, stages 4 up to DP 80, 3 at DP 96 and 128, 2
 * past it, so that up to DP 192 two blocks share an SM (227 KB) and it keeps 8 warps with 1-3 blocks of K and V
 * each in flight; the split over the keys still spreads calls of few kv heads over every SM. Where a decode tile
 * passes the device's shared memory (DP 128, 192, 256 past 99 KB), the small decode tile: a warp a block, two
 * stages. */
typedef struct attn_tiles {
    int dp;
    trr_config prefill, decode, decode_small;
} attn_tiles;

#define MMA_TILE(bm, bn, warps, st)                                                                              \
    { .block_m = bm, .block_n = bn, .threads = 32 * (warps), .stages = st, .split_k = 1, .variant = TRR_VARIANT_MMA }
static const attn_tiles mma_tiles[N_BUCKETS] = {
    {16, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 16, 4, 4), MMA_TILE(16, 64, 1, 2)},
    {32, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 16, 4, 4), MMA_TILE(16, 64, 1, 2)},
    {64, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 16, 4, 4), MMA_TILE(16, 64, 1, 2)},
    {80, MMA_TILE(128, 64, 4, 2), MMA_TILE(16, 16, 4, 4), MMA_TILE(16, 64, 1, 2)},
    {96, MMA_TILE(128, 32, 4, 2), MMA_TILE(16, 16, 4, 3), MMA_TILE(16, 64, 1, 2)},
    {128, MMA_TILE(128, 64, 8, 1), MMA_TILE(16, 16, 4, 3), MMA_TILE(16, 64, 1, 2)},
    {160, MMA_TILE(128, 64, 8, 1), MMA_TILE(16, 16, 4, 2), MMA_TILE(16, 64, 1, 2)},
    {192, MMA_TILE(128, 32, 8, 1), MMA_TILE(16, 16, 4, 2), MMA_TILE(16, 32, 1, 2)},
    {256, MMA_TILE(128, 32, 8, 1), MMA_TILE(16, 16, 4, 2), MMA_TILE(16, 32, 1, 2)},
};

/* The decode form of mma: block_m 16 over several warps, each walking its own key blocks (attention.cu's
 * KEY_WARPS). */
static int key_warps(const trr_config *c) {
    return c->variant == TRR_VARIANT_MMA && c->block_m == 16 && c->threads > 32 ? c->threads / 32 : 1;
}

static const attn_tiles *tiles_for(int dp) {
    for (int i = 0; i < N_BUCKETS; i++)
        if (mma_tiles[i].dp == dp) return &mma_tiles[i];
    return &mma_tiles[N_BUCKETS - 1];
}

/* The simt kernel's keys a step: 32, or 16 where the f32 tiles of DP > 128 would pass 64 KB. */
static int simt_bn(int dp) { return dp <= 128 ? 32 : 16; }

static int esize(trr_dtype d) { return d == TRR_F32 ? 4 : 2; }

/* The wgmma kernel's head dimension: 64 or 128 (0: D past 128, which it does not take). */
static int wgmma_dp(int64_t d) { return d <= 64 ? 64 : d <= 128 ? 128 : 0; }
#define WGMMA_BM 128
#define WGMMA_THREADS 384

size_t trr_cuda_attention_smem(int variant, int dp, const trr_config *c) {
    if (variant == TRR_VARIANT_SIMT) {
        const size_t bn = (size_t)c->block_n;
        return 4u * ((size_t)SIMT_BM * (dp + 1) + bn * (dp + 1) + bn * dp + (size_t)SIMT_BM * (bn + 1));
    }
    if (variant == TRR_VARIANT_WGMMA) /* Q, the K and V stages (all 128-byte swizzled boxes), 1 KB to align */
        return (size_t)dp * 2 * ((size_t)WGMMA_BM + 2 * (size_t)c->stages * (size_t)c->block_n) + 1024;
    const size_t row = (size_t)dp * 2 + 16;
    const size_t kv_tiles = c->stages <= 1 ? 2 : 2 * (size_t)c->stages;
    /* key warps: a ring of stages each */
    const size_t rings = c->block_m == 16 && c->threads > 32 ? (size_t)c->threads / 32 : 1;
    return row * ((size_t)c->block_m + rings * kv_tiles * (size_t)c->block_n);
}

void trr_cuda_variant_attention(trr_cuda_variant *v, int variant, trr_dtype dt, int dp, const trr_config *c) {
    memset(v, 0, sizeof *v);
    v->file = "attention.cu";
    if (variant == TRR_VARIANT_SIMT) {
        trr_cuda_define(v, "-DKIND=%d -DDT=%d -DDP=%d -DBN=%d", KIND_SIMT, (int)dt, dp, c->block_n);
    } else if (variant == TRR_VARIANT_WGMMA) {
        v->sm90a_only = 1;
        trr_cuda_define(v, "-DKIND=%d -DDT=%d -DDP=%d -DBN=%d -DSTAGES=%d -DPSPLIT=%d", KIND_WGMMA, (int)dt, dp,
                        c->block_n, c->stages, PSPLIT);
    } else
        trr_cuda_define(v, "-DKIND=%d -DDT=%d -DDP=%d -DBM=%d -DBN=%d -DWARPS=%d -DSTAGES=%d -DPSPLIT=%d", KIND_MMA,
                        (int)dt, dp, c->block_m, c->block_n, c->threads / 32, c->stages, PSPLIT);
}

static void variant_combine(trr_cuda_variant *v, trr_dtype dt) {
    memset(v, 0, sizeof *v);
    v->file = "attention.cu";
    trr_cuda_define(v, "-DKIND=%d -DDT=%d", KIND_COMBINE, (int)dt);
}

/* The wgmma kernel's tile when asked for: 128 keys a step; 4 stages at DP 64 (145 KB), 3 at DP 128 (225 KB of a
 * Hopper block's 227: Q and three K, V stages of 64 KB). */
static trr_config wgmma_tile(int dp) {
    return (trr_config){.block_m = WGMMA_BM, .block_n = 128, .threads = WGMMA_THREADS, .stages = dp <= 64 ? 4 : 3,
                        .split_k = 1, .variant = TRR_VARIANT_WGMMA};
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
            trr_cuda_variant_attention(&v, TRR_VARIANT_MMA, halves[h], mma_tiles[i].dp, &mma_tiles[i].decode_small);
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
    /* Hopper (sm_90a only): the wgmma kernel's tile at both of its head dimensions */
    for (int dp = 64; dp <= 128; dp += 64) {
        const trr_config c = wgmma_tile(dp);
        for (int h = 0; h < 2; h++) {
            trr_cuda_variant_attention(&v, TRR_VARIANT_WGMMA, halves[h], dp, &c);
            fn(&v, user);
        }
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
 * (FlashAttention-2's rule for its split-KV kernel) for each of its key warps. */
static int choose_splits(const trr_cuda_dev *dev, const trr_call *call, int variant, int dp, const trr_config *c) {
    const int64_t blocks = base_blocks(call, c->block_m);
    const int64_t kblocks = ceil_div(call->attn.seq_kv, (int64_t)c->block_n * key_warps(c));
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

/* The shared memory a block may have (the H200's without a device). */
static size_t smem_limit(const trr_cuda_dev *dev) { return dev ? (size_t)dev->smem_optin : 227u * 1024u; }

/* A stride that is followed (its dimension holds more than one element) keeps 16-byte rows. */
static int stride_ok(int64_t n, int64_t stride, int es) { return n <= 1 || (stride * es) % 16 == 0; }

static int operand_vec(const trr_operand *op, int64_t b, int64_t h, int64_t s) {
    const int es = esize(op->dtype);
    return trr_cuda_operand_ptr(op) % 16 == 0 && stride_ok(b, op->batch_stride, es) && stride_ok(h, op->stride1, es) &&
           stride_ok(s, op->stride0, es);
}

/* A K or V view as the wgmma kernel's rank-4 tensor map sees it: d, then the key, kv head and batch dimensions
 * in order of their strides (each one then steps past everything inside it: rows that do not overlap), a
 * dimension of one element last with a stride of its own. slot[0..2] says where the key, head and batch went. */
typedef struct attn_map_dims {
    uint64_t dims[4], strides[3]; /* strides in bytes of dims 1..3 */
    unsigned box[4];
    int slot[3];
} attn_map_dims;

static int map_dims(const trr_operand *op, const trr_attention_shape *s, int bn, attn_map_dims *out) {
    const int64_t n[3] = {s->seq_kv, s->heads_kv, s->batch};
    const int64_t st[3] = {op->stride0, op->stride1, op->batch_stride};
    int order[3] = {0, 1, 2}, k = 0;
    /* the dimensions of more than one element by stride, then the others */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 3; i++)
            if ((n[i] > 1) == (pass == 0)) order[k++] = i;
    for (int a = 1; a < 3; a++)
        for (int b = a; b > 0 && n[order[b]] > 1 && n[order[b - 1]] > 1 && st[order[b]] < st[order[b - 1]]; b--) {
            const int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    uint64_t span = (uint64_t)s->head_dim * 2; /* bytes inside the next dimension */
    out->dims[0] = (uint64_t)s->head_dim;
    out->box[0] = 64;
    for (int j = 0; j < 3; j++) {
        const int i = order[j];
        uint64_t stride = (uint64_t)st[i] * 2;
        if (n[i] <= 1) stride = (span + 15u) & ~(uint64_t)15u;
        else if (stride < span) return 0; /* overlapping rows */
        out->dims[1 + j] = (uint64_t)n[i];
        out->strides[j] = stride;
        out->box[1 + j] = i == 0 ? (unsigned)bn : 1u;
        out->slot[i] = 1 + j;
        span = stride * (uint64_t)n[i];
        if (stride % 16 || stride >= ((uint64_t)1 << 40) || (uint64_t)n[i] >= ((uint64_t)1 << 32)) return 0;
    }
    return 1;
}

/* Whether the wgmma kernel runs the call on dev; else 0 with the reason. */
static int wgmma_runs(const trr_cuda_dev *dev, const trr_call *call, char *why, size_t cap) {
    const trr_attention_shape *s = &call->attn;
    attn_map_dims md;
    const char *no = NULL;
    if (call->x.dtype != TRR_F16 && call->x.dtype != TRR_BF16) no = "it takes f16 or bf16";
    else if (!trr_cuda_wgmma_device(dev))
        no = "it needs an sm_90a device (compute capability 9.0) and a driver with cuTensorMapEncodeTiled";
    else if (!wgmma_dp(s->head_dim)) no = "it takes head dimensions up to 128";
    else if (!operand_vec(&call->x, s->batch, s->heads_q, s->seq_q) ||
             !operand_vec(&call->y, s->batch, s->heads_kv, s->seq_kv) ||
             !operand_vec(&call->u, s->batch, s->heads_kv, s->seq_kv))
        no = "q, k and v must start on 16-byte boundaries with strides of whole 16-byte units (the TMA's rules)";
    else if (!map_dims(&call->y, s, 64, &md) || !map_dims(&call->u, s, 64, &md))
        no = "k's and v's rows must not overlap (their tensor maps)";
    if (no) snprintf(why, cap, "%s", no);
    return no == NULL;
}


void trr_cuda_choose_attention(const trr_cuda_dev *dev, trr_call *call) {
    trr_config *c = &call->config;
    const int dp = trr_cuda_attention_dp(call->attn.head_dim);
    const int half = call->x.dtype == TRR_F16 || call->x.dtype == TRR_BF16;
    if (!c->variant) {
        char why[160];
        const int tile_free = !c->block_m && !c->block_n && !c->threads && !c->stages; /* a given tile is mma's */
        if (half && tile_free && kv_rows(call) >= WGMMA_BM && dev && wgmma_runs(dev, call, why, sizeof why))
            c->variant = TRR_VARIANT_WGMMA;
        else c->variant = half && mma_device(dev) ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT;
    }
    trr_config h;
    memset(&h, 0, sizeof h);
    int kdp = dp; /* the head dimension the chosen kernel is compiled for */
    if (c->variant == TRR_VARIANT_SIMT) {
        h = (trr_config){.block_m = SIMT_BM, .block_n = simt_bn(dp), .threads = SIMT_THREADS, .stages = 1};
    } else if (c->variant == TRR_VARIANT_WGMMA) {
        kdp = wgmma_dp(call->attn.head_dim) ? wgmma_dp(call->attn.head_dim) : 128;
        h = wgmma_tile(kdp);
    } else {
        /* rows that fit one 16-row warp: the decode tile (a kv head's group of heads, Sq small) */
        const attn_tiles *t = tiles_for(dp);
        h = kv_rows(call) <= 16 ? t->decode : t->prefill;
        if (kv_rows(call) <= 16 && trr_cuda_attention_smem(TRR_VARIANT_MMA, dp, &h) > smem_limit(dev))
            h = t->decode_small;
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
    if (!c->split_k) c->split_k = choose_splits(dev, call, c->variant, kdp, c);
}

trr_status trr_cuda_check_attention(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    const trr_config *c = &call->config;
    const int dp = trr_cuda_attention_dp(call->attn.head_dim);
    const int half = call->x.dtype == TRR_F16 || call->x.dtype == TRR_BF16;
    const size_t limit = smem_limit(dev);
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
        const int over_keys = c->block_m == 16 && warps > 1; /* the decode form: every warp holds the 16 rows */
        if (c->threads % 32 || warps < 1 || warps > 8 ||
            (!over_keys && (c->block_m % (16 * warps) || (c->block_m / warps != 16 && c->block_m / warps != 32))))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): threads / 32 warps (1 to 8) of 16 or 32 rows each must make "
                             "block_m, or block_m 16 with the warps over the keys (got block_m %d, %d threads)",
                             c->block_m, c->threads);
        if (over_keys && c->stages < 2)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): block_m 16 over %d warps (each walking its own keys) needs a ring of "
                             "2 to 4 stages a warp (got stages %d)",
                             warps, c->stages);
        if (c->block_n % 16 || c->block_n < 16 || c->block_n > 128)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (mma): block_n must be a multiple of 16 up to 128 (got %d)", c->block_n);
        if (c->stages < 1 || c->stages > 4)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (mma): stages 1 to 4 (got %d)", c->stages);
    } else if (c->variant == TRR_VARIANT_WGMMA) {
        char why[200];
        if (!wgmma_runs(dev, call, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (wgmma): %s", why);
        if (c->block_m != WGMMA_BM || c->threads != WGMMA_THREADS || (c->block_n != 64 && c->block_n != 128) ||
            c->stages < 2 || c->stages > 4)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda attention (wgmma): block_m 128, 384 threads, block_n 64 or 128, stages 2 to 4 (got "
                             "%d, %d, %d, %d)",
                             c->block_m, c->threads, c->block_n, c->stages);
    } else {
        const char *vname = "?";
        trr_variant_name((trr_variant)c->variant, &vname);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: variant %s; its kernels are mma, simt and wgmma",
                         vname);
    }
    const int kdp = c->variant == TRR_VARIANT_WGMMA ? wgmma_dp(call->attn.head_dim) : dp;
    const size_t smem = trr_cuda_attention_smem(c->variant, kdp, c);
    if (smem > limit)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda attention: the config needs %zu bytes of shared memory at head dimension %d, the device "
                         "allows %zu",
                         smem, kdp, limit);
    const int64_t grid = base_blocks(call, c->block_m) * c->split_k;
    if (grid > 0x7fffffff)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: %lld blocks exceed the grid", (long long)grid);
    return TRR_OK;
}

/* ---- launch ---- */

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
        name = kind == KIND_SIMT ? "attention_simt" : kind == KIND_WGMMA ? "attention_wgmma" : "attention_mma";
    }
    TRR_TRY(trr_cuda_get_function(ctx, &v, name, out));
    trr_cuda_fast_put(dev, key, *out);
    return TRR_OK;
}

/* The wgmma kernel's tensor map of K or V: boxes of 64 columns x bn keys, 128-byte swizzle, zeros past D and
 * past the last key; co[0..2] receives the coordinates' slots of the key, kv head and batch (attention.cu's
 * awg_coords). */
static trr_status encode_kv(trr_context *ctx, const trr_operand *op, const trr_attention_shape *s, int bn,
                            trr_dtype dt, trr_cu_tensor_map *map, int *co) {
    attn_map_dims md;
    if (!map_dims(op, s, bn, &md))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention (wgmma): k's and v's rows must not overlap");
    unsigned estrides[4] = {1, 1, 1, 1};
    memset(map, 0, sizeof *map);
    TRR_CU_CHECK(ctx,
                 trr_cu.TensorMapEncodeTiled(map,
                                             dt == TRR_BF16 ? TRR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                            : TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                             4, (void *)(uintptr_t)trr_cuda_operand_ptr(op), md.dims, md.strides,
                                             md.box, estrides, 0, TRR_CU_TENSOR_MAP_SWIZZLE_128B,
                                             TRR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0),
                 "cuTensorMapEncodeTiled (attention)");
    co[0] = md.slot[0];
    co[1] = md.slot[1];
    co[2] = md.slot[2];
    return TRR_OK;
}

trr_status trr_cuda_run_attention(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    const trr_attention_shape *s = &call->attn;
    const trr_dtype dt = call->x.dtype;
    const int kind = c->variant == TRR_VARIANT_SIMT ? KIND_SIMT : c->variant == TRR_VARIANT_WGMMA ? KIND_WGMMA : KIND_MMA;
    const int dp = kind == KIND_WGMMA ? wgmma_dp(s->head_dim) : trr_cuda_attention_dp(s->head_dim);

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

    /* whole key blocks per split, a multiple of the key warps (each walks every kw-th block of the split); no
     * split is left without keys */
    const int64_t kblocks = ceil_div(s->seq_kv, c->block_n);
    const int64_t kw = key_warps(c);
    int64_t per = ceil_div(ceil_div(kblocks, c->split_k), kw) * kw;
    const int64_t nsplit = ceil_div(kblocks, per);
    a.nsplit = (int)nsplit;
    a.split_blocks = (int)per;
    const int64_t rows_total = s->batch * s->heads_q * s->seq_q;
    if (nsplit > 1) {
        const size_t bytes = (size_t)nsplit * (size_t)rows_total * ((size_t)s->head_dim + 1) * sizeof(float);
        CUdeviceptr sc = 0;
        trr_cuda_dev *dev = ctx->dev;
        TRR_TRY(trr_cuda_scratch_get(ctx, &dev->attn_scratch, bytes, "attention's split scratch", &sc));
        a.part_lse = sc;
        a.part_o = sc + (CUdeviceptr)nsplit * (CUdeviceptr)rows_total * sizeof(float);
    }

    CUfunction fn;
    TRR_TRY(function(ctx, kind, dt, dp, c, &fn));
    const int64_t grid = base_blocks(call, kind == KIND_SIMT ? SIMT_BM : c->block_m) * nsplit;
    if (grid > 0x7fffffff)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda attention: %lld blocks exceed the grid", (long long)grid);
    const unsigned smem = (unsigned)trr_cuda_attention_smem(c->variant, dp, c);
    if (kind == KIND_WGMMA) {
        trr_cu_tensor_map tmk, tmv;
        int co[3];
        TRR_TRY(encode_kv(ctx, &call->y, s, c->block_n, dt, &tmk, co));
        TRR_TRY(encode_kv(ctx, &call->u, s, c->block_n, dt, &tmv, co));
        void *wargs[] = {&tmk, &tmv, co, &a};
        TRR_TRY(trr_cuda_launch_3d(ctx, fn, (unsigned)grid, 1, 1, (unsigned)c->threads, smem, wargs));
    } else {
        void *args1[] = {&a};
        TRR_TRY(trr_cuda_launch_3d(ctx, fn, (unsigned)grid, 1, 1, (unsigned)c->threads, smem, args1));
    }
    if (nsplit == 1) return TRR_OK;
    CUfunction comb;
    TRR_TRY(function(ctx, KIND_COMBINE, dt, 0, c, &comb));
    const int64_t per_block = COMBINE_THREADS / 32;
    void *args[] = {&a};
    return trr_cuda_launch_3d(ctx, comb, (unsigned)ceil_div(rows_total, per_block), 1, 1, COMBINE_THREADS, 0, args);
}
