/* The matmul rule's heuristic (variant, tile, stages, split: trr_cuda_choose_matmul) and the limits its config
 * must respect on the device (trr_cuda_check_matmul), with the kernels' config tables they pick from. */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The SIMT kernel's tiles, large to small; threads = block_m * block_n / 128 gives each thread 16 x 8 outputs,
 * / 64 gives 8 x 8. f32 takes the first that gives every SM a block. The order is by speed at large sizes
 * on NVIDIA H200: docs/performance.md. */
const trr_config trr_cuda_simt_configs[] = {
    {.block_m = 128, .block_n = 256, .block_k = 8, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 8, .threads = 128},
    {.block_m = 128, .block_n = 64, .block_k = 8, .threads = 128},
    {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 64},
};
const int trr_cuda_simt_config_count = (int)(sizeof trr_cuda_simt_configs / sizeof trr_cuda_simt_configs[0]);

/* The wgmma kernel's configs: block_k 64 is fixed by the kernel, and its threads by block_m (384 for 128 rows,
 * 512 for 192); the heuristic takes the first of each tile (the wave estimate chooses among them), the tuner
 * tries them all. 128 x 96, 144, 160 and 224 (B [K,N] in whole 64-column boxes and a narrow last one), 192 x 192 and
 * 192 x 208 (three consumers) give tile counts between those of 128 x 128, 192 and 256, so that more sizes'
 * tiles make whole waves (wave_cost); they run plain, single blocks of 16-bit inputs: the heuristic clusters,
 * splits and balances (stream-K) only the 128-row tiles of 128, 192 and 256 (trr_cuda_wgmma_every_schedule). 4
 * stages (3 for 192 rows) leave room for the epilogue's boxes beside the ring (trr_cuda_wgmma_c_slots). */
const trr_config trr_cuda_wgmma_configs[] = {
    {.block_m = 128, .block_n = 256, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 6, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 192, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 256, .block_k = 64, .group_m = 8, .stages = 3, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 224, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 192, .block_n = 192, .block_k = 64, .group_m = 8, .stages = 3, .threads = TRR_CUDA_WGMMA_TALL_THREADS},
    {.block_m = 128, .block_n = 96, .block_k = 64, .group_m = 8, .stages = 6, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 144, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 160, .block_k = 64, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 192, .block_n = 208, .block_k = 64, .group_m = 8, .stages = 3, .threads = TRR_CUDA_WGMMA_TALL_THREADS},
};
const int trr_cuda_wgmma_config_count = (int)(sizeof trr_cuda_wgmma_configs / sizeof trr_cuda_wgmma_configs[0]);

/* 64-row blocks (one consumer warpgroup, 256 threads) for products whose 128-row tiles leave most SMs idle: twice
 * the blocks, each K tile half the work, so a small product's serial chain of K tiles is shorter. The ring holds
 * as many stages as leave room for the epilogue's four slots (a 64 x 128 tile's f32 boxes): a long K on few
 * blocks (128 rows, K 4096) streams B from memory, and the loads in flight are what keeps it fed. */
const trr_config trr_cuda_wgmma_narrow_configs[] = {
    {.block_m = 64, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 8, .threads = TRR_CUDA_WGMMA_NARROW_THREADS},
    {.block_m = 64, .block_n = 64, .block_k = 64, .group_m = 8, .stages = 12, .threads = TRR_CUDA_WGMMA_NARROW_THREADS},
};
const int trr_cuda_wgmma_narrow_config_count =
    (int)(sizeof trr_cuda_wgmma_narrow_configs / sizeof trr_cuda_wgmma_narrow_configs[0]);

int trr_cuda_wgmma_every_schedule(const trr_config *cfg) {
    return cfg->block_m == TRR_CUDA_WGMMA_BM && (cfg->block_n == 128 || cfg->block_n == 192 || cfg->block_n == 256);
}

int trr_cuda_wgmma_consumers(const trr_config *cfg) { return trr_cuda_wgmma_block_rows(cfg) / 64; }

int trr_cuda_wgmma_block_rows(const trr_config *cfg) {
    return cfg->block_m == 2 * TRR_CUDA_WGMMA_BM ? TRR_CUDA_WGMMA_BM : cfg->block_m;
}

int trr_cuda_wgmma_b_tail(const trr_config *cfg) {
    return cfg->block_n % 64 == 16 || cfg->block_n % 64 == 32 ? cfg->block_n % 64 : 0;
}

int trr_cuda_wgmma_b_stage_cols(const trr_config *cfg) {
    const int tail = trr_cuda_wgmma_b_tail(cfg);
    return (cfg->block_n - tail + 63) / 64 * 64 + tail;
}

/* 8-bit float products on wgmma, block_k 128 elements (the same 128-byte rows as 16-bit block_k 64): 128 x 256
 * tiles, each K tile summed a 128-column half at a time into one partial that is added once its wgmma are done
 * (128 accumulators and 64 for the partial a thread), the heuristic's choice; and 128 x 128 tiles, two partials
 * alternating so the next K tile's wgmma run while one is added, which ptxas answers by serialising every
 * wgmma (matmul_wgmma.cu): `--config matmul:block_n=128` for comparison and small grids. The heuristic takes the
 * first of each block_n, the tuner tries them all. */
const trr_config trr_cuda_wgmma_f8_configs[] = {
    {.block_m = 128, .block_n = 256, .block_k = 128, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 128, .block_k = 128, .group_m = 8, .stages = 6, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 256, .block_k = 128, .group_m = 8, .stages = 3, .threads = TRR_CUDA_WGMMA_THREADS},
    {.block_m = 128, .block_n = 128, .block_k = 128, .group_m = 8, .stages = 4, .threads = TRR_CUDA_WGMMA_THREADS},
};
const int trr_cuda_wgmma_f8_config_count =
    (int)(sizeof trr_cuda_wgmma_f8_configs / sizeof trr_cuda_wgmma_f8_configs[0]);

/* 8-bit float products on mma.sync, large to small: warp tiles of at most 64 x 32 (64 accumulators and 64 for
 * the K tile's partial a thread), block_k 64 elements (the 64-byte rows of 16-bit block_k 32). */
const trr_config trr_cuda_mma_f8_configs[] = {
    {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 4, .threads = 256},
    {.block_m = 128, .block_n = 64, .block_k = 64, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 64, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 64, .block_n = 64, .block_k = 64, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 64, .block_n = 32, .block_k = 64, .group_m = 8, .stages = 5, .threads = 64},
};
const int trr_cuda_mma_f8_config_count = (int)(sizeof trr_cuda_mma_f8_configs / sizeof trr_cuda_mma_f8_configs[0]);

