/* Tiling heuristics per device type and the limits a config must respect. GPU configs aim at throughput;
 * CPU (PoCL) configs aim at few distinct programs, because PoCL takes about a second per compile. */
#include "opencl.h"

#include "config_fields.h"
#include "half.h"
#include "matmul_fold.h"
#include "matmul_split.h"
#include "matmul_variant.h"
#include "op_table.h"

#include <stdint.h>
#include <string.h>

void trr_cl_matmul_grid(const trr_config *cfg, int *out_rt, int *out_ct, int *out_tm, int *out_tn) {
    /* The RT x CT arrangement (powers of two) that divides the tile and gives each work-item the squarest micro
     * tile, wider on a tie: 256 on 128x128 -> 16x16 (8x8 each), 128 on 128x64 -> 16x8 (8x8), 256 on 128x64 ->
     * 16x16 (8x4). A tile that no arrangement divides gets the square-ish grid, which check_config rejects. */
    int ct = 1;
    while (ct * ct < cfg->threads) ct <<= 1;
    int best = -1;
    for (int c = 1; c > 0 && c <= cfg->threads; c <<= 1) {
        int r = cfg->threads / c;
        if (r * c != cfg->threads || cfg->block_m % r || cfg->block_n % c) continue;
        int tm = cfg->block_m / r, tn = cfg->block_n / c;
        int score = tm > tn ? tm - tn : tn - tm;
        if (best < 0 || score <= best) {
            best = score;
            ct = c;
        }
    }
    int rt = ct > 0 ? cfg->threads / ct : 0;
    *out_rt = rt;
    *out_ct = ct;
    *out_tm = rt > 0 ? cfg->block_m / rt : 0;
    *out_tn = ct > 0 ? cfg->block_n / ct : 0;
}

void trr_cl_mma_warps(const trr_config *cfg, int *out_warps_m, int *out_warps_n) {
    int warps = cfg->threads / 32;
    *out_warps_m = warps >= 2 ? 2 : 1;
    *out_warps_n = warps / *out_warps_m;
}

uint64_t trr_cl_loop_budget(const trr_device_info *info) {
    /* llvmpipe (Mesa's CPU driver, rusticl's device) ends a work-item's loops after 65535 iterations in all,
     * counted over every loop of the kernel (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, there to stop runaway loops),
     * and returns what the cut-short loops left: a one-loop kernel counting to 70000 returns 65535. The Vulkan
     * backend meets the same limit on lavapipe (vk_config.c: loop_budget). */
    return !info->is_gpu && !strncmp(info->name, "llvmpipe", 8) ? 65535u : UINT64_MAX;
}

/* What the iteration counts below may take of the budget: the rest is margin for what they leave out. */
static uint64_t loop_room(const trr_cl_dev *dev) {
    return dev->loop_budget == UINT64_MAX ? UINT64_MAX : dev->loop_budget - dev->loop_budget / 8;
}

static uint64_t log2_floor(uint64_t v) {
    uint64_t r = 0;
    while (v > 1) v >>= 1, r++;
    return r;
}

/* The call is of the rows rule (softmax), not the row-reduce rule (row_sum). */
static int rows_rule(const trr_call *call) {
    return trr_op_desc_get(call->op)->shape == TRR_SHAPE_ROWS;
}

/* Loop iterations of one work-item of softmax.cl or row_sum.cl (llvmpipe unrolls none of their loops):
 * softmax_online sweeps its share of the row twice, row_sum once; softmax_regs runs its three loops over PER
 * elements; the reductions add a tree of log2(threads) steps each, and the 64-wide tail of softmax_regs'
 * reductions. */
static uint64_t row_loops(const trr_call *call, int threads, int block_n) {
    const uint64_t t = threads > 0 ? (uint64_t)threads : 1u, tree = 4u * log2_floor(t) + 64u;
    if (rows_rule(call) && call->cols <= block_n) return 3u * ((uint64_t)block_n / t) + tree;
    const uint64_t share = ((uint64_t)call->cols + t - 1u) / t;
    return (rows_rule(call) ? 2u : 1u) * share + tree;
}

/* The softmax CPU heuristic's block_n for threads work-items (choose_config). */
static int cpu_softmax_block_n(const trr_call *call, int threads) {
    return trr_config_product(threads, call->cols <= 4 * (int64_t)threads ? 4 : 64);
}

