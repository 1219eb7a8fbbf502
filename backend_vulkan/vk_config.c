/* The Vulkan ops' configs: the heuristic that completes a call's config (trr_vk_choose_config) and the checks
 * that refuse one a kernel cannot run, with the reason (trr_vk_check_config). */
#include "vk_config.h"
#include "vk_norm.h"
#include "config_fields.h"
#include "half.h"
#include "matmul_fold.h"
#include "matmul_split.h"
#include "op_table.h"
#include "validate.h"

#include <stdio.h>
#include <string.h>

/* The row-wise heuristic on GPUs (trr_vk_choose_config): the longest softmax rows that take the
 * subgroup-per-row kernel (softmax_sg.comp), over GPU_SOFTMAX_SG_THREADS threads a workgroup; softmax_rows.comp,
 * for rows of up to GPU_SOFTMAX_ROWS_MAX_COLS, over the whole subgroups that give each invocation about
 * GPU_SOFTMAX_ROWS_VECTORS 4-element vectors (at least 64 threads); row_sum's subgroup kernel over at most
 * GPU_ROW_SUM_THREADS threads with GPU_ROW_SUM_LOADS loads in flight each.
 * All measured on NVIDIA H200 (docs/performance.md): softmax rows past 256 run slower on the subgroup kernel
 * than on 64 threads a row, so they stay off it; row_sum's subgroup kernel is ahead of the shared-memory-tree
 * kernel at any thread count from 64 to 1024. Rows of GPU_ROW_SUM_WIDE_MIN to _MAX columns go over cols / 8
 * threads (256 to 512) with GPU_ROW_SUM_WIDE_LOADS loads each, a little ahead of cols / 32 threads with 8 loads. */
#define SOFTMAX_SG_AUTO_MAX_COLS 256
#define GPU_SOFTMAX_SG_THREADS 256
/* Softmax rows over the benchmark's lengths (384 to 12672, docs/ops.md, Benchmarks): the thread count that gives
 * about V vectors an invocation; V = 14 measured best against the CUDA backend's softmax at its worst length on
 * NVIDIA H200, ahead of other V and of powers of two near cols / 32 (docs/performance.md). Past the benchmark's
 * lengths the power of two near cols / 32 stays (1024 past 8192), which measured ahead there. */
#define GPU_SOFTMAX_ROWS_VECTORS 14
#define GPU_SOFTMAX_ROWS_MAX_COLS 12672
/* otherwise 1024 threads from this length to 16384 (CUDA's shape at 12288) */
#define GPU_SOFTMAX_WIDE_COLS 8192
#define GPU_ROW_SUM_THREADS 256
#define GPU_ROW_SUM_LOADS 8
#define GPU_ROW_SUM_WIDE_MIN 2048
#define GPU_ROW_SUM_WIDE_MAX 8192
#define GPU_ROW_SUM_WIDE_THREADS 512
#define GPU_ROW_SUM_WIDE_LOADS 4

/* row_sum_sg.comp's loads in flight per invocation and loop iteration (block_n = threads x vector_width x
 * loads), and the most a config may ask for (registers, and the unrolled code's length) */
#define ROW_SUM_LOADS 4
#define ROW_SUM_MAX_LOADS 16

/* softmax_sg.comp can take the call with this many threads: the register layout, subgroups wider than one
 * lane that tile the workgroup, and at most 32 vectors per lane. Else 0 with the reason. */
static int softmax_sg_runs(const trr_vk_device *d, const trr_call *c, int threads, char *why, size_t cap) {
    uint64_t sg = d->phys.subgroup_size, n4 = (uint64_t)c->cols / 4;
    if (!trr_vk_softmax_regs_layout(d, c))
        snprintf(why, cap, "it needs subgroup arithmetic and rows of whole 4-element vectors on 4-element "
                           "boundaries");
    else if (sg <= 1 || threads <= 0 || (uint64_t)threads % sg)
        snprintf(why, cap, "threads = %d must be a whole number of %llu-wide subgroups", threads,
                 (unsigned long long)sg);
    else if ((n4 + sg - 1) / sg > 32)
        snprintf(why, cap, "rows of %lld columns need more than 32 vectors per lane of a %llu-wide subgroup",
                 (long long)c->cols, (unsigned long long)sg);
    else
        return 1;
    return 0;
}

/* softmax_rows.comp (the register kernel, softmax's variant simt) takes the call with config c: the register
 * layout, and a row within block_n and 16 vectors per invocation (vk_ops.c's rowwise_part). */
static int softmax_rows_runs(const trr_vk_device *d, const trr_call *call, const trr_config *c) {
    if (trr_op_desc_get(call->op)->shape != TRR_SHAPE_ROWS || c->variant == TRR_VARIANT_SUBGROUP || c->threads <= 0 ||
        !trr_vk_softmax_regs_layout(d, call) || call->cols > c->block_n || d->phys.subgroup_size < 1)
        return 0;
    int64_t vpt = (call->cols / 4 + c->threads - 1) / c->threads;
    return vpt >= 1 && vpt <= 16;
}

/* row_sum_sg.comp (row_sum's variant subgroup) can take the call with this many threads: subgroup arithmetic
 * and a workgroup of whole subgroups. Else 0 with the reason. */
static int row_sum_sg_runs(const trr_vk_device *d, int threads, char *why, size_t cap) {
    uint64_t sg = d->phys.subgroup_size;
    if (!d->phys.subgroup_arith)
        snprintf(why, cap, "%s lacks subgroup arithmetic in compute shaders", d->phys.props.deviceName);
    else if (threads <= 0 || (uint64_t)threads % sg)
        snprintf(why, cap, "threads = %d must be a whole number of %llu-wide subgroups", threads,
                 (unsigned long long)sg);
    else
        return 1;
    return 0;
}