/* mma.sync tiles for products of few rows (TRR_CUDA_SPLIT_SMALL_M at most: language models' decode and short prefill),
 * by rows: 16, 32, 64. Such a product streams B's K x N weights once and computes little on them, so a block
 * covers the fewest rows that hold M (16-row mma.sync steps; no 128-row tile mostly idle) and 128 columns with
 * block_k 64 (16 KiB of B a stage: one 16-byte copy in eight from each of 128 threads), its stages as many as
 * leave room for two blocks an SM (5 to 6 stages, about 100 KiB of copies in flight a block), and split-K gives
 * every SM blocks (choose_split) with the splits joined in the kernel. */
const trr_config trr_cuda_mma_small_configs[] = {
    {.block_m = 16, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 6, .threads = 128},
    {.block_m = 32, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 5, .threads = 128},
    {.block_m = 64, .block_n = 128, .block_k = 64, .group_m = 8, .stages = 4, .threads = 128},
};
const int trr_cuda_mma_small_config_count =
    (int)(sizeof trr_cuda_mma_small_configs / sizeof trr_cuda_mma_small_configs[0]);

trr_config trr_cuda_mma_small_fit(const trr_config *c, size_t smem_optin) {
    trr_config f = *c;
    while (f.stages > 2 && trr_cuda_mma_smem(&f) > smem_optin) f.stages--;
    return f;
}

static int f8_call(const trr_call *call) { return call->x.dtype == TRR_F8E4M3 || call->x.dtype == TRR_F8E5M2; }

/* The wgmma kernel (sm_90a only) is the default on Hopper, well ahead of mma.sync there (docs/performance.md);
 * `--config variant=mma` runs the other one. */
int trr_cuda_wgmma_device(const trr_cuda_dev *dev) {
    if (!dev || dev->cc_major != 9 || dev->cc_minor != 0 || strcmp(dev->arch, "sm_90a") != 0) return 0;
    return trr_cu.TensorMapEncodeTiled != NULL;
}

/* A config the wgmma kernel can take: threads 384 or 512 (its own; no mma.sync config uses them), or threads
 * not chosen yet and every tile field either unset or the wgmma kernel's (block_m 256: a cluster of two, 192:
 * three consumers; 8-bit floats: block_k 128, block_n 128 or 256; 16-bit: block_n a multiple of 16 past 64, the
 * mma.sync tiles' widths being 32, 64, 128 and 256). */
static int wgmma_config(const trr_config *c, int f8) {
    if (c->threads == TRR_CUDA_WGMMA_THREADS || c->threads == TRR_CUDA_WGMMA_TALL_THREADS) return 1;
    if (c->threads) return 0;
    return (!c->block_m || c->block_m == TRR_CUDA_WGMMA_BM || c->block_m == 2 * TRR_CUDA_WGMMA_BM ||
            (!f8 && c->block_m == TRR_CUDA_WGMMA_TALL_BM)) &&
           (!c->block_k || c->block_k == (f8 ? 2 * TRR_CUDA_WGMMA_BK : TRR_CUDA_WGMMA_BK)) &&
           (!c->block_n || c->block_n == 128 || c->block_n == 256 ||
            (!f8 && c->block_n % 16 == 0 && c->block_n > 64 && c->block_n <= 256));
}

/* A width the 16-bit wgmma kernel takes: a multiple of 16 from 64 to 256 (the instruction's N, in steps its
 * tensor-map boxes of B and the accumulator's register lists cover). */
static int wgmma_width(int bn) { return bn % 16 == 0 && bn >= 64 && bn <= 256; }

/* Blocks in the grid for a bm x bn tile: every matrix of a batch has its own (blockIdx.z). */
static int64_t tiles(const trr_call *call, int bm, int bn) {
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    return ((call->rows + bm - 1) / bm) * ((call->cols + bn - 1) / bn) * batch;
}

/* Whether the call's operands suit the tensor-core kernels (f16, sm_80 and up, A row-major unless a_mn (wgmma
 * reads 16-bit A stored [K,M] too), leading dimensions of whole 16-byte rows, 16-byte aligned bases); else 0 with
 * the reason. */
static int tensor_core_call(const trr_cuda_dev *dev, const trr_call *call, int a_mn, char *why, size_t cap) {
    const char *no = NULL;
    if (f8_call(call)) {
        /* mma.sync and wgmma read 8-bit float operands K-major only: A [M,K] row-major, B stored [N,K] */
        if (dev && (dev->cc_major < 8 || (dev->cc_major == 8 && dev->cc_minor < 9)))
            no = "8-bit float tensor cores need compute capability 8.9 or later";
        else if (call->trans_a) no = "8-bit float tensor cores take A row-major [M,K] only (K-major)";
        else if (!call->trans_b)
            no = "8-bit float tensor cores take B stored [N,K] only (K-major: pass the transpose of an [N,K] view)";
        else if (call->x.stride0 % 16 || call->y.stride0 % 16) no = "lda and ldb must be multiples of 16 (16-byte rows)";
        else if (trr_cuda_operand_ptr(&call->x) % 16 || trr_cuda_operand_ptr(&call->y) % 16)
            no = "A and B must start on 16-byte boundaries";
        else if (call->x.batch_stride % 16 || call->y.batch_stride % 16)
            no = "A's and B's batch strides must be multiples of 16 (every matrix on a 16-byte boundary)";
        if (no && why) snprintf(why, cap, "%s", no);
        return no == NULL;
    }
    if (call->x.dtype != TRR_F16 && call->x.dtype != TRR_BF16) no = "it takes f16 or bf16 inputs";
    else if (dev && dev->cc_major < 8) no = "it needs compute capability 8.0 or later";
    else if (call->trans_a && !a_mn) no = "it takes A row-major only";
    else if (call->x.stride0 % 8 || call->y.stride0 % 8) no = "lda and ldb must be multiples of 8";
    else if (trr_cuda_operand_ptr(&call->x) % 16 || trr_cuda_operand_ptr(&call->y) % 16)
        no = "A and B must start on 16-byte boundaries";
    else if (call->x.batch_stride % 8 || call->y.batch_stride % 8)
        no = "A's and B's batch strides must be multiples of 8 (every matrix on a 16-byte boundary)";
    if (no && why) snprintf(why, cap, "%s", no);
    return no == NULL;
}

/* wgmma reads a batched input through a rank-3 tensor map: its matrices must not overlap (a batch stride of at
 * least one stored matrix), so the map is a plain rank-3 tensor. */