/* threads, doubled (up to the device's work-group limit) until a work-item's loops fit the loop budget. */
static int fit_row_threads(const trr_cl_dev *dev, const trr_call *call, int threads) {
    const uint64_t room = loop_room(dev);
    while ((size_t)threads * 2 <= dev->max_work_group &&
           row_loops(call, threads, rows_rule(call) ? cpu_softmax_block_n(call, threads) : threads) > room)
        threads *= 2;
    return threads;
}

int64_t trr_cl_matmul_chunk_k(const trr_cl_dev *dev, const trr_config *cfg) {
    if (dev->loop_budget == UINT64_MAX) return INT64_MAX;
    int rt, ct, tm, tn;
    trr_cl_matmul_grid(cfg, &rt, &ct, &tm, &tn);
    if (cfg->threads <= 0 || cfg->block_k <= 0) return 0;
    /* matmul.cl with none of its loops unrolled: per K tile the chunk loads and stores (CA + CB each) and
     * block_k steps of TM/4 + TN/4 + TM + TM x TN; outside the K loop the accumulators' set-up (twice with FOLD)
     * and the write-out's TM x (1 + TN/4). rusticl 22.3, 64x64x16 tiles over 64 work-items, 3x17xK: K = 784 (49
     * tiles) right, 800 (50) cut short, against about 1320 a tile counted here. */
    const uint64_t th = (uint64_t)cfg->threads, bk = (uint64_t)cfg->block_k, m = (uint64_t)tm, n = (uint64_t)tn;
    const uint64_t chunks =
        ((uint64_t)cfg->block_m * bk / 4u + th - 1u) / th + ((uint64_t)cfg->block_n * bk / 4u + th - 1u) / th;
    const uint64_t per_tile = 2u * chunks + bk * (m / 4u + n / 4u + m + m * n + 4u) + 8u;
    const uint64_t fixed = 2u * chunks + 2u * (m + m * n) + m * (1u + n / 4u) + 64u;
    const uint64_t room = loop_room(dev);
    if (fixed + per_tile > room) return 0;
    return (int64_t)((room - fixed) / per_tile) * (int64_t)bk;
}

int trr_cl_mma_operands(trr_dtype a, trr_dtype b) {
    return ((a == TRR_F16 || a == TRR_BF16) && b == a) || (trr_dtype_is_f8(a) && trr_dtype_is_f8(b));
}

trr_variant trr_cl_matmul_auto_variant(int mma_ok, trr_dtype a, trr_dtype b) {
    /* 8-bit floats too: widened to f16 on the tensor-core kernel they run about nine times the CUDA-core
     * kernel's rate (docs/performance.md) */
    return mma_ok && trr_cl_mma_operands(a, b) ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT;
}

int trr_cl_mma_threads(int wide, trr_dtype a, trr_dtype c) {
    /* An f32 C keeps a second set of accumulators (matmul_mma.cl: PROMOTE); 8-bit floats hold each slice's next
     * words in registers while they widen them, and with 8 warps each warp widens half as many */
    return wide && (c == TRR_F32 || trr_dtype_is_f8(a)) ? 256 : 128;
}

static int mma_operands(const trr_call *call) { return trr_cl_mma_operands(call->x.dtype, call->y.dtype); }

/* 8-bit float operands: matmul_mma.cl widens them on their way through registers, never through cp.async, so
 * their programs run two stages (matmul_mma.cl). */
static int mma_through_registers(const trr_cl_dev *dev, const trr_call *call) {
    return !dev->mma.cp_async || trr_dtype_is_f8(call->x.dtype);
}

/* The element-wise and planes rules: work-groups of 256 on GPUs, 64 elsewhere; vectors of 4 where the rule's
 * kernel takes them (element-wise), single elements for the planes rule. */
static void choose_stream(trr_context *ctx, trr_call *call, int vector_width) {
    trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    trr_cl_set_if_zero(&c->threads, dev->info.is_gpu ? 256 : 64);
    trr_cl_set_if_zero(&c->vector_width, vector_width);
    trr_cl_set_if_zero(&c->block_n, trr_config_product(c->threads, c->vector_width));
}