static const char *variant_name(int v) {
    const char *name = "?";
    trr_variant_name((trr_variant)v, &name);
    return name;
}

int trr_vk_coop_variant(int v) {
    return v == TRR_VARIANT_COOP_KHR || v == TRR_VARIANT_COOP_NV || v == TRR_VARIANT_CM2;
}

/* Whether this device runs matmul variant v for the call at all (the config's tiles aside): simt always, the
 * cooperative-matrix variants for f16 inputs (coop_khr and coop_nv for 8-bit floats too) where create_device
 * enabled them, and coop_khr for bf16 inputs where it enabled the bf16 build (coop_bf16). Else 0 with the
 * reason. */
static int matmul_variant_runs(const trr_vk_device *d, const trr_call *c, int v, char *why, size_t cap) {
    if (v == TRR_VARIANT_SIMT) return 1;
    if (!trr_vk_coop_variant(v)) {
        snprintf(why, cap, "the Vulkan matmul kernels are simt, coop_khr, coop_nv and cm2");
        return 0;
    }
    if (c->x.dtype == TRR_BF16) {
        /* bf16 matrices are VK_KHR_shader_bfloat16's, built by Slang's glslang for both kernels (coop_bf16 says
         * whether the device and this build have them); cm2 also needs cooperative_matrix2 */
        if (v == TRR_VARIANT_COOP_NV) {
            snprintf(why, cap, "bf16 inputs run on cooperative matrices as variants coop_khr and cm2 only");
            return 0;
        }
        if (!d->coop_bf16) {
            snprintf(why, cap, "%s", d->coop_bf16_why);
            return 0;
        }
        if (v == TRR_VARIANT_CM2 && !d->coop2) {
            snprintf(why, cap, "%s", d->coop2_why);
            return 0;
        }
        return 1;
    }
    /* 8-bit floats run on the f16 matrices of matmul_coop.comp, widened as their slices are staged (no FP8
     * component type here: VK_EXT_shader_float8's would be one); cm2 loads its matrices from memory itself */
    if (trr_dtype_is_f8(c->x.dtype) && v == TRR_VARIANT_CM2) {
        snprintf(why, cap, "8-bit float inputs run on coop_khr, coop_nv (widened to f16 as they are staged) and simt");
        return 0;
    }
    if (c->x.dtype != TRR_F16 && !trr_dtype_is_f8(c->x.dtype)) {
        snprintf(why, cap, "the cooperative-matrix kernels take f16, bf16 and 8-bit float inputs");
        return 0;
    }
    const int on = v == TRR_VARIANT_COOP_KHR ? d->coop_khr : v == TRR_VARIANT_COOP_NV ? d->coop_nv : d->coop2;
    const char *no = v == TRR_VARIANT_COOP_KHR ? d->coop_khr_why : v == TRR_VARIANT_COOP_NV ? d->coop_nv_why : d->coop2_why;
    if (!on) snprintf(why, cap, "%s", no);
    return on;
}

/* The cooperative kernel's matrix shape and subgroup size for variant v and input dtype in: on
 * VK_KHR_cooperative_matrix the shape picked from the device's list (vk_coop_shape.h) on the device's subgroup
 * size; the NV extensions' kernels take 16x16x16 on 32-wide subgroups. */

trr_vk_coop_geom trr_vk_coop_geometry(const trr_vk_device *d, int v, trr_dtype in) {
    trr_vk_coop_geom g = {16, 16, 16, 32};
    if (v == TRR_VARIANT_COOP_KHR) {
        const trr_vk_coop_shape *s = in == TRR_BF16 ? &d->phys.coop_bf16_shape : &d->phys.coop_f16_shape;
        if (s->m) g.tm = (int)s->m, g.tn = (int)s->n, g.tk = (int)s->k;
        g.sg = (int)d->phys.subgroup_size;
    }
    return g;
}

/* Subgroups along M for the cooperative kernel: the split of threads/SG subgroups whose per-subgroup patch
 * ((BM/WM) x (BN/WN), whole TM x TN tiles) is closest to square; 0 when none fits. A patch holds at most 256
 * accumulator floats per invocation (32 16x16 tiles on 32-wide subgroups). */
int trr_vk_coop_wm(const trr_config *cfg, trr_vk_coop_geom g) {
    if (cfg->threads <= 0 || g.sg <= 0 || cfg->threads % g.sg) return 0;
    int nsg = cfg->threads / g.sg, best = 0, best_score = 0;
    for (int wm = 1; wm <= nsg; wm++) {
        if (nsg % wm) continue;
        int wn = nsg / wm;
        if (cfg->block_m <= 0 || cfg->block_n <= 0 || cfg->block_m % (g.tm * wm) || cfg->block_n % (g.tn * wn)) continue;
        int pm = cfg->block_m / wm, pn = cfg->block_n / wn;
        if ((int64_t)pm * pn > 256 * (int64_t)g.sg) continue; /* accumulator registers */
        int score = pm > pn ? pm - pn : pn - pm;
        if (!best || score < best_score) {
            best = wm;
            best_score = score;
        }
    }
    return best;
}

int trr_vk_coop_producer_stages(int stages) {
    return stages >= 4 && stages <= 6;
}

/* The cooperative kernel's workgroup: config.threads multiply; stages 4, 5 and 6 add two groups of 1, 2 and 4
 * producer subgroups that read and stage the slices (matmul_coop.comp). cm2 runs config.threads. */
int trr_vk_coop_invocations(const trr_config *cfg, trr_vk_coop_geom g) {
    const int producers = cfg->variant != TRR_VARIANT_CM2 && trr_vk_coop_producer_stages(cfg->stages)
                              ? 2 << (cfg->stages - 4)
                              : 0;
    return cfg->threads + producers * g.sg;
}