static int wgmma_batch_ok(const trr_call *call, char *why, size_t cap) {
    const int64_t a_rows = call->trans_a ? call->k : call->rows, b_rows = call->trans_b ? call->cols : call->k;
    if ((call->x.batch_stride && call->x.batch_stride < a_rows * call->x.stride0) ||
        (call->y.batch_stride && call->y.batch_stride < b_rows * call->y.stride0)) {
        if (why) snprintf(why, cap, "its tensor maps take batched inputs whose matrices do not overlap");
        return 0;
    }
    return 1;
}

int trr_cuda_matmul_variant_runs(const trr_cuda_dev *dev, const trr_call *call, int variant, char *why, size_t cap) {
    switch (variant) {
    case TRR_VARIANT_SIMT:
        if (f8_call(call)) {
            snprintf(why, cap, "the CUDA-core kernel takes f32, f16 and bf16; 8-bit floats run on the tensor cores "
                               "(mma or wgmma)");
            return 0;
        }
        return 1;
    case TRR_VARIANT_MMA: return tensor_core_call(dev, call, 0, why, cap);
    case TRR_VARIANT_STREAMK:
        if (f8_call(call)) {
            snprintf(why, cap, "the stream-K schedule takes f16 and bf16 inputs; 8-bit floats run on wgmma");
            return 0;
        }
        return trr_cuda_matmul_variant_runs(dev, call, TRR_VARIANT_WGMMA, why, cap); /* the same kernel */
    case TRR_VARIANT_WGMMA:
        if (!tensor_core_call(dev, call, 1, why, cap) || !wgmma_batch_ok(call, why, cap)) return 0;
        if (!trr_cuda_wgmma_device(dev)) {
            snprintf(why, cap, "it needs an sm_90a device (compute capability 9.0) and a driver with "
                               "cuTensorMapEncodeTiled");
            return 0;
        }
        return 1;
    default:
        snprintf(why, cap, "the CUDA backend's matmul kernels are simt, mma, wgmma and streamk (wgmma, stream-K)");
        return 0;
    }
}

/* Split-K (ops_matmul.c runs it): the most splits a call's K allows, each keeping at least TRR_CUDA_SPLIT_MIN_STEPS
 * steps of block_k and TRR_CUDA_SPLIT_MIN_K of K, so a split still runs its pipeline past the fill and drain of
 * the stages, and a product too small for the split's own work (the partials written and read; for wgmma a second
 * launch) to pay back keeps one split. */
static int64_t split_max(int64_t k, int block_k) {
    int64_t per = (int64_t)block_k * TRR_CUDA_SPLIT_MIN_STEPS;
    if (per < TRR_CUDA_SPLIT_MIN_K) per = TRR_CUDA_SPLIT_MIN_K;
    const int64_t most = k / per;
    return most < 1 ? 1 : most > TRR_CUDA_SPLIT_K_MAX ? TRR_CUDA_SPLIT_K_MAX : most;
}

/* Blocks of an mma.sync config resident on one SM at once: as many as its shared memory, threads and an
 * estimated 128 registers a thread allow. */
static int64_t mma_blocks_per_sm(const trr_cuda_dev *dev, const trr_config *c) {
    const size_t smem = trr_cuda_mma_smem(c), optin = dev ? (size_t)dev->smem_optin : 227u * 1024u;
    int64_t per = smem > 0 ? (int64_t)(optin / smem) : 1;
    if (per > 2048 / c->threads) per = 2048 / c->threads;
    if (per > 65536 / (128 * c->threads)) per = 65536 / (128 * c->threads);
    return per < 1 ? 1 : per;
}

/* The split-K workspace a config needs with s splits: batch x s x M x N f32 for wgmma's second pass, a
 * block_m x block_n slot per split of every output tile for mma.sync's in-kernel join. */
static double split_bytes(const trr_call *call, const trr_config *c, int64_t units, int s) {
    if (c->variant == TRR_VARIANT_MMA) return (double)units * s * (double)c->block_m * (double)c->block_n * 4.0;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    return (double)batch * s * (double)call->rows * (double)call->cols * 4.0;
}

/* An s that leaves the last split empty (the kernels give each split ceil(steps / s) steps). */
static int split_empty(int64_t steps, int s) { return (int64_t)(s - 1) * ((steps + s - 1) / s) >= steps; }

/* Few rows (TRR_CUDA_SPLIT_SMALL_M at most) on mma.sync: the product streams B once and each block's share of it is
 * what takes the time, so the grid should give every SM a block at once, and no SM a second one: the fewest
 * splits that bring the blocks to 90% of the SMs, within one block an SM and each split's minimum K. Two splits
 * that put a second block on some SMs ran 5-9% slower than none on NVIDIA H200 at 86 and 112 tiles of 16 x 128
 * (N = 11008 and 14336: docs/performance.md), those SMs' blocks ending last. */
static int choose_split_small(const trr_cuda_dev *dev, const trr_call *call, const trr_config *c) {
    const int sms = dev && dev->sm_count > 0 ? dev->sm_count : 132;
    const int64_t units = tiles(call, c->block_m, c->block_n);
    if (units <= 0 || units * 10 >= (int64_t)sms * 9) return 1;
    const int64_t most = split_max(call->k, c->block_k);
    const int64_t steps = c->block_k > 0 ? (call->k + c->block_k - 1) / c->block_k : 0;
    int best = 1;
    for (int s = 2; s <= most && units * s <= sms; s++) {
        if (split_empty(steps, s)) continue;
        if (split_bytes(call, c, units, s) > (double)TRR_CUDA_SPLIT_MAX_BYTES) break;
        best = s;
        if (units * s * 10 >= (int64_t)sms * 9) break;
    }
    return best;
}

/* The heuristic's split_k for a resolved tensor-core config. A split pays when the output tiles leave SMs idle:
 * with fewer work items than 80% of the SMs, S splits turn `units` tiles into units x S items, each 1/S of the K
 * work, so the time goes as waves(S) / S, waves(S) = ceil(units x S / slots) (slots: the blocks resident at once,
 * one per SM for wgmma, per pair of SMs for its clusters; mma.sync's smaller blocks share an SM, as many as its
 * shared memory, threads and an estimated 128 registers a thread allow). That is the fill units x S / (waves x
 * slots); the smallest S reaching 90% fill is taken (more splits only add partials to write and add), else the
 * S of the best fill. Each split keeps its minimum K (split_max), and the workspace stays under
 * TRR_CUDA_SPLIT_MAX_BYTES. Grids that fill the SMs (4096^3, 8192^3, the large LLM products) keep S = 1.
 * Past TRR_CUDA_SPLIT_SMALL_M rows the partials (S x M x N f32, written and read again) weigh as much as the
 * operands, so a grid that already fills more than TRR_CUDA_SPLIT_WIDE_FILL tenths of the SMs loses more to them
 * than the fuller waves give back and keeps S = 1; few-row products, whose partials are small beside the
 * weights they read, split at any fill below 80% (docs/performance.md, matmul at language-model shapes); on
 * mma.sync's few-row tiles they take choose_split_small's rule instead. */