void trr_cl_choose_elementwise(trr_context *ctx, trr_call *call) {
    if (trr_op_desc_get(call->op)->converts) { /* cast (convert.c) */
        trr_cl_convert_choose(ctx, call);
        return;
    }
    choose_stream(ctx, call, 4);
}

void trr_cl_choose_planes(trr_context *ctx, trr_call *call) { choose_stream(ctx, call, 1); }

/* One kernel family for the rows rule here: work-group kernels with local-memory reductions. */
void trr_cl_choose_rows(trr_context *ctx, trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    int64_t n = call->cols;
    if (dev->info.is_gpu) {
        /* Few work-items per row while rows are short (rows.c packs several rows into a work-group of 256),
         * more for longer ones: each step measured fastest at its row lengths on NVIDIA H200
         * (docs/performance.md). Past 2048, 128 rather than 256: 256 work-items would hold N = 2304 in 12
         * each (3072 slots, a quarter of them idle). */
        int threads = n <= 256 ? 16 : n <= 1024 ? 32 : n <= 2048 ? 64 : n <= 4096 ? 128 : 256;
        trr_cl_set_if_zero(&c->threads, fit_row_threads(dev, call, threads));
        /* a power of two up to 4, then a multiple of 4 (whole vectors, softmax.cl: VEC): 12288 columns on 256
         * work-items hold 48 each, not 64 */
        int64_t need = (n + c->threads - 1) / c->threads;
        int per = need <= 4 ? trr_cl_pow2_at_least(need) : (int)((need + 3) / 4 * 4);
        if (per > 64) per = 64; /* longer rows take the online kernel */
        trr_cl_set_if_zero(&c->block_n, trr_config_product(c->threads, per));
    } else {
        /* 16 work-items a row; more where a work-item's share of a long row would outrun the loop budget */
        trr_cl_set_if_zero(&c->threads, fit_row_threads(dev, call, 16));
        trr_cl_set_if_zero(&c->block_n, cpu_softmax_block_n(call, c->threads));
    }
}

void trr_cl_choose_row_reduce(trr_context *ctx, trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    const int threads = !dev->info.is_gpu ? 16 : call->cols >= 2048 ? 256 : call->cols >= 512 ? 128 : 64;
    trr_cl_set_if_zero(&c->threads, fit_row_threads(dev, call, threads));
    trr_cl_set_if_zero(&c->block_n, c->threads);
}

int trr_cl_rows_aligned(const trr_operand *t, int64_t n, int64_t batch) {
    return t->stride0 % n == 0 && t->offset % n == 0 && (batch <= 1 || t->batch_stride % n == 0);
}

const char *trr_cl_wgmma_refusal(int wgmma_ok, const char *probe_reason, const trr_call *call) {
    if (!wgmma_ok) return probe_reason && probe_reason[0] ? probe_reason : "the wgmma probe did not pass";
    if (!trr_dtype_is_f8(call->x.dtype) || !trr_dtype_is_f8(call->y.dtype))
        return "variant wgmma takes 8-bit float operands (f16 and bf16 run on variant mma)";
    return NULL;
}

static const char *wgmma_refusal(const trr_cl_dev *dev, const trr_call *call) {
    return trr_cl_wgmma_refusal(dev->mma.wgmma, dev->mma.wgmma_reason, call);
}

/* split_k where the config leaves it (core/matmul_split.h): a GPU's grid that leaves most compute units idle is
 * split along K; CPU devices run whole. */
static int split_for_grid(const trr_cl_dev *dev, const trr_call *call, const trr_config *c) {
    return dev->info.is_gpu ? trr_matmul_split_for_call(call, c, dev->info.compute_units) : 1;
}