/* Shared memory of the cooperative kernel (kernels/vulkan/matmul_coop.comp): two buffers of each staged slice
 * in 16-byte words with one word of padding per row, for the larger of the two layouts, after the words
 * left unused ahead of them. */
static uint64_t coop_words(int rows_nt, int cols_nt) {
    uint64_t a = (uint64_t)rows_nt * (uint64_t)(cols_nt / 8 + 1), b = (uint64_t)cols_nt * (uint64_t)(rows_nt / 8 + 1);
    return a > b ? a : b;
}

static uint64_t coop_shared(const trr_config *c) {
    return 16ull * (TRR_VK_COOP_SMEM_SKIP + 2ull * (coop_words(c->block_m, c->block_k) + coop_words(c->block_k, c->block_n)));
}

/* matmul_cm2.comp (past coop_config_ok's common checks): workgroup-scope matrices of the whole tile, staged by
 * the driver (no shared arrays of its own), so only the extension's limits apply: the workgroup size and the
 * largest flexible dimension; and stages, the slices its interior loop unrolls (1 to TRR_VK_CM2_MAX_STAGES). */
#define TRR_VK_CM2_MAX_STAGES 8
static int cm2_config_ok(const trr_vk_device *d, const trr_config *c, char *why, size_t cap) {
    uint32_t max_threads = d->phys.coop2_max_threads ? d->phys.coop2_max_threads : 256;
    uint32_t max_dim = d->phys.coop2_max_dim ? d->phys.coop2_max_dim : 256;
    if (c->stages < 1 || c->stages > TRR_VK_CM2_MAX_STAGES) {
        snprintf(why, cap, "stages = %d: cm2 unrolls 1 to %d slices per iteration of its interior loop", c->stages,
                 TRR_VK_CM2_MAX_STAGES);
        return 0;
    }
    if ((uint32_t)c->threads > max_threads) {
        snprintf(why, cap, "threads = %d; workgroup-scope matrices allow up to %u", c->threads, max_threads);
        return 0;
    }
    const int dims[3] = {c->block_m, c->block_n, c->block_k};
    for (int i = 0; i < 3; i++)
        if (dims[i] <= 0 || dims[i] % 16 || (uint32_t)dims[i] > max_dim) {
            snprintf(why, cap, "block %dx%dx%d: each side must be a multiple of 16 up to %u", c->block_m,
                     c->block_n, c->block_k, max_dim);
            return 0;
        }
    return 1;
}

/* The config runs on the cooperative kernel: whole TM x TN x TK tiles per subgroup (trr_vk_coop_geometry), the slices
 * fit in shared memory, and the A buffers hold the epilogue scratch (TM·TN/4 words per subgroup); on
 * matmul_cm2.comp (variant cm2), cm2_config_ok's rules instead. Else 0, with the reason in why. */
static int coop_config_ok(const trr_vk_device *d, const trr_config *c, trr_dtype in, char *why, size_t cap) {
    const trr_vk_coop_geom g = trr_vk_coop_geometry(d, c->variant, in);
    if (c->threads <= 0 || c->threads % g.sg) {
        snprintf(why, cap, "threads = %d is not whole %d-wide subgroups", c->threads, g.sg);
        return 0;
    }
    if (c->group_m <= 0) {
        snprintf(why, cap, "group_m must be positive");
        return 0;
    }
    if (c->variant == TRR_VARIANT_CM2) return cm2_config_ok(d, c, why, cap);
    if (c->stages < 1 || c->stages > 7) {
        snprintf(why, cap, "stages = %d: the kernel's pipelines are 1, 2, 3, 4 to 6 (2, 4 or 8 producer subgroups) "
                 "and 7 (2 with the fragments pipelined)", c->stages);
        return 0;
    }
    /* The producer and multiplying subgroups reach their barriers on separate paths: NVIDIA's hardware counts
     * barrier arrivals per subgroup, SPIR-V leaves it undefined, so other devices keep stages 1-3 and 7. */
    if (trr_vk_coop_producer_stages(c->stages) && d->phys.props.vendorID != TRR_VK_VENDOR_NVIDIA) {
        snprintf(why, cap, "stages %d (producer subgroups) runs on NVIDIA devices only: its two kinds of subgroup "
                 "meet the same barriers on separate paths", c->stages);
        return 0;
    }
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    const int all = trr_vk_coop_invocations(c, g);
    if ((uint32_t)all > lim->maxComputeWorkGroupInvocations || (uint32_t)all > lim->maxComputeWorkGroupSize[0]) {
        snprintf(why, cap, "%d threads and the producer subgroups of stages %d make %d invocations; the device allows %u",
                 c->threads, c->stages, all, lim->maxComputeWorkGroupInvocations);
        return 0;
    }
    if (c->block_k <= 0 || c->block_k % g.tk) {
        snprintf(why, cap, "block_k = %d is not a multiple of the %dx%dx%d matrices' depth", c->block_k, g.tm, g.tn,
                 g.tk);
        return 0;
    }
    if (!trr_vk_coop_wm(c, g)) {
        snprintf(why, cap, "%d subgroups cannot split a %dx%d block into whole %dx%d tiles of at most %d floats "
                 "per invocation each", c->threads / g.sg, c->block_m, c->block_n, g.tm, g.tn, 256);
        return 0;
    }
    uint64_t shared = coop_shared(c), limit = d->phys.props.limits.maxComputeSharedMemorySize;
    if (shared > limit) {
        snprintf(why, cap, "its slices need %llu bytes of shared memory; the device has %llu",
                 (unsigned long long)shared, (unsigned long long)limit);
        return 0;
    }
    uint64_t a_min = (uint64_t)c->block_m * (uint64_t)(c->block_k / 8 + 1), a_t = (uint64_t)c->block_k * (uint64_t)(c->block_m / 8 + 1);
    if (a_t < a_min) a_min = a_t;
    if ((uint64_t)(g.tm * g.tn / 4) * (uint64_t)(c->threads / g.sg) > 2ull * a_min) {
        snprintf(why, cap, "the %dx%d A slices cannot hold the epilogue scratch of %d subgroups", c->block_m,
                 c->block_k, c->threads / g.sg);
        return 0;
    }
    return 1;
}