static int choose_split(const trr_cuda_dev *dev, const trr_call *call, const trr_config *c) {
    if (c->variant != TRR_VARIANT_WGMMA && c->variant != TRR_VARIANT_MMA) return 1; /* streamk: its own balance */
    if (c->variant == TRR_VARIANT_MMA && f8_call(call)) return 1; /* check_matmul says why */
    if (c->variant == TRR_VARIANT_MMA && !f8_call(call) && call->rows <= TRR_CUDA_SPLIT_SMALL_M && c->threads > 0)
        return choose_split_small(dev, call, c);
    const int sms = dev && dev->sm_count > 0 ? dev->sm_count : 132;
    const int cluster = c->variant == TRR_VARIANT_WGMMA && c->block_m > TRR_CUDA_WGMMA_BM ? 2 : 1;
    const int64_t units = tiles(call, c->block_m, c->block_n);
    if (units <= 0 || units * 10 >= (int64_t)(sms / cluster) * 8) return 1;
    if (call->rows > TRR_CUDA_SPLIT_SMALL_M && units * 10 > (int64_t)(sms / cluster) * TRR_CUDA_SPLIT_WIDE_FILL)
        return 1;
    int64_t slots = sms / cluster;
    if (c->variant == TRR_VARIANT_MMA && c->threads > 0) slots *= mma_blocks_per_sm(dev, c);
    int64_t most = split_max(call->k, c->block_k);
    /* past the few rows, a split that leaves each part a short K costs more in its second pass and its pipelines'
     * fill than the fuller wave gives back (768^3 and 896^3 ran about 1.6x faster unsplit than split 3 and 2) */
    if (call->rows > TRR_CUDA_SPLIT_SMALL_M && most > call->k / TRR_CUDA_SPLIT_MIN_K_WIDE)
        most = call->k / TRR_CUDA_SPLIT_MIN_K_WIDE;
    const int64_t steps = c->block_k > 0 ? (call->k + c->block_k - 1) / c->block_k : 0;
    int best = 1;
    double best_fill = 0.0;
    for (int s = 2; s <= most; s++) {
        if (split_empty(steps, s)) continue;
        if (split_bytes(call, c, units, s) > (double)TRR_CUDA_SPLIT_MAX_BYTES) break;
        const int64_t items = units * s, waves = (items + slots - 1) / slots;
        const double fill = (double)items / (double)(waves * slots);
        if (fill >= 0.9) return s;
        if (fill > best_fill + 1e-9) {
            best_fill = fill;
            best = s;
        }
    }
    return best;
}

/* Few rows (16-bit inputs, no tile asked for): mma.sync's few-row tiles (trr_cuda_mma_small_configs), where
 * wgmma's 64-row tiles would leave half their rows idle or more on a product that streams B at the memory's
 * speed. Past them, products run on wgmma's 64-row tiles (narrow_choice), which ran ahead of mma.sync's 64-row
 * few-row tile and of its 32 x 64 one for small cubes. */
static int few_rows_call(const trr_call *call) {
    const trr_config *c = &call->config;
    return !f8_call(call) && call->rows <= TRR_CUDA_WGMMA_NARROW_MIN_M && !c->threads && !c->block_m && !c->block_n &&
           !c->block_k;
}

int trr_cuda_matmul_auto_variant(const trr_cuda_dev *dev, const trr_call *call) {
    char why[160];
    const int f8 = f8_call(call);
    const int wgmma = trr_cuda_matmul_variant_runs(dev, call, TRR_VARIANT_WGMMA, why, sizeof why) &&
                      wgmma_config(&call->config, f8);
    /* 8-bit floats have no CUDA-core kernel: a call the tensor cores cannot take stays on mma, whose check says
     * why; 16-bit A stored [K,M] (mma reads it from a copy, matmul_pack.c) runs on wgmma where that reads it */
    if (!trr_cuda_matmul_variant_runs(dev, call, TRR_VARIANT_MMA, why, sizeof why)) {
        if (f8) return TRR_VARIANT_MMA;
        return call->trans_a && wgmma && !few_rows_call(call) ? TRR_VARIANT_WGMMA : TRR_VARIANT_SIMT;
    }
    if (!wgmma) return TRR_VARIANT_MMA;
    return few_rows_call(call) ? TRR_VARIANT_MMA : TRR_VARIANT_WGMMA;
}

int trr_cuda_matmul_reads_a_mn_major(const trr_cuda_dev *dev, const trr_call *call) {
    char why[160];
    if (f8_call(call) || !call->trans_a || !trr_cuda_matmul_variant_runs(dev, call, TRR_VARIANT_WGMMA, why, sizeof why))
        return 0;
    const int v = call->config.variant;
    return v == TRR_VARIANT_WGMMA || v == TRR_VARIANT_STREAMK ||
           (!v && wgmma_config(&call->config, 0) && !few_rows_call(call));
}

/* The epilogue's store boxes (64 rows x 128 bytes) per consumer warpgroup: as many as a tile stores (its whole
 * 128-byte column groups of c_type), at most 4 where the ring leaves room for them inside the 227 KB a Hopper block
 * can have (a 16-bit 128 x 256 tile's whole half, so a box waits only on the previous tile's stores; 128 x 192 with
 * 4 stages), else 2 (128 x 256 with 4 stages, 128 x 128 with 6). A slot past the tile's boxes would never be
 * written (the kernel's C_NS), so sizing them to the boxes gives a narrow tile's ring that room: 192 x 96 with
 * 16-bit outputs stores one box a consumer and holds 5 stages beside it. */
int trr_cuda_wgmma_c_slots(const trr_config *cfg, trr_dtype c_type) {
    const size_t ring =
        (size_t)cfg->stages * ((size_t)trr_cuda_wgmma_block_rows(cfg) + (size_t)trr_cuda_wgmma_b_stage_cols(cfg)) * TRR_CUDA_WGMMA_BK * 2;
    const size_t fixed = 1024 + 128, box = 64 * 128, limit = 227 * 1024;
    const int cap = ring + fixed + (size_t)trr_cuda_wgmma_consumers(cfg) * 4 * box <= limit ? 4 : 2;
    const int boxes = cfg->block_n * trr_cuda_elem_size(c_type) / 128;
    return boxes < 1 ? 1 : boxes < cap ? boxes : cap;
}

/* The ring of stages (A and B tiles), then the epilogue's store boxes for each consumer warpgroup, plus 1 KB to
 * align the ring to the swizzle's 1024-byte atoms. */