void trr_cl_choose_matmul(trr_context *ctx, trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    int gpu = dev->info.is_gpu;
    trr_config *c = &call->config;
    /* 8-bit floats on Hopper's wgmma where the wgmma probe passed (operands it cannot read as stored from copies:
     * matmul_pack.c); else f16, bf16 and 8-bit float matmul on tensor cores wherever the mma probe passed
     * (mma_probe.c); otherwise simt */
    if (!c->variant && !wgmma_refusal(dev, call)) c->variant = TRR_VARIANT_WGMMA;
    if (!c->variant) c->variant = trr_cl_matmul_auto_variant(dev->mma.ok, call->x.dtype, call->y.dtype);
    if (c->variant == TRR_VARIANT_WGMMA) {
        /* 128 x 112 in three stages of 64 bytes of K, beside their mbarriers, fill the 48 KiB (ahead of 128 x 128
         * in two stages on NVIDIA H200: docs/performance.md); a 64-row tile (one consumer warpgroup) where M is
         * that short */
        trr_cl_set_if_zero(&c->block_m, call->rows <= 64 ? 64 : 128);
        trr_cl_set_if_zero(&c->block_n, 112);
        trr_cl_set_if_zero(&c->block_k, 64);
        trr_cl_set_if_zero(&c->threads, c->block_m * 2 + 128);
        trr_cl_set_if_zero(&c->group_m, 8);
        trr_cl_set_if_zero(&c->stages, 3);
        trr_cl_set_if_zero(&c->vector_width, 16);
        trr_cl_set_if_zero(&c->split_k, split_for_grid(dev, call, c));
        return;
    }
    if (c->variant == TRR_VARIANT_MMA) {
        /* 128x128x32 tiles in three cp.async stages fill the 48 KiB of local memory NVIDIA's OpenCL allows; 4
         * warps of 64x64 measured fastest on NVIDIA H200, ahead of 8 warps of 64x32 and of the 128x256x16,
         * 128x128x16, 256x128x16, 64x128x32 and 128x64x32 tiles, pipelined or not, with the tiles 128-byte
         * aligned or not (docs/performance.md). An f32 C keeps a second set of
         * accumulators (matmul_mma.cl: PROMOTE), so it takes 8 warps. 64x64 tiles with 4 warps of 32x32 while
         * 128-wide tiles would not fill two waves. 8-bit floats take the same tiles (they are f16 in local
         * memory), in two stages through registers, with 8 warps on the wide tile (7% ahead of 4 on NVIDIA
         * H200: docs/performance.md). */
        int units = dev->info.compute_units > 0 ? dev->info.compute_units : 64;
        int64_t tiles = ((call->rows + 127) / 128) * ((call->cols + 127) / 128) * (call->batch > 1 ? call->batch : 1);
        int wide = tiles >= 2 * (int64_t)units;
        trr_cl_set_if_zero(&c->block_m, wide ? 128 : 64);
        trr_cl_set_if_zero(&c->block_n, wide ? 128 : 64);
        trr_cl_set_if_zero(&c->block_k, 32);
        trr_cl_set_if_zero(&c->threads, trr_cl_mma_threads(wide, call->x.dtype, call->z.dtype));
        trr_cl_set_if_zero(&c->group_m, 8);
        trr_cl_set_if_zero(&c->stages, mma_through_registers(dev, call) ? 2 : wide ? 3 : 4);
        trr_cl_set_if_zero(&c->vector_width, 8);
        trr_cl_set_if_zero(&c->split_k, split_for_grid(dev, call, c));
        return;
    }
    if (gpu) {
        /* The CUDA backend's SIMT ladder (8x8 outputs per work-item), topped by 256x128 tiles (16x8 each):
         * the largest tile that still gives every compute unit a work-group; BK 8 ahead of 16, group_m
         * makes no difference (measured on NVIDIA H200: docs/performance.md). */
        int units = dev->info.compute_units > 0 ? dev->info.compute_units : 64;
        int64_t batch = call->batch > 1 ? call->batch : 1;
        int64_t t256 = ((call->rows + 255) / 256) * ((call->cols + 127) / 128) * batch;
        int64_t t128 = ((call->rows + 127) / 128) * ((call->cols + 127) / 128) * batch;
        int64_t t64 = ((call->rows + 127) / 128) * ((call->cols + 63) / 64) * batch;
        /* a K deep enough to fold (matmul.cl: FOLD) doubles the accumulators: 16x8 would not fit */
        const int folds = trr_matmul_folds(call, TRR_MATMUL_SIMT_FOLD_FROM_K);
        int huge = t256 >= units && !folds, big = !huge && t128 >= units, mid = !huge && !big && t64 >= units;
        trr_cl_set_if_zero(&c->block_m, huge ? 256 : big || mid ? 128 : 64);
        trr_cl_set_if_zero(&c->block_n, huge || big ? 128 : 64);
        trr_cl_set_if_zero(&c->block_k, huge || big || mid ? 8 : 16);
        trr_cl_set_if_zero(&c->threads, huge || big ? 256 : mid ? 128 : 64);
    } else if (dev->loop_budget != UINT64_MAX) {
        /* A device that cuts loops short (llvmpipe): 4x4 outputs per work-item, whose loops run about a third
         * of the iterations of 8x8 a K tile (matmul_chunk_k), so a long K takes a third of the launches; and
         * tiles of 16 or 32 where the output is that small, not 64 of mostly padding. */
        trr_cl_set_if_zero(&c->block_m, call->rows <= 16 ? 16 : call->rows <= 32 ? 32 : 64);
        trr_cl_set_if_zero(&c->block_n, call->cols <= 16 ? 16 : call->cols <= 32 ? 32 : 64);
        trr_cl_set_if_zero(&c->block_k, 16);
        trr_cl_set_if_zero(&c->threads,
                           (c->block_m / 4) * (c->block_n / 4) > 0 ? (c->block_m / 4) * (c->block_n / 4) : 64);
    } else {
        trr_cl_set_if_zero(&c->block_m, 64);
        trr_cl_set_if_zero(&c->block_n, 64);
        trr_cl_set_if_zero(&c->block_k, 16);
        trr_cl_set_if_zero(&c->threads, 64);
    }
    trr_cl_set_if_zero(&c->group_m, 8);
    trr_cl_set_if_zero(&c->stages, 2);
    trr_cl_set_if_zero(&c->vector_width, 4);
    trr_cl_set_if_zero(&c->split_k, split_for_grid(dev, call, c));
}