static int pow2_at_least(int64_t v, int lo, int hi) {
    int p = lo;
    while (p < hi && p < v) p *= 2;
    return p;
}

/* lavapipe (llvmpipe) ends an invocation's loops after 65535 iterations in all, counted over every loop of the
 * shader (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, there to stop runaway loops), and returns what the cut-short
 * loops left. A config whose loops would run longer is refused there; elsewhere loops are unbounded. */
static uint64_t loop_budget(const trr_vk_device *d) {
    int llvmpipe = d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
                   !strncmp(d->phys.props.deviceName, "llvmpipe", 8);
    return llvmpipe ? 65535u : UINT64_MAX;
}

uint64_t trr_vk_loop_budget(const trr_vk_device *d) {
    return loop_budget(d);
}

/* 128x128 tiles from which the cooperative kernel takes producer subgroups on NVIDIA (fill_coop): with one
 * workgroup per SM, fewer tiles leave a ragged last wave that the two-workgroup default fills. And the depth
 * from which they do: the producers' pipeline fills and drains in every tile, which a short K does not repay;
 * the producers overtake the uniform 128x128x16 s3 tile from K = 2048 on NVIDIA H200 (docs/performance.md). */
#define TRR_VK_COOP_PRODUCER_TILES 512
#define TRR_VK_COOP_PRODUCER_MIN_K 2048

/* split_k where the config leaves it (core/matmul_split.h): a GPU's grid that leaves most compute units idle is
 * split along K, where the driver says how many units there are; CPU devices, whose few cores any grid fills, run
 * whole. */
static int split_for_grid(const trr_vk_device *d, const trr_call *call, const trr_config *c) {
    if (d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) return 1;
    return trr_matmul_split_for_call(call, c, (int)d->phys.compute_units);
}

/* matmul_cm2.comp's tiles, as llama.cpp's cooperative_matrix2 matmul takes them on NVIDIA: slices 64 deep, which
 * the driver loads and pipelines, over 256 threads; 128x256 tiles where at least TRR_VK_CM2_WIDE_TILES of them
 * fill the grid, else 128x128, and 64x64 over 128 threads where fewer than 128 tiles of 128x128 would (small).
 * An f32 output that folds (matmul_fold.h) keeps a second accumulator of the whole tile: 128x128 at most, whose
 * two take what one 128x256 does. stages 4: 256 of K per unrolled iteration of the interior loop. */
#define TRR_VK_CM2_WIDE_TILES 256
static void fill_cm2(const trr_vk_device *d, const trr_call *call, trr_config *c, int small) {
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    const int64_t wide_tiles = ((call->rows + 127) / 128) * ((call->cols + 255) / 256) * batch;
    const int wide = !small && wide_tiles >= TRR_VK_CM2_WIDE_TILES && !trr_matmul_folds(call, 4096);
    if (!c->block_m) c->block_m = small ? 64 : 128;
    if (!c->block_n) c->block_n = small ? 64 : wide ? 256 : 128;
    if (!c->block_k) c->block_k = 64;
    if (!c->threads) c->threads = small ? 128 : 256;
    if (!c->group_m) c->group_m = 8;
    if (!c->stages) c->stages = 4;
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = split_for_grid(d, call, c);
}

/* The cooperative-matrix variants' heuristic (c->variant names one of them). */
static void fill_coop(const trr_vk_device *d, const trr_call *call, trr_config *c) {
    /* 128x128x16 tiles over 8 subgroups (64x32 each): the fastest of the tiles swept on NVIDIA H100 (wider
     * tiles spill past 180 registers and fit one workgroup per SM); 64x64x32 when 128x128 leaves fewer than 128
     * workgroups, where the tuner found the small tiles faster (the tuning data). Other tiles come through the
     * config; check_config says which the kernel cannot take. */
    /* a batch's matrices each have their own tiles (grid z) */
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    int64_t tiles = ((call->rows + 127) / 128) * ((call->cols + 127) / 128) * batch;
    int small = tiles < 128;
    int bm = small ? 64 : 128, bn = small ? 64 : 128, bk = small ? 32 : 16;
    if (c->variant == TRR_VARIANT_CM2) {
        fill_cm2(d, call, c, small);
        return;
    }
    /* whole slices of the device's matrix depth (KHR shapes other than 16x16x16 have not been measured) */
    const trr_vk_coop_geom g = trr_vk_coop_geometry(d, c->variant, call->x.dtype);
    if (bk < g.tk) bk = g.tk;
    /* Producer subgroups on NVIDIA where the grid fills the GPU several times over and K is deep: 128x128x32
     * tiles multiplied by 4 subgroups of 64x64 while 8 more read and stage the slices (stages 6), one workgroup
     * per SM (166 registers); ahead of the 128x128x16 s3 default on NVIDIA H200 (docs/performance.md). The
     * barriers sit on the two kinds of subgroup's
     * separate paths, which NVIDIA's hardware counts per subgroup; other vendors keep the uniform pipeline. */
    const int producers = d->phys.props.vendorID == TRR_VK_VENDOR_NVIDIA && g.sg == 32 &&
                          tiles >= TRR_VK_COOP_PRODUCER_TILES && call->k >= TRR_VK_COOP_PRODUCER_MIN_K &&
                          !c->block_m && !c->block_n && !c->block_k && !c->threads && !c->stages;
    if (producers) {
        bm = bn = 128;
        bk = 32;
        c->threads = 128;
        c->stages = 6;
    }
    if (!c->block_m) c->block_m = bm;
    if (!c->block_n) c->block_n = bn;
    if (!c->block_k) c->block_k = bk;
    if (!c->threads) c->threads = 256;
    if (!c->group_m) c->group_m = 8;
    /* matmul_coop.comp's pipeline: stages 2 stages the next slice right after the multiply, then reads the one
     * after it; 3 is the same loop unrolled by two, which helps the KHR build and hurts the NV one on NVIDIA
     * H100 (the tuning data); 4 to 6 (producer subgroups) are taken above, on NVIDIA only (coop_config_ok
     * refuses them elsewhere); 7 (stages 2 with the fragments pipelined across k steps and slices) only through
     * the config or the tuning data until measured. In the uniform pipelines block_k 32 at 128x128 stays one
     * workgroup per SM (194-202 registers) however few of a slice's reads a thread holds. */
    if (!c->stages) c->stages = c->variant == TRR_VARIANT_COOP_KHR ? 3 : 2;
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = split_for_grid(d, call, c);
}