size_t trr_cuda_wgmma_smem(const trr_config *cfg, trr_dtype c_type) {
    return (size_t)cfg->stages * ((size_t)trr_cuda_wgmma_block_rows(cfg) + (size_t)trr_cuda_wgmma_b_stage_cols(cfg)) * TRR_CUDA_WGMMA_BK * 2 +
           (size_t)trr_cuda_wgmma_consumers(cfg) * (size_t)trr_cuda_wgmma_c_slots(cfg, c_type) * 64 * 128 + 1024;
}

trr_dtype trr_cuda_wgmma_c_type(const trr_call *call) {
    return call->config.split_k > 1 ? TRR_F32 : call->z.dtype;
}

int trr_cuda_mma_warp_grid(int bm, int bn, int warps, int *out_wm, int *out_wn) {
    int best = 0, best_diff = 1 << 30;
    for (int wm = 1; wm <= warps; wm *= 2) {
        if (warps % wm) continue;
        int wn = warps / wm;
        if (bm % wm || bn % wn) continue;
        int tm = bm / wm, tn = bn / wn;
        if (tm % 16 || tn % 16) continue;
        int diff = tm > tn ? tm - tn : tn - tm;
        if (diff < best_diff || (diff == best_diff && wm > best)) {
            best = wm;
            best_diff = diff;
        }
    }
    if (!best) return 0;
    *out_wm = best;
    *out_wn = warps / best;
    return 1;
}

size_t trr_cuda_mma_smem(const trr_config *cfg) { return trr_cuda_mma_smem_es(cfg, 2); }

size_t trr_cuda_mma_smem_es(const trr_config *cfg, int es) {
    return (size_t)cfg->stages * ((size_t)cfg->block_m * cfg->block_k + (size_t)cfg->block_k * cfg->block_n) *
           (size_t)es;
}

static size_t simt_smem(const trr_config *cfg) {
    return 2u * (size_t)cfg->block_k * (size_t)(cfg->block_m + 4 + cfg->block_n + 4) * 4u;
}

/* The narrow (64-row) wgmma tile for a 16-bit call past the few rows whose grid is one wave of them: 64 x 64
 * where its tiles fit on the SMs at once, else 64 x 128 where those do; 0 otherwise (a wave or more of 128-row
 * tiles, which run the K steps at a higher rate). A small product's time is its serial chain of K tiles plus a
 * launch's fixed cost, so the narrowest tile that still runs in one wave shortens it most: measured on NVIDIA
 * H200 (docs/performance.md), 64 x 64 ahead of 64 x 128 wherever both fit one wave, and both ahead of mma.sync's
 * small tiles and of 128 x 128 there; past one wave of 64 x 128 the 128-row tiles are ahead or level. */
static int narrow_choice(const trr_call *call, int sms) {
    if (f8_call(call) || call->rows <= TRR_CUDA_WGMMA_NARROW_MIN_M) return 0;
    /* One row of tiles (few rows past mma.sync's): 64 x 128 where N is wider than 64 and its grid fills most of the
     * SMs (14336 columns: 112 blocks), else 64 x 64, split by choose_split where its grid is small (4096 columns: 64 tiles, 2 splits).
     * Measured on NVIDIA H200 at the language-model widths: both ahead of mma.sync's 64 x 128 few-row tile by
     * 12-28%, 64 x 64 ahead of 64 x 128 split three or four ways. */
    if (call->rows <= TRR_CUDA_WGMMA_NARROW_BM)
        return call->cols > 64 && tiles(call, TRR_CUDA_WGMMA_NARROW_BM, 128) * 10 >= (int64_t)sms * 8 ? 128 : 64;
    if (tiles(call, TRR_CUDA_WGMMA_NARROW_BM, 64) <= sms) return 64;
    if (tiles(call, TRR_CUDA_WGMMA_NARROW_BM, 128) <= sms) return 128;
    return 0;
}

/* The wgmma kernel's time for a 16-bit call on tile bm x bn, in K tiles of 128 x 128 at the 128 x 256 tile's rate:
 * whole waves of tiles, the last one part idle, the K tiles the busiest block runs. Rates as measured on NVIDIA
 * H200 (docs/performance.md, matmul at every size): each tile's rate per output relative to 128 x 256's, from its
 * throughput over whole waves at the sizes from 1536^3 to 4224^3. The narrow-box widths (128 x 96, 144, 160) and
 * the widest tall tiles (192 x 208, 224) at what they ran against the tiles they would replace, on NVIDIA H100:
 * at a higher rate the estimate took them where they ran slower, so they stay the tuner's. 0 where it does not
 * apply. */
static double wave_rate(int bm, int bn) {
    if (bm == TRR_CUDA_WGMMA_TALL_BM) return bn > 192 ? 0.80 : 1.03;
    return bn == 256 ? 1.0 : bn == 192 ? 0.97 : bn == 128 ? 0.92 : bn == 224 ? 0.92 : 0.70;
}

static double wave_cost(const trr_call *call, int sms, int bm, int bn) {
    const int64_t t = tiles(call, bm, bn), kt = (call->k + TRR_CUDA_WGMMA_BK - 1) / TRR_CUDA_WGMMA_BK;
    const double per = (double)bm * bn / (128.0 * 128.0) / wave_rate(bm, bn); /* a K tile's cost */
    if (t <= 0 || kt <= 0 || sms <= 0) return 0.0;
    return (double)((t + sms - 1) / sms) * (double)kt * per;
}

/* The heuristic's wgmma tile for a 16-bit call with no tile asked for: of the configs' tiles (wider than 128 only
 * where N is, taller only where M is), the one of least wave_cost (plain 128 x 256 only where the rule took it).
 * Stream-K is left to those who ask for it (variant streamk) and to the tuner: wherever this estimate put it
 * ahead, a plain tile measured faster, its blocks' K steps costing more than the plain grid's, whose blocks load
 * the same K tiles at once (docs/performance.md). Starts from the rule's 128 x *bn; sets *bm, *bn. */
static void wave_choice(const trr_call *call, int sms, int *bm, int *bn) {
    double best = wave_cost(call, sms, TRR_CUDA_WGMMA_BM, *bn);
    int best_bm = TRR_CUDA_WGMMA_BM, best_bn = *bn;
    for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
        const trr_config *c = &trr_cuda_wgmma_configs[i];
        if ((c->block_n > 128 && call->cols <= 128) || (c->block_m > 128 && call->rows <= 128)) continue;
        /* a plain tile other than the rule's only where clearly ahead, and not the wide one in place of the
         * narrow (the rule's narrow tile below a wave of wide ones is what was measured) */
        const double p = wave_cost(call, sms, c->block_m, c->block_n);
        if (p > 0.0 && p < best * 0.97 && c->block_n != 256) {
            best = p;
            best_bm = c->block_m;
            best_bn = c->block_n;
        }
    }
    *bm = best_bm;
    *bn = best_bn;
}