static trr_status bad(trr_context *ctx, const char *what) {
    return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: %s", what);
}

/* Refused where what (a kernel's tiles) needs more than the device's local memory. */
static trr_status local_fits(trr_context *ctx, const trr_cl_dev *dev, uint64_t bytes, const char *what) {
    if (bytes <= dev->local_memory) return TRR_OK;
    return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                     "opencl: config rejected: %s need %llu bytes of local memory, the device has %llu", what,
                     (unsigned long long)bytes, (unsigned long long)dev->local_memory);
}

/* split_k on every matmul kernel: 1 to TRR_MATMUL_MAX_SPLIT slices of K (core/matmul_split.h; matmul.c runs
 * them as a batch, then matmul_split.cl adds them). */
static trr_status check_split(trr_context *ctx, const trr_config *c) {
    if (c->split_k < 1 || c->split_k > TRR_MATMUL_MAX_SPLIT)
        return bad(ctx, "matmul split_k must be 1 to 32 (slices of K)");
    return TRR_OK;
}

static trr_status check_mma(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    if (!dev->mma.ok)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: variant mma (tensor cores through inline PTX) is unavailable on %s: %s",
                         dev->info.name, dev->mma.reason);
    if (!mma_operands(call))
        return bad(ctx, "variant mma takes f16 or bf16 operands (A and B alike) or two 8-bit floats");
    if (c->threads % 32 || !trr_cl_is_pow2(c->threads) || c->threads > 512)
        return bad(ctx, "variant mma threads must be 32, 64, 128, 256 or 512 (whole warps)");
    TRR_TRY(check_split(ctx, c));
    if (mma_through_registers(dev, call) ? c->stages != 2 : c->stages < 2 || c->stages > 8)
        return bad(ctx, !dev->mma.cp_async ? "variant mma double-buffers through registers here, without cp.async "
                                             "(stages must be 2)"
                        : mma_through_registers(dev, call)
                            ? "variant mma double-buffers 8-bit floats through registers, widening them to f16 "
                              "(stages must be 2)"
                            : "variant mma stages must be 2..8");
    if (c->vector_width != 8) return bad(ctx, "variant mma moves 16-byte chunks of 8 halves (vector_width must be 8)");
    if (c->group_m <= 0) return bad(ctx, "group_m must be positive");
    int wm, wn;
    trr_cl_mma_warps(c, &wm, &wn);
    /* powers of two: the XOR swizzle of a tile row's chunks stays within the row */
    if (!trr_cl_is_pow2(c->block_m) || !trr_cl_is_pow2(c->block_n) || c->block_m % (16 * wm) || c->block_n % (16 * wn))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: variant mma arranges %d warps as %dx%d; block_m and block_n must "
                         "be powers of two, multiples of %d and %d",
                         c->threads / 32, wm, wn, 16 * wm, 16 * wn);
    int sets = call->z.dtype == TRR_F32 ? 2 : 1; /* an f32 C adds the promoted sums (matmul_mma.cl: PROMOTE) */
    if ((c->block_m / wm / 16) * (c->block_n / wn / 8) * 4 * sets > 128)
        return bad(ctx,
                   call->z.dtype == TRR_F32
                       ? "variant mma with an f32 C: warp tile over 64 accumulators per work-item (twice that held)"
                       : "variant mma warp tile over 128 accumulators per work-item");
    if (c->block_k != 16 && c->block_k != 32 && c->block_k != 64)
        return bad(ctx, "variant mma block_k must be 16, 32 or 64");
    if (((int64_t)c->block_m * c->block_k / 8) % c->threads || ((int64_t)c->block_n * c->block_k / 8) % c->threads)
        return bad(ctx, "variant mma: block_m x block_k / 8 and block_n x block_k / 8 must be multiples of threads");
    return local_fits(ctx, dev,
                      (uint64_t)c->stages * (uint64_t)c->block_k * (uint64_t)(c->block_m + c->block_n) * 2ull,
                      "variant mma tiles");
}