/* Shared memory of the SIMT kernel (kernels/vulkan/matmul.comp): per stage, block_k rows of 4-element words
 * with one word of padding, for A and for B. */
static uint64_t simt_shared(const trr_config *c) {
    const uint64_t words = (uint64_t)(c->block_m + 3) / 4u + (uint64_t)(c->block_n + 3) / 4u + 2u;
    return 16ull * (uint64_t)c->stages * (uint64_t)c->block_k * words;
}

/* The SIMT matmul's heuristic. */
static void fill_simt(const trr_vk_device *d, const trr_call *call, trr_config *c) {
    /* GPUs: 128x128x8 tiles from 1024x2048 outputs up, 64x64 with 32-deep slices below (faster there than
     * 128x128x16 or 64x64x16 on NVIDIA H100 f32: the tuning data). 8-deep slices as the CUDA SIMT kernel takes:
     * a little ahead of 16-deep on NVIDIA H200 (docs/performance.md), and NVIDIA's compiler builds the half as
     * long unrolled slice in seconds rather than about half a minute. 256x128x8 (16x8 micro-tiles) is barely
     * faster but compiles as slowly. */
    int gpu = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    const int64_t outputs = call->rows * call->cols * (call->batch > 1 ? call->batch : 1);
    int big = gpu && outputs > (int64_t)1024 * 1024;
    /* twice as deep slices where K would run past lavapipe's loop budget in 16-deep ones */
    if (!c->block_k)
        c->block_k = big ? 8 : gpu || (uint64_t)(call->k + 15) / 16u + 300u > loop_budget(d) ? 32 : 16;
    /* CPU devices: 128x128 tiles (8x8 per invocation) from 256x256 outputs up, where 16-deep slices leave them
     * room in lavapipe's 32 KiB; they take markedly less CPU time there than 64x64 (docs/performance.md) */
    if (!gpu && !c->block_m && !c->block_n && outputs >= (int64_t)256 * 256 && c->block_k <= 16) {
        trr_config wide = *c;
        wide.block_m = wide.block_n = 128;
        wide.stages = 1;
        if (simt_shared(&wide) <= d->phys.props.limits.maxComputeSharedMemorySize) big = 1;
    }
    /* CPU devices: products of at most 16 rows (a long K's skinny cases) in 8- or 16-row tiles, 8 outputs an
     * invocation: a 64x64 tile there spends most of its work on rows that do not exist (docs/performance.md) */
    if (!gpu && !c->block_m && !c->block_n && !c->threads && call->rows <= 16) {
        c->block_m = call->rows <= 8 ? 8 : 16;
        c->block_n = call->cols <= 32 ? 32 : 64;
        c->threads = c->block_m * c->block_n / 8;
    }
    if (!c->block_m) c->block_m = big ? 128 : 64;
    if (!c->block_n) c->block_n = big ? 128 : 64;
    if (!c->threads) c->threads = 256;
    if (!c->group_m) c->group_m = 8;
    /* double-buffered slices (one barrier per slice) on GPUs where both fit in shared memory; lavapipe keeps
     * its 32 KiB for the 32-deep slices deep K needs there */
    if (!c->stages) {
        c->stages = gpu ? 2 : 1;
        if (c->stages == 2 && simt_shared(c) > d->phys.props.limits.maxComputeSharedMemorySize) c->stages = 1;
    }
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = split_for_grid(d, call, c);
}

static int max_threads_of(const trr_vk_device *d) {
    int max_threads = (int)d->phys.props.limits.maxComputeWorkGroupInvocations;
    return max_threads > 1024 ? 1024 : max_threads;
}