static void choose_matmul(const trr_cuda_dev *dev, trr_call *call) {
    trr_config h;
    memset(&h, 0, sizeof h);
    int fit_stages = 0; /* a 192-row tile asked for without stages: as many as fit */
    int sms = dev ? dev->sm_count : 132;
    const int auto_variant = !call->config.variant;
    if (!call->config.variant) call->config.variant = trr_cuda_matmul_auto_variant(dev, call);
    int variant = call->config.variant;
    if (variant == TRR_VARIANT_WGMMA && f8_call(call)) {
        /* 8-bit floats: the 16-bit rule's width (128 x 256 where that gives nearly every SM a block and N fills
         * it, else 128 x 128; a given block_n picks its own), and its clusters of two along M for large single
         * products (at least as many blocks as 8 waves of 128 x 256 tiles, a long K) */
        int bn = call->config.block_n;
        if (!bn) bn = call->cols > 128 && tiles(call, 128, 256) * 10 >= (int64_t)sms * 9 ? 256 : 128;
        h = trr_cuda_wgmma_f8_configs[0];
        for (int i = 0; i < trr_cuda_wgmma_f8_config_count; i++) {
            if (trr_cuda_wgmma_f8_configs[i].block_n == bn) {
                h = trr_cuda_wgmma_f8_configs[i];
                break;
            }
        }
        if (call->batch <= 1 && call->k >= 4096 && tiles(call, 128, 256) >= 8 * (int64_t)sms)
            h.block_m = 2 * TRR_CUDA_WGMMA_BM;
        h.vector_width = 16;
    } else if (variant == TRR_VARIANT_MMA && f8_call(call)) {
        /* 8-bit floats: the largest of their tiles that still gives every SM a block */
        const int n = trr_cuda_mma_f8_config_count;
        h = trr_cuda_mma_f8_configs[n - 1];
        for (int i = 0; i < n; i++)
            if (tiles(call, trr_cuda_mma_f8_configs[i].block_m, trr_cuda_mma_f8_configs[i].block_n) >= sms) {
                h = trr_cuda_mma_f8_configs[i];
                break;
            }
        h.vector_width = 16;
    } else if (variant == TRR_VARIANT_WGMMA || variant == TRR_VARIANT_STREAMK) {
        /* 128 x 256 where that gives nearly every SM a block (2048^3: 128 blocks on 132 SMs) and N fills it,
         * else 128 x 128; f16 and bf16 alike (the epilogue stores through shared memory and TMA, which keeps
         * the wide tile ahead for bf16 too; docs/performance.md). A given block_n picks its own. */
        int bm = TRR_CUDA_WGMMA_BM, bn = call->config.block_n;
        if (!bn) bn = call->cols > 128 && tiles(call, 128, 256) * 10 >= (int64_t)sms * 9 ? 256 : 128;
        /* Then the waves: where the tile count leaves much of the last wave idle (3072^3 on 128 x 256: 2.2 waves,
         * the third a fifth full), the tile that balances it (wave_choice). Only with
         * nothing of the tile or family asked for, not where the clusters below take the call (8 waves and
         * more: a part wave is a small share there), and not where split-K fills a small grid (choose_split:
         * the measured rule for few tiles with a long K). */
        const int clustered = bn == 256 && call->batch <= 1 && call->k >= 4096 && tiles(call, 128, 256) >= 8 * (int64_t)sms;
        trr_config plain = trr_cuda_wgmma_configs[0];
        plain.block_n = bn;
        plain.variant = TRR_VARIANT_WGMMA;
        const int asked = call->config.block_n || call->config.block_m || call->config.threads ||
                          (call->config.split_k && call->config.split_k != 1);
        int narrow = auto_variant && !asked ? narrow_choice(call, sms) : 0;
        /* a narrow grid that leaves a fifth of the SMs idle gives way to split-K of 128-row tiles where that
         * fills them (one row of 64-row tiles splits itself instead: 128-row tiles would be half empty) */
        if (narrow && call->rows > TRR_CUDA_WGMMA_NARROW_BM &&
            tiles(call, TRR_CUDA_WGMMA_NARROW_BM, narrow) * 10 < (int64_t)sms * 8 &&
            choose_split(dev, call, &plain) > 1)
            narrow = 0;
        if (auto_variant && !f8_call(call) && !asked && !clustered && !narrow && choose_split(dev, call, &plain) == 1) {
            wave_choice(call, sms, &bm, &bn);
        }
        h = trr_cuda_wgmma_configs[0];
        for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
            if (trr_cuda_wgmma_configs[i].block_m == bm && trr_cuda_wgmma_configs[i].block_n == bn) {
                h = trr_cuda_wgmma_configs[i];
                break;
            }
        }
        if (narrow || call->config.block_m == TRR_CUDA_WGMMA_NARROW_BM) {
            /* 64-row blocks, chosen or asked for: the narrow config of that width (128 unless given) */
            const int nbn = narrow ? narrow : call->config.block_n;
            h = trr_cuda_wgmma_narrow_configs[0];
            for (int i = 0; i < trr_cuda_wgmma_narrow_config_count; i++)
                if (trr_cuda_wgmma_narrow_configs[i].block_n == nbn) h = trr_cuda_wgmma_narrow_configs[i];
        } else if (call->config.block_m == TRR_CUDA_WGMMA_TALL_BM) {
            /* 192-row blocks, asked for: three consumers, as many stages as fit beside their slots (below, once
             * the split, and so the type the kernel stores, is known) */
            h.block_m = TRR_CUDA_WGMMA_TALL_BM;
            h.threads = TRR_CUDA_WGMMA_TALL_THREADS;
            h.block_n = call->config.block_n ? call->config.block_n : 128;
            h.stages = TRR_CUDA_WGMMA_TALL_MAX_STAGES;
            fit_stages = !call->config.stages;
        }
        /* Clusters of two 128-row blocks sharing B's tile by multicast (block_m 256) for large single products:
         * ahead of single blocks at 8192^3 and not at 4096^3 on NVIDIA H200 (docs/performance.md), so the rule
         * sits between those two points: at least 8 waves of 128 x 256 tiles and a long K; batched products, not
         * measured clustered, keep single blocks. */
        if (variant == TRR_VARIANT_WGMMA && bn == 256 && call->batch <= 1 && call->k >= 4096 &&
            tiles(call, 128, 256) >= 8 * (int64_t)sms)
            h.block_m = 2 * TRR_CUDA_WGMMA_BM;
        h.vector_width = 8;
    } else if (variant == TRR_VARIANT_MMA && call->rows <= TRR_CUDA_SPLIT_SMALL_M) {
        /* few rows: the few-row tile of the fewest rows that hold M */
        h = trr_cuda_mma_small_configs[trr_cuda_mma_small_config_count - 1];
        for (int i = 0; i < trr_cuda_mma_small_config_count; i++)
            if (call->rows <= trr_cuda_mma_small_configs[i].block_m) {
                h = trr_cuda_mma_small_configs[i];
                break;
            }
        if (dev) h = trr_cuda_mma_small_fit(&h, (size_t)dev->smem_optin);
        h.vector_width = 8;
    } else if (variant == TRR_VARIANT_MMA) {
        /* The largest known-good tile that still gives every SM a block; the list runs large to small. */
        int n = trr_matmul_f16_nvidia_config_count;
        h = trr_matmul_f16_nvidia_configs[n - 1];
        for (int i = 0; i < n; i++) {
            const trr_config *c = &trr_matmul_f16_nvidia_configs[i];
            if (dev && trr_cuda_mma_smem(c) > (size_t)dev->smem_optin) continue;
            if (tiles(call, c->block_m, c->block_n) >= sms) {
                h = *c;
                break;
            }
        }
        /* The software-pipelined kernel (fragments of the next k step load during the mma of this one) runs
         * best at BK 32: 128x256x32 with 4 stages beats the known-good list's 128x256x64 with 3 stages (the
         * BK 64 tile spills under the pipeline's extra registers; the tuning data). */
        if (h.block_m == 128 && h.block_n == 256 && h.block_k == 64 && h.stages == 3) {
            h.block_k = 32;
            h.stages = 4;
        }
        h.vector_width = 8;
    } else {
        int last = trr_cuda_simt_config_count - 1;
        h = trr_cuda_simt_configs[last];
        if (call->x.dtype == TRR_F32) {
            for (int i = 0; i < last; i++) {
                if (tiles(call, trr_cuda_simt_configs[i].block_m, trr_cuda_simt_configs[i].block_n) >= sms) {
                    h = trr_cuda_simt_configs[i];
                    break;
                }
            }
        }
        h.stages = 2;
        h.vector_width = 4;
    }
    if (!h.group_m) h.group_m = 8;
    h.split_k = 0; /* chosen below, once the tile is known */
    trr_config *c = &call->config;
    int derive_threads = !c->threads && (c->block_m || c->block_n);
    trr_cuda_config_fill(c, &h);
    if (!c->split_k) c->split_k = choose_split(dev, call, c);
    if (fit_stages) {
        const size_t limit = dev ? (size_t)dev->smem_optin : 227u * 1024u;
        while (c->stages > 2 && trr_cuda_wgmma_smem(c, trr_cuda_wgmma_c_type(call)) + 128 > limit) c->stages--;
    }
    /* A tile overridden without threads: the SIMT kernel's thread count follows from the tile, as the list has
     * it for a listed block_m x block_n, else 8 x 8 outputs each. */
    if (derive_threads && variant == TRR_VARIANT_SIMT) {
        c->threads = (c->block_m / 8) * (c->block_n / 8);
        for (int i = 0; i < trr_cuda_simt_config_count; i++)
            if (trr_cuda_simt_configs[i].block_m == c->block_m && trr_cuda_simt_configs[i].block_n == c->block_n) {
                c->threads = trr_cuda_simt_configs[i].threads;
                break;
            }
    }
}