static trr_status check_wgmma(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    const char *why = wgmma_refusal(dev, call);
    if (why)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: variant wgmma cannot run this call on %s: %s",
                         dev->info.name, why);
    if (c->block_m != 64 && c->block_m != 128) return bad(ctx, "variant wgmma block_m must be 64 or 128");
    /* two sets of accumulators (the slice's product and the sums: matmul_wgmma.cl) */
    if (c->block_n < 16 || c->block_n > 128 || c->block_n % 16)
        return bad(ctx, "variant wgmma block_n must be a multiple of 16 from 16 to 128");
    if (c->threads != 2 * c->block_m + 128)
        return bad(ctx, "variant wgmma runs a consumer warpgroup per 64 rows and a producer warpgroup (threads = 2 x "
                        "block_m + 128)");
    if (c->block_k != 64) return bad(ctx, "variant wgmma takes K in slices of 64 (block_k must be 64)");
    TRR_TRY(check_split(ctx, c));
    if (c->vector_width != 16) return bad(ctx, "variant wgmma moves 16-byte chunks (vector_width must be 16)");
    if (c->group_m <= 0) return bad(ctx, "group_m must be positive");
    if (c->stages < 2 || c->stages > 8) return bad(ctx, "variant wgmma stages must be 2..8");
    /* the slices and two 8-byte mbarriers a stage */
    return local_fits(ctx, dev, (uint64_t)c->stages * (64ull * (uint64_t)(c->block_m + c->block_n) + 16ull),
                      "variant wgmma slices");
}

/* What every rule but matmul's checks first: the variant (one kernel family here) and the work-group size. */
trr_status trr_cl_check_common(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_MMA) return bad(ctx, "variant mma is a matmul and attention kernel");
    if (c->variant != TRR_VARIANT_AUTO && c->variant != TRR_VARIANT_SIMT) {
        const char *name = "?";
        trr_variant_name((trr_variant)c->variant, &name);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: variant %s is not a kernel of the OpenCL backend (simt; mma for f16/bf16/8-bit float "
                         "matmul and f16/bf16 attention; wgmma for 8-bit float matmul)",
                         name);
    }
    if (c->threads <= 0 || (size_t)c->threads > dev->max_work_group)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: threads %d outside 1..%zu (device limit)",
                         c->threads, dev->max_work_group);
    return TRR_OK;
}

trr_status trr_cl_check_elementwise(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cl_check_common(ctx, call));
    if (trr_op_desc_get(call->op)->converts) return trr_cl_convert_check(ctx, call); /* cast (convert.c) */
    const int vw = call->config.vector_width;
    if (!trr_cl_is_pow2(vw) || vw > 16) return bad(ctx, "vector_width must be 1, 2, 4, 8 or 16");
    return TRR_OK;
}