/* The element-wise and planes rules. */
void trr_vk_choose_stream(const trr_vk_device *d, trr_call *call) {
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    trr_config *c = &call->config;
    const int max_threads = max_threads_of(d);
    if (!c->threads) c->threads = 256 <= max_threads ? 256 : max_threads;
    /* The widest load the layout allows (16-byte words for copy, 4-element vectors for add, gelu, silu,
     * scalars for rgb_to_grey), unless a block_n already given holds no whole number of them per
     * invocation; then the narrow one. */
    int wide = 1, narrow = 1;
    if (desc->bytewise) {
        int es = (int)trr_vk_dtype_bytes(call->x.dtype);
        wide = 16 / es;
        narrow = 4 / es;
    } else if (desc->shape == TRR_SHAPE_ELEMENTWISE && !desc->converts) { /* cast.comp reads single elements */
        /* Views that do not fold run slice by slice, each with its own offsets, and the kernel takes
         * vectors in every slice whose layout allows: vectors are asked for if any slice can have them (the
         * offsets' residues mod 4 repeat within 4 slices of a group and within 4 groups). The rest fall back
         * with the same loads per invocation. */
        const int64_t count = call->slice_count > 0 ? call->slice_count : 1;
        for (int64_t s = 0; s < call->slices && wide == 1; s++) {
            if (s % count >= 4) { /* the next group */
                s += count - s % count - 1;
                continue;
            }
            if (s / count >= 4) break;
            trr_call slice = trr_call_slice(call, s);
            if (trr_vk_elementwise_vec4_layout(&slice)) wide = 4;
        }
    }
    if (!c->vector_width)
        c->vector_width = !c->block_n || c->block_n % (c->threads * wide) == 0 ? wide : narrow;
    /* Loads per invocation: 2 for a byte move (copy), 2 for element-wise ops of no transcendental work (add),
     * 4 for the others (gelu, silu) and for rgb_to_grey; on GPUs 1 for the element-wise ops that compute (add,
     * gelu, silu) from GPU_ONE_LOAD_ELEMENTS elements a dispatch, where one load measured ahead of four on
     * NVIDIA H200 at full clock (and behind on smaller dispatches; docs/performance.md). */
    if (!c->block_n) {
        const int computes = desc->shape == TRR_SHAPE_ELEMENTWISE && !desc->bytewise;
        const int one = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU && computes &&
                        call->rows * call->cols >= GPU_ONE_LOAD_ELEMENTS;
        int loads = one                                ? 1
                    : desc->bytewise                   ? COPY_WORDS_PER_INVOCATION
                    : computes && !desc->transcendental ? ADD_LOADS_PER_INVOCATION
                                                       : STREAM_LOADS_PER_INVOCATION;
        c->block_n = trr_config_product(trr_config_product(loads, c->threads), c->vector_width);
    }
}

/* The rows (softmax) and row-reduce (row_sum) rules. */
void trr_vk_choose_rowwise(const trr_vk_device *d, trr_call *call) {
    const int rows = trr_op_desc_get(call->op)->shape == TRR_SHAPE_ROWS;
    trr_config *c = &call->config;
    const int max_threads = max_threads_of(d);
    char why[192];
    const int cpu = d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    /* GPUs, measured on NVIDIA H200 (docs/performance.md): row_sum on the subgroup
     * kernel over up to GPU_ROW_SUM_THREADS threads, which take a row of up to 8192 in one iteration of 8
     * loads; short softmax rows on the subgroup-per-row kernel, GPU_SOFTMAX_SG_THREADS / 32 rows a
     * workgroup. */
    if (!c->variant && !cpu) {
        if (!rows) {
            const int wide = call->cols >= GPU_ROW_SUM_WIDE_MIN && call->cols <= GPU_ROW_SUM_WIDE_MAX;
            const int th = c->threads ? c->threads
                           : wide     ? pow2_at_least(call->cols / 8, 256, GPU_ROW_SUM_WIDE_THREADS)
                                      : pow2_at_least(call->cols / 32, 64, GPU_ROW_SUM_THREADS);
            if (row_sum_sg_runs(d, th, why, sizeof why)) {
                c->threads = th;
                c->variant = TRR_VARIANT_SUBGROUP;
                if (!c->vector_width) c->vector_width = 4;
                if (!c->block_n)
                    c->block_n = trr_config_product(trr_config_product(th, c->vector_width),
                                                    wide ? GPU_ROW_SUM_WIDE_LOADS : GPU_ROW_SUM_LOADS);
            }
        } else if (call->cols <= SOFTMAX_SG_AUTO_MAX_COLS) {
            const int th = c->threads ? c->threads : GPU_SOFTMAX_SG_THREADS;
            if (softmax_sg_runs(d, call, th, why, sizeof why)) {
                c->threads = th;
                c->variant = TRR_VARIANT_SUBGROUP;
            }
        }
    }
    /* About 8 elements per invocation (32 for softmax, whose rows stay in registers), within [64, 1024]:
     * enough parallelism per row without idle lanes; on GPUs the widest register rows over 1024. */
    if (!c->threads) {
        c->threads = pow2_at_least(call->cols / (rows ? 32 : 8), 64, max_threads);
        if (rows && !cpu && call->cols > GPU_SOFTMAX_WIDE_COLS && call->cols <= 16384)
            c->threads = pow2_at_least(1024, 64, max_threads);
        const int64_t sg = d->phys.subgroup_size;
        if (rows && !cpu && c->variant != TRR_VARIANT_SUBGROUP && sg >= 1 &&
            call->cols <= GPU_SOFTMAX_ROWS_MAX_COLS && trr_vk_softmax_regs_layout(d, call)) {
            int64_t th = (call->cols / 4 + GPU_SOFTMAX_ROWS_VECTORS - 1) / GPU_SOFTMAX_ROWS_VECTORS;
            if (th < 64) th = 64;
            th = (th + sg - 1) / sg * sg; /* whole subgroups */
            if (th <= max_threads) c->threads = (int)th;
        }
    }
    /* CPU devices: the subgroup kernels where they were measured faster on lavapipe (the tuning data):
     * row_sum at any length, softmax up to 1024 columns (longer rows do not fit its registers on 8-wide
     * subgroups). */
    if (!c->variant) {
        const int sg = cpu && (!rows ? row_sum_sg_runs(d, c->threads, why, sizeof why)
                                     : softmax_sg_runs(d, call, c->threads, why, sizeof why));
        c->variant = sg ? TRR_VARIANT_SUBGROUP : TRR_VARIANT_SIMT;
    }
    if (!c->vector_width) c->vector_width = !rows && c->variant == TRR_VARIANT_SUBGROUP ? 4 : 1;
    if (!c->block_n) {
        /* softmax: the register kernel's row, 4 x threads x the vectors per invocation the row needs, where
         * it fits (at most 16); else threads. row_sum_sg.comp: what a workgroup loads per loop iteration,
         * ROW_SUM_LOADS per invocation (row_sum.comp ignores it). */
        int64_t vpt = (call->cols / 4 + c->threads - 1) / c->threads;
        int regs = rows && trr_vk_softmax_regs_layout(d, call) && vpt >= 1 && vpt <= 16;
        c->block_n = regs ? 4 * (int)vpt * c->threads
                     : !rows && c->variant == TRR_VARIANT_SUBGROUP
                         ? trr_config_product(trr_config_product(c->threads, c->vector_width), ROW_SUM_LOADS)
                         : c->threads;
    }
}