static trr_status check_matmul(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    const trr_config *c = &call->config;
    int max_threads = dev ? dev->max_threads : 1024;
    if (c->split_k < 1 || c->split_k > TRR_CUDA_SPLIT_K_MAX)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: split_k must be in [1, %d] (got %d)",
                         TRR_CUDA_SPLIT_K_MAX, c->split_k);
    /* split-K is in the tensor-core kernels (their f32 partials and matmul_reduce.cu): the CUDA-core kernel
     * computes f32 products, where a grid too small for the SMs is a small product anyway */
    if (c->split_k > 1 && c->variant != TRR_VARIANT_WGMMA && c->variant != TRR_VARIANT_MMA)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda matmul: split_k %d needs the tensor-core kernels (variant mma or wgmma); the simt "
                         "kernel has no split-K%s",
                         c->split_k, c->variant == TRR_VARIANT_STREAMK ? " and streamk splits K its own way" : "");
    if (c->group_m < 1) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: group_m must be >= 1");
    if (c->threads % 32 || c->threads < 32 || c->threads > max_threads)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: threads %d must be a multiple of 32 in [32, %d]",
                         c->threads, max_threads);
    char why[160];
    const char *vname = "?";
    trr_variant_name((trr_variant)c->variant, &vname);
    if (!trr_cuda_matmul_variant_runs(dev, call, c->variant, why, sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: variant %s cannot run this call: %s", vname, why);
    const int f8 = f8_call(call);
    if (c->variant == TRR_VARIANT_WGMMA && f8) {
        if (c->threads != TRR_CUDA_WGMMA_THREADS || (c->block_m != TRR_CUDA_WGMMA_BM && c->block_m != 2 * TRR_CUDA_WGMMA_BM) ||
            c->block_k != 2 * TRR_CUDA_WGMMA_BK || (c->block_n != 128 && c->block_n != 256))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda 8-bit float matmul (wgmma): the tile must be 128 or 256 (a cluster of two 128-row "
                             "blocks) x 128 or 256 with block_k 128 and 384 threads (got %d x %d x %d, %d threads)",
                             c->block_m, c->block_n, c->block_k, c->threads);
    } else if (c->variant == TRR_VARIANT_STREAMK) {
        if (c->threads != TRR_CUDA_WGMMA_THREADS || c->block_m != TRR_CUDA_WGMMA_BM || c->block_k != TRR_CUDA_WGMMA_BK ||
            !wgmma_width(c->block_n))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul (streamk): the tile must be 128 x a multiple of 16 from 64 to 256 with "
                             "block_k 64 and 384 threads; its blocks run alone, not in clusters (got %d x %d x %d, %d "
                             "threads)",
                             c->block_m, c->block_n, c->block_k, c->threads);
    } else if (c->variant == TRR_VARIANT_WGMMA && c->block_m == TRR_CUDA_WGMMA_NARROW_BM) {
        if (c->threads != TRR_CUDA_WGMMA_NARROW_THREADS || c->block_k != TRR_CUDA_WGMMA_BK ||
            (c->block_n != 64 && c->block_n != 128))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul (wgmma): a 64-row tile must be 64 x 64 or 64 x 128 with block_k 64 and "
                             "256 threads (got %d x %d x %d, %d threads)",
                             c->block_m, c->block_n, c->block_k, c->threads);
    } else if (c->variant == TRR_VARIANT_WGMMA) {
        /* block_m 256 is a cluster of two 128-row blocks sharing B's tile (Hopper's clusters: sm_90 only, which
         * the variant already requires), its B halves whole 64-column boxes; 192 rows take three consumer
         * warpgroups, whose registers hold no wider tile than TRR_CUDA_WGMMA_TALL_MAX_N */
        const int single = c->block_m == TRR_CUDA_WGMMA_BM && c->threads == TRR_CUDA_WGMMA_THREADS;
        const int pair = c->block_m == 2 * TRR_CUDA_WGMMA_BM && c->threads == TRR_CUDA_WGMMA_THREADS &&
                         (c->block_n == 128 || c->block_n == 256);
        const int tall = c->block_m == TRR_CUDA_WGMMA_TALL_BM && c->threads == TRR_CUDA_WGMMA_TALL_THREADS &&
                         c->block_n <= TRR_CUDA_WGMMA_TALL_MAX_N;
        if (!(single || pair || tall) || c->block_k != TRR_CUDA_WGMMA_BK || !wgmma_width(c->block_n))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul (wgmma): the tile must be 128 x a multiple of 16 from 64 to 256 with 384 "
                             "threads, 256 (a cluster of two 128-row blocks) x 128 or 256 with 384 threads, 192 x a "
                             "multiple of 16 from 64 to %d with 512 threads, or 64 x 64 or 64 x 128 with 256 threads, "
                             "block_k 64 (got %d x %d x %d, %d threads)",
                             TRR_CUDA_WGMMA_TALL_MAX_N, c->block_m, c->block_n, c->block_k, c->threads);
    }
    if (c->variant == TRR_VARIANT_WGMMA || c->variant == TRR_VARIANT_STREAMK) {
        if (c->stages < 2 || c->stages > 16)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda f16 matmul (wgmma): stages must be in [2, 16] (got %d)", c->stages);
        /* the stages' mbarriers live in static shared memory: 16 bytes a stage */
        size_t smem = trr_cuda_wgmma_smem(c, trr_cuda_wgmma_c_type(call)) + 128;
        size_t limit = dev ? (size_t)dev->smem_optin : 227u * 1024u;
        if (smem > limit)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul (wgmma): config needs %zu bytes of shared memory, the device allows %zu", smem, limit);
        return TRR_OK;
    }
    if (c->variant == TRR_VARIANT_MMA) {
        int wm, wn;
        /* block_k counts elements: a K step of mma.sync is 16 of them (32 for the 8-bit floats), a 16-byte copy 8
         * (16) */
        const int es = f8 ? 1 : 2, step = 32 / es, chunk = 16 / es;
        /* the in-kernel join of the splits is built for 16-bit inputs: its 8-bit float build fails to launch */
        if (f8 && c->split_k > 1)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda 8-bit float matmul: the mma kernel takes split_k 1 only (got %d); wgmma splits", c->split_k);
        if (c->block_m % 16 || c->block_n % 16 || c->block_k % step || c->block_k < step)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda %s matmul: block_m and block_n must be multiples of 16 and block_k of %d (%d, %d, %d)",
                             f8 ? "8-bit float" : "f16", step, c->block_m, c->block_n, c->block_k);
        if (!trr_cuda_mma_warp_grid(c->block_m, c->block_n, c->threads / 32, &wm, &wn))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul: %d warps cannot split a %dx%d tile into warp tiles that are multiples of 16",
                             c->threads / 32, c->block_m, c->block_n);
        if ((wn > 0 && (c->block_n / wn) % 16) || c->stages < 2 || c->stages > 8)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda f16 matmul: stages must be in [2, 8] (got %d)", c->stages);
        int rows_b = call->trans_b ? c->block_n : c->block_k,
            cpr_b = call->trans_b ? c->block_k / chunk : c->block_n / chunk;
        if (((int64_t)c->block_m * c->block_k / chunk) % c->threads || ((int64_t)rows_b * cpr_b) % c->threads)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda f16 matmul: the %dx%d and %dx%d tiles must split evenly into 16-byte copies over %d threads",
                             c->block_m, c->block_k, c->block_k, c->block_n, c->threads);
        size_t smem = trr_cuda_mma_smem_es(c, es);
        size_t limit = dev ? (size_t)dev->smem_optin : 227u * 1024u;
        if (smem > limit)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda f16 matmul: config needs %zu bytes of shared memory, the device allows %zu",
                             smem, limit);
        return TRR_OK;
    }
    if (c->block_m % 8 || c->block_n % 8 || c->block_k % 4 || c->block_m < 8 || c->block_n < 8 || c->block_k < 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda matmul (CUDA cores): block_m, block_n multiples of 8 and block_k of 4 (%d, %d, %d)",
                         c->block_m, c->block_n, c->block_k);
    const int64_t area = (int64_t)c->block_m * c->block_n; /* fields reach 65536 each */
    if (c->threads != area / 64 && (c->threads != area / 128 || c->block_m % 16))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda matmul (CUDA cores): threads must be block_m*block_n/64 = %lld (8x8 outputs each) or, with "
                         "block_m a multiple of 16, block_m*block_n/128 = %lld (16x8 each); got %d",
                         (long long)(area / 64), (long long)(area / 128), c->threads);
    if (c->block_k != 4 && c->block_k % 8)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda matmul (CUDA cores): block_k must be 4 or a multiple of 8 (got %d)", c->block_k);
    if (((int64_t)c->block_m * c->block_k / 4) % c->threads || ((int64_t)c->block_k * c->block_n / 4) % c->threads)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda matmul (CUDA cores): the A and B tiles must split evenly into 4-element loads over %d threads",
                         c->threads);
    if (simt_smem(c) > 48u * 1024u)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul (CUDA cores): tiles need %zu bytes of static shared memory (max 49152)",
                         simt_smem(c));
    if (c->stages != 2)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul (CUDA cores): the kernel is double-buffered: stages must be 2");
    return TRR_OK;
}

/* A product whose operands run from K-major copies (matmul_pack.c) is chosen for and checked as it will run: the
 * copies' layout. */
void trr_cuda_choose_matmul(const trr_cuda_dev *dev, trr_call *call) {
    trr_call view;
    if (!trr_cuda_matmul_view(dev, call, &view)) {
        choose_matmul(dev, call);
        return;
    }
    choose_matmul(dev, &view);
    call->config = view.config;
}

trr_status trr_cuda_check_matmul(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    trr_call view;
    return trr_cuda_matmul_view(dev, call, &view) ? check_matmul(ctx, dev, &view) : check_matmul(ctx, dev, call);
}