trr_status trr_cl_check_planes(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cl_check_elementwise(ctx, call));
    if (call->config.vector_width != 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: %s has vector_width 1",
                         trr_op_desc_get(call->op)->name);
    return TRR_OK;
}

/* The rows and row-reduce rules' loop budget (llvmpipe). */
static trr_status check_row_loops(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    const uint64_t loops = row_loops(call, c->threads, rows_rule(call) ? c->block_n : c->threads);
    if (loops > loop_room(dev))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: %s rows of %lld over %d work-items take about %llu loop iterations "
                         "per work-item; %s cuts a work-item short at %llu (more threads per row take fewer, up to "
                         "%zu)",
                         trr_op_desc_get(call->op)->name, (long long)call->cols, c->threads,
                         (unsigned long long)loops, dev->info.name, (unsigned long long)dev->loop_budget,
                         dev->max_work_group);
    return TRR_OK;
}

trr_status trr_cl_check_rows(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    TRR_TRY(trr_cl_check_common(ctx, call));
    if (!trr_cl_is_pow2(c->threads)) return bad(ctx, "softmax threads must be a power of two (tree reduction)");
    if (c->block_n % c->threads != 0 || c->block_n / c->threads > 64)
        return bad(ctx, "softmax block_n must be threads x (1..64) elements per work-item");
    if ((uint64_t)c->threads * 8 > dev->local_memory) return bad(ctx, "softmax reduction exceeds local memory");
    if (c->vector_width != 1 && c->vector_width != 4)
        return bad(ctx, "softmax vector_width must be 1 or 4 (4: aligned rows move as 4-element vectors)");
    return check_row_loops(ctx, call);
}

trr_status trr_cl_check_row_reduce(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cl_check_common(ctx, call));
    if (!trr_cl_is_pow2(call->config.threads))
        return bad(ctx, "row_sum threads must be a power of two (tree reduction)");
    return check_row_loops(ctx, call);
}

trr_status trr_cl_check_matmul(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_MMA) return check_mma(ctx, call);
    if (c->variant == TRR_VARIANT_WGMMA) return check_wgmma(ctx, call);
    TRR_TRY(trr_cl_check_common(ctx, call));
    int rt, ct, tm, tn;
    trr_cl_matmul_grid(c, &rt, &ct, &tm, &tn);
    TRR_TRY(check_split(ctx, c));
    if (c->stages != 2) return bad(ctx, "matmul double-buffers local memory (stages must be 2)");
    if (c->vector_width != 4) return bad(ctx, "matmul reads local memory as float4 (vector_width must be 4)");
    if (!trr_cl_is_pow2(c->threads)) return bad(ctx, "matmul threads must be a power of two");
    if (c->block_m % rt || c->block_n % ct || tm % 4 || tn % 4 || tm < 4 || tn < 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: %d threads form a %dx%d grid; block_m/%d and block_n/%d must "
                         "be multiples of 4",
                         c->threads, rt, ct, rt, ct);
    if (tm * tn > 128) return bad(ctx, "matmul micro-tile over 128 accumulators per work-item");
    if (c->block_k <= 0 || c->block_k % 4 || ((int64_t)c->block_m * c->block_k / 4) % c->threads ||
        ((int64_t)c->block_n * c->block_k / 4) % c->threads)
        return bad(ctx, "matmul moves tiles in 4-element chunks: block_k must be a multiple of 4, and block_m x "
                        "block_k / 4 and block_n x block_k / 4 multiples of threads");
    if (c->block_k > 64) return bad(ctx, "block_k over 64");
    if (c->group_m <= 0) return bad(ctx, "group_m must be positive");
    TRR_TRY(local_fits(ctx, dev, 2ull * (uint64_t)c->block_k * (uint64_t)(c->block_m + 4 + c->block_n + 4) * 4ull,
                       "matmul tiles"));
    if (call->k > 0 && trr_cl_matmul_chunk_k(dev, c) == 0)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "opencl: config rejected: one %dx%dx%d matmul tile over %d work-items takes more loop "
                         "iterations per work-item than %s runs (%llu); smaller tiles or more threads take fewer",
                         c->block_m, c->block_n, c->block_k, c->threads, dev->info.name,
                         (unsigned long long)dev->loop_budget);
    return TRR_OK;
}