void trr_vk_choose_matmul(const trr_vk_device *d, trr_call *call) {
    trr_config *c = &call->config;
    if (!c->variant) {
        /* The first cooperative-matrix variant that runs the call with the config it completes, in the order
         * measured fastest on NVIDIA H100 (coop_khr, coop_nv, cm2: docs/performance.md), else simt: a
         * given tile that no cooperative kernel takes runs on the SIMT one. */
        static const int order[] = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV, TRR_VARIANT_CM2};
        char why[192];
        for (int i = 0; i < 3 && !c->variant; i++) {
            if (!matmul_variant_runs(d, call, order[i], why, sizeof why)) continue;
            trr_config t = *c;
            t.variant = order[i];
            fill_coop(d, call, &t);
            if (coop_config_ok(d, &t, call->x.dtype, why, sizeof why)) *c = t;
        }
        if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    }
    if (trr_vk_coop_variant(c->variant))
        fill_coop(d, call, c);
    else
        fill_simt(d, call, c);
}

/* What every rule checks first: a workgroup the device takes. */
trr_status trr_vk_check_threads(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    if (c->threads <= 0 || (uint32_t)c->threads > lim->maxComputeWorkGroupInvocations ||
        (uint32_t)c->threads > lim->maxComputeWorkGroupSize[0])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d; the device allows 1..%u", c->threads,
                         lim->maxComputeWorkGroupInvocations);
    return TRR_OK;
}

trr_status trr_vk_check_stream(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    const trr_config *c = &call->config;
    if (desc->bytewise) {
        /* the copy kernel moves 4- or 16-byte words */
        int es = (int)trr_vk_dtype_bytes(call->x.dtype), word = c->vector_width * es;
        if (c->vector_width <= 0 || (word != 4 && word != 16))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s vector_width = %d; it moves 4- or 16-byte words (%d or %d elements of "
                             "%d bytes)", desc->name, c->vector_width, 4 / es, 16 / es, es);
    } else if (desc->shape == TRR_SHAPE_PLANES) {
        if (c->vector_width != 1)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s vector_width = %d; the kernel reads single elements (1)", desc->name,
                             c->vector_width);
    } else if (c->vector_width != 1 && c->vector_width != 4) {
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s vector_width = %d; the kernel reads single elements (1) or 4-element "
                         "vectors (4)", desc->name, c->vector_width);
    }
    int64_t per_load = (int64_t)c->threads * c->vector_width;
    if (c->block_n < per_load || c->block_n % per_load || c->block_n / per_load > 64)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: block_n = %d must be threads x vector_width (%d x %d) times 1..64 loads per "
                         "invocation",
                         c->block_n, c->threads, c->vector_width);
    return TRR_OK;
}

trr_status trr_vk_check_rowwise(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    const int rows = trr_op_desc_get(call->op)->shape == TRR_SHAPE_ROWS; /* else the row-reduce rule */
    const char *name = trr_op_desc_get(call->op)->name;
    /* softmax's register kernels take any whole number of subgroups (softmax_sg.comp one row per subgroup,
     * softmax_rows.comp merging its subgroups' pairs; softmax_sg_runs checks the former below); the other row
     * kernels reduce over a tree */
    if (softmax_rows_runs(d, call, c)) {
        if (c->threads % (int)d->phys.subgroup_size)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s threads = %d must be a whole number of %u-wide subgroups",
                             name, c->threads, d->phys.subgroup_size);
    } else if (!(rows && c->variant == TRR_VARIANT_SUBGROUP) && (c->threads & (c->threads - 1))) {
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d must be a power of two (tree reduction)",
                         c->threads);
    }
    /* softmax: block_n bounds the register kernel's row (softmax_rows.comp holds at most 16 vectors per
     * invocation); row_sum ignores it */
    if (rows &&
        (c->block_n < c->threads || c->block_n % c->threads || c->block_n / c->threads > 64))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s block_n = %d must be threads (%d) times 1..64 elements per invocation",
                         name, c->block_n, c->threads);
    if ((uint64_t)c->threads * 8 > lim->maxComputeSharedMemorySize)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d needs more shared memory than %u bytes",
                         c->threads, lim->maxComputeSharedMemorySize);
    if (rows && c->variant == TRR_VARIANT_SUBGROUP) {
        char why[192];
        if (!softmax_sg_runs(d, call, c->threads, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s variant subgroup: %s", name, why);
    } else if (!rows && c->variant == TRR_VARIANT_SUBGROUP) {
        char why[192];
        if (!row_sum_sg_runs(d, c->threads, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s variant subgroup: %s", name, why);
    } else if (c->variant != TRR_VARIANT_SIMT && c->variant != TRR_VARIANT_AUTO) {
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s variant %s; its kernels are simt and subgroup",
                         name, variant_name(c->variant));
    }
    if (!rows && c->vector_width != 1 && c->vector_width != 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s vector_width = %d; the kernels read single elements (1) or, variant "
                         "subgroup, 4-element vectors where rows start on one (4)", name, c->vector_width);
    /* row_sum_sg.comp loads block_n / (threads x vector_width) elements or vectors per invocation per
     * iteration, all before it adds any (row_sum.comp ignores block_n) */
    int64_t row_loads = 4;
    if (!rows && c->variant == TRR_VARIANT_SUBGROUP) {
        int64_t per_load = (int64_t)c->threads * c->vector_width;
        row_loads = c->block_n / per_load;
        if (c->block_n % per_load || row_loads < 1 || row_loads > ROW_SUM_MAX_LOADS)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s block_n = %d must be threads x vector_width (%d x %d) times 1..%d "
                             "loads per invocation", name, c->block_n, c->threads, c->vector_width, ROW_SUM_MAX_LOADS);
    }
    {
        /* softmax.comp reads the row twice, row_sum.comp once, four elements per invocation per iteration
         * (row_sum_sg.comp: row_loads, of single elements where rows do not start on a vector); the tails
         * and the tree (log2 threads) add a few dozen at most */
        uint64_t per_iter = (uint64_t)(row_loads < 4 ? row_loads : 4) * (uint64_t)c->threads;
        uint64_t per_pass = (uint64_t)call->cols / per_iter + (uint64_t)row_loads + 4u;
        uint64_t loops = (rows ? 2u : 1u) * per_pass + 32u;
        /* row_sum_sg.comp's first invocation adds one sum per subgroup */
        if (!rows && c->variant == TRR_VARIANT_SUBGROUP)
            loops += (uint64_t)c->threads / (d->phys.subgroup_size ? d->phys.subgroup_size : 1);
        if (loops > loop_budget(d))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s rows of %lld over %d threads take about %llu loop iterations per "
                             "invocation; %s stops at %llu (more threads per row shorten them)",
                             name, (long long)call->cols,
                             c->threads, (unsigned long long)loops, d->phys.props.deviceName,
                             (unsigned long long)loop_budget(d));
    }
    return TRR_OK;
}

trr_status trr_vk_check_matmul(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    int tm, tn;
    if (c->split_k < 1 || c->split_k > TRR_MATMUL_MAX_SPLIT)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: split_k = %d; 1 to %d slices of K", c->split_k,
                         TRR_MATMUL_MAX_SPLIT);
    if (c->split_k > 1) {
        /* the slices' f32 products are one binding of the scratch buffer */
        const int64_t slices = trr_matmul_k_slice_count(trr_matmul_call_slices(call));
        const uint64_t partials = (uint64_t)slices * (uint64_t)call->rows * (uint64_t)call->cols * 4u;
        if (slices > 1 && partials > lim->maxStorageBufferRange)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: split_k = %d: the %lld slices' f32 products of %lldx%lld take %llu bytes; "
                             "the device binds at most %u", c->split_k, (long long)slices, (long long)call->rows,
                             (long long)call->cols, (unsigned long long)partials, lim->maxStorageBufferRange);
    }
    if (c->group_m <= 0 || c->block_k <= 0)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: group_m and block_k must be positive");
    char why[192] = "";
    if (!matmul_variant_runs(d, call, c->variant, why, sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: matmul variant %s: %s", variant_name(c->variant), why);
    if (trr_vk_coop_variant(c->variant)) {
        if (!coop_config_ok(d, c, call->x.dtype, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: matmul %dx%dx%d over %d threads on %s: %s",
                             c->block_m, c->block_n, c->block_k, c->threads, variant_name(c->variant), why);
        return TRR_OK;
    }
    if (c->stages != 1 && c->stages != 2)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: matmul (simt): stages = %d; the kernel keeps 1 or 2 slices in shared memory",
                         c->stages);
    const uint64_t shared = simt_shared(c);
    if (!trr_vk_micro_tile(c, &tm, &tn))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: matmul (simt): block %dx%d over %d threads gives no TMxTN register tile (each "
                         "at most 16)", c->block_m, c->block_n, c->threads);
    if (shared > lim->maxComputeSharedMemorySize)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: matmul (simt): %d stages of %dx%dx%d tiles need %llu bytes of shared memory; "
                         "the device has %u", c->stages, c->block_m, c->block_n, c->block_k,
                         (unsigned long long)shared, lim->maxComputeSharedMemorySize);
    /* The slice loop's body is unrolled, and its length sets the compile time: lavapipe takes 7 s for 2048
     * multiply-adds and 64 loads per invocation (64x64x32 over 64 threads), 89 s for 4096 and 1024 (8x8x64
     * over one), minutes past that. The tuner's largest tiles unroll 2048 and 32. */
    const uint64_t th = (uint64_t)c->threads, bk = (uint64_t)c->block_k;
    const uint64_t fmas = bk * (uint64_t)tm * (uint64_t)tn;
    const uint64_t loads = ((uint64_t)c->block_m * bk + th - 1) / th + ((uint64_t)c->block_n * bk + th - 1) / th;
    if (fmas > 4096 || loads > 256)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: matmul (simt): a %dx%dx%d tile over %d threads unrolls %llu multiply-adds and "
                         "%llu loads per invocation and slice; the kernel takes at most 4096 and 256 (more "
                         "threads or a shallower block_k)", c->block_m, c->block_n, c->block_k, c->threads,
                         (unsigned long long)fmas, (unsigned long long)loads);
    /* matmul.comp runs one loop iteration per BK-deep slice (its inner loops are unrolled), plus the
     * epilogue's at most 16 x 16 */
    if ((uint64_t)(call->k + c->block_k - 1) / (uint64_t)c->block_k + 300u > loop_budget(d))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: matmul (simt): K = %lld in %d-deep slices takes more loop iterations per "
                         "invocation than the %llu %s runs (a larger block_k takes fewer)", (long long)call->k,
                         c->block_k, (unsigned long long)loop_budget(d), d->phys.props.deviceName);
    return TRR_OK;
}
