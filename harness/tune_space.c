/* The tuner's search space (tune_space.h) as data: one table row per backend kind, op set and input dtype,
 * listing configs in the front-end vocabulary. A row is a product of value lists (an empty list means "the
 * backend's choice"), optionally crossed with an explicit list of configs whose non-zero fields take the place
 * of the lists. Rows for a named backend hide the generic rows (backend NULL) for the same op and dtype.
 *
 * What the tables hold, per backend kind:
 *   cuda    matmul f16 and bf16: the known-good NVIDIA configs of docs/ops.md on mma.sync (variant mma), each with split-K 1, 2
 *           and 4, its few-row tiles with split-K 1 to 8, and the Hopper kernel's tiles (variant wgmma) with split-K 1 to 8 (prune_shape keeps splits
 *           for grids smaller than the device), and its single-block tiles on the stream-K schedule (variant
 *           streamk; prune_shape drops it where the tiles make whole waves); matmul f32: SIMT
 *           tiles (BM x BN x BK, threads), also with split-K; streaming ops: threads x vector width; softmax
 *           and row_sum: threads per row.
 *   opencl  matmul: work-group tiles (BM x BN x BK, threads, variant simt), for f16 and bf16 the tensor-core
 *           kernel's tiles (variant mma), for 8-bit floats those in two stages and the wgmma kernel's tiles
 *           (variant wgmma); streaming: work-group size x vector width;
 *           softmax and row_sum: work-group size.
 *   vulkan  matmul: work-group tiles (simt), plus cooperative-matrix tiles for f16 on each cooperative variant
 *           (coop_khr, coop_nv, cm2), for bf16 on coop_khr and cm2 and for 8-bit floats on coop_khr and coop_nv,
 *           and cm2's own deeper tiles (the device's
 *           check_config drops those it lacks); streaming: work-group size
 *           x elements per invocation (block_n); softmax: work-group size on both kernel families (simt,
 *           subgroup; block_n, the register kernel's row, follows from it); row_sum: work-group size.
 *   cpu     matmul: cache blocks (BM x BN x BK), and split-K on grids smaller than the cores; the element-wise
 *           ops: elements per task (block_n); rgb_to_grey,
 *           softmax and row_sum read no field there (trr_config_fields_used), so they have no candidates.
 * Everything else (stages, vector width of the GPU matmuls, GROUP_M) is left to each backend's heuristic, which
 * knows its kernels' constraints; check_config then drops whatever a backend cannot run. A field the backend's
 * kernels do not read (trr_config_fields_used) is never swept. */
#include "tune_space.h"

#include "user_op.h"

#include "config_fields.h"
#include "op_table.h"
#include "tune.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define AXIS 8 /* values per list; a list ends at its first 0 */

typedef struct space_row {
    const char *backend; /* NULL: any backend without a row of its own for this op and dtype */
    unsigned shapes;     /* bit (1 << the op's shape rule): a rule's kernels share their tile parameters */
    unsigned in_dtypes;  /* TRR_DTYPE_BIT of the input dtype; 0: any */
    const trr_config *list;
    int n_list;
    int block_m[AXIS], block_n[AXIS], block_k[AXIS], group_m[AXIS], threads[AXIS], stages[AXIS],
        vector_width[AXIS], split_k[AXIS], variant[AXIS];
} space_row;

#define SHAPE(s) (1u << (unsigned)(s))
#define STREAMING (SHAPE(TRR_SHAPE_ELEMENTWISE) | SHAPE(TRR_SHAPE_PLANES))
#define ROWS SHAPE(TRR_SHAPE_ROWS)
#define ROW_REDUCE SHAPE(TRR_SHAPE_ROW_REDUCE)
#define ROWWISE (ROWS | ROW_REDUCE)
#define MATMUL SHAPE(TRR_SHAPE_MATMUL)
#define LIST(a) .list = a, .n_list = (int)(sizeof a / sizeof a[0])

/* f32 matmul on CUDA cores: 16x8 or 8x8 outputs per thread, the two thread tiles the kernel has. */
static const trr_config cuda_f32_tiles[] = {
    {.block_m = 128, .block_n = 256, .block_k = 8, .threads = 256},
    {.block_m = 256, .block_n = 128, .block_k = 8, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 8, .threads = 128},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 128},
    {.block_m = 128, .block_n = 128, .block_k = 8, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 256},
    {.block_m = 128, .block_n = 64, .block_k = 8, .threads = 128},
    {.block_m = 64, .block_n = 128, .block_k = 8, .threads = 128},
    {.block_m = 64, .block_n = 64, .block_k = 8, .threads = 64},
    {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 64},
};

/* f16 matmul on Hopper's wgmma kernel (backend_cuda; block_k 64 is fixed, block_m 256 runs two 128-row blocks
 * as a cluster sharing B, block_m 64 one consumer warpgroup of 256 threads, block_m 192 three of 512): the 128-
 * and 256-wide tiles at two pipeline depths, each unclustered and clustered, the single blocks between them
 * (128 x 96 to 224, 192 x 96, 192 and 208: the widths of 64q + 16 or 32 load B's last columns as a narrow box;
 * 192 x 96's 5 stages fit beside the one store slot a consumer of 16-bit outputs takes, and check_config drops
 * it for f32 outputs and splits), and the 64-row tiles (64 x 64 at two depths: its deep ring feeds long K from
 * memory). Other devices drop them in check_config. */
static const trr_config cuda_wgmma_tiles[] = {
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 384, .stages = 3},
    {.block_m = 128, .block_n = 192, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 128, .block_n = 160, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 128, .block_n = 224, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 192, .block_n = 192, .block_k = 64, .threads = 512, .stages = 3},
    {.block_m = 128, .block_n = 96, .block_k = 64, .threads = 384, .stages = 6},
    {.block_m = 128, .block_n = 144, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 192, .block_n = 208, .block_k = 64, .threads = 512, .stages = 3},
    {.block_m = 192, .block_n = 96, .block_k = 64, .threads = 512, .stages = 5},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 384, .stages = 6},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 256, .block_n = 256, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 256, .block_n = 256, .block_k = 64, .threads = 384, .stages = 3},
    {.block_m = 256, .block_n = 128, .block_k = 64, .threads = 384, .stages = 6},
    {.block_m = 256, .block_n = 128, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 64, .block_n = 128, .block_k = 64, .threads = 256, .stages = 8},
    {.block_m = 64, .block_n = 64, .block_k = 64, .threads = 256, .stages = 12},
    {.block_m = 64, .block_n = 64, .block_k = 64, .threads = 256, .stages = 8},
};

/* mma.sync's few-row tiles (backend_cuda, trr_cuda_mma_small_configs: products of a few rows, language models'
 * decode), 16 and 32 rows by 64, 128 or 256 columns at two pipeline depths; prune_shape drops those taller than M
 * rounded up, and the splits of grids that fill the device. */
static const trr_config cuda_mma_few_tiles[] = {
    {.block_m = 16, .block_n = 128, .block_k = 64, .threads = 128, .stages = 6},
    {.block_m = 16, .block_n = 128, .block_k = 64, .threads = 128, .stages = 4},
    {.block_m = 16, .block_n = 64, .block_k = 64, .threads = 64, .stages = 6},
    {.block_m = 16, .block_n = 64, .block_k = 64, .threads = 128, .stages = 6},
    {.block_m = 16, .block_n = 256, .block_k = 64, .threads = 128, .stages = 4},
    {.block_m = 16, .block_n = 128, .block_k = 128, .threads = 128, .stages = 3},
    {.block_m = 32, .block_n = 128, .block_k = 64, .threads = 128, .stages = 5},
    {.block_m = 32, .block_n = 64, .block_k = 64, .threads = 128, .stages = 6},
};

/* The same kernel on the stream-K schedule (variant streamk): its single-block tiles, no split-K (it splits K
 * its own way). */
static const trr_config cuda_streamk_tiles[] = {
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 384, .stages = 3},
    {.block_m = 128, .block_n = 192, .block_k = 64, .threads = 384, .stages = 4},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 384, .stages = 6},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 384, .stages = 4},
};

/* Work-group tiles for the OpenCL and Vulkan matmuls: micro-tiles of 4x4 to 8x8 per work-item, and 16x8 on the
 * 256x128x8 tile both GPU heuristics take for large f32 products (measured fastest on NVIDIA H200:
 * docs/performance.md). */
static const trr_config wg_tiles[] = {
    {.block_m = 256, .block_n = 128, .block_k = 8, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 8, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256},
    {.block_m = 128, .block_n = 64, .block_k = 16, .threads = 256},
    {.block_m = 64, .block_n = 128, .block_k = 16, .threads = 256},
    {.block_m = 64, .block_n = 128, .block_k = 16, .threads = 128},
    {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 256},
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 256},
    {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 64},
    {.block_m = 32, .block_n = 64, .block_k = 16, .threads = 128},
    {.block_m = 32, .block_n = 32, .block_k = 16, .threads = 64},
};

/* The Vulkan streaming ops (copy, add, gelu, rgb_to_grey): threads x elements per invocation (block_n =
 * threads x 4..32), each block_n a whole number of loads for the widest vector the layout allows; vector_width
 * is left to the backend, which picks the widest load that divides (the default 2 vec4 per invocation of add
 * is 8 elements, gelu's 4 vec4 16). */
static const trr_config vk_streaming[] = {
    {.threads = 128, .block_n = 128 * 4},  {.threads = 128, .block_n = 128 * 8},
    {.threads = 128, .block_n = 128 * 16}, {.threads = 128, .block_n = 128 * 32},
    {.threads = 256, .block_n = 256 * 4},  {.threads = 256, .block_n = 256 * 8},
    {.threads = 256, .block_n = 256 * 16}, {.threads = 256, .block_n = 256 * 32},
    {.threads = 512, .block_n = 512 * 4},  {.threads = 512, .block_n = 512 * 8},
    {.threads = 512, .block_n = 512 * 16}, {.threads = 512, .block_n = 512 * 32},
};

/* Cooperative-matrix tiles for the Vulkan f16 matmul (32-wide subgroups of 16x16 tiles): the backend's
 * defaults (128x128x16:256, 64x64x32:128, and on NVIDIA 128x128x32:128 with the producer subgroups of stages 6)
 * and neighbours, among them tiles whose subgroups own 64x64 patches (threads = 128 for 128x128, 256 for 128x256
 * and 256x128; the backend gives each subgroup the squarest patch). The producer configs name their stages, which
 * a given tile does not otherwise get (check_config drops them off NVIDIA), as do those of stages 7. Devices
 * without cooperative matrices run the ones the SIMT kernel can take. */
static const trr_config vk_coop_tiles[] = {
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128, .stages = 6},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128, .stages = 5},
    {.block_m = 128, .block_n = 256, .block_k = 16, .threads = 256, .stages = 5},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 128},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128},
    {.block_m = 128, .block_n = 256, .block_k = 16, .threads = 256},
    {.block_m = 256, .block_n = 128, .block_k = 16, .threads = 256},
    {.block_m = 256, .block_n = 64, .block_k = 16, .threads = 128},
    {.block_m = 64, .block_n = 256, .block_k = 16, .threads = 128},
    {.block_m = 128, .block_n = 64, .block_k = 32, .threads = 64},
    {.block_m = 64, .block_n = 128, .block_k = 32, .threads = 64},
    {.block_m = 128, .block_n = 64, .block_k = 32, .threads = 128},
    {.block_m = 64, .block_n = 128, .block_k = 32, .threads = 128},
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128},
    /* stages 7: stages 2 with the fragments pipelined across k steps and slices */
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256, .stages = 7},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128, .stages = 7},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 256, .stages = 7},
    {.block_m = 128, .block_n = 256, .block_k = 16, .threads = 256, .stages = 7},
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128, .stages = 7},
};

/* Split-K on Vulkan and OpenCL (core/matmul_split.h; every kernel): small-grid tiles of the cooperative or
 * tensor-core kernels and the SIMT kernel's, with K in 2 to 16 slices; the space keeps them only where the output
 * tiles leave the device's compute units idle (prune_shape). */
static const trr_config vk_split_coop_tiles[] = {
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128},
    {.block_m = 128, .block_n = 128, .block_k = 16, .threads = 256},
};
static const trr_config vk_split_simt_tiles[] = {
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 256, .stages = 2},
};
static const trr_config ocl_split_simt_tiles[] = {
    {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 64},
};
static const trr_config ocl_split_mma_tiles[] = {
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128, .stages = 4},
};

/* Tiles for matmul_cm2.comp (Vulkan variant cm2, VK_NV_cooperative_matrix2): the backend's defaults (128x256x64 and
 * 128x128x64 over 256 threads, 64x64x64 over 128, interior loop unrolled 4 slices deep: stages) and neighbours in
 * depth and unrolling. The subgroup kernel's tiles above are tried on cm2 too. */
static const trr_config vk_cm2_tiles[] = {
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 256, .stages = 4},
    {.block_m = 128, .block_n = 256, .block_k = 64, .threads = 256, .stages = 2},
    {.block_m = 128, .block_n = 256, .block_k = 32, .threads = 256, .stages = 8},
    {.block_m = 256, .block_n = 128, .block_k = 64, .threads = 256, .stages = 4},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 256, .stages = 4},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 128, .stages = 4},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256, .stages = 8},
    {.block_m = 64, .block_n = 64, .block_k = 64, .threads = 128, .stages = 4},
};

/* The OpenCL tensor-core kernel (matmul_mma.cl; 4 or 8 warps, BK 32): the tiles whose cp.async stages fit the 48
 * KiB of local memory NVIDIA's OpenCL gives a work-group; the backend's check drops the rest, and every one where
 * the device's inline-PTX probe failed. */
static const trr_config ocl_mma_tiles[] = {
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128, .stages = 3},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256, .stages = 3},
    {.block_m = 128, .block_n = 64, .block_k = 32, .threads = 128, .stages = 4},
    {.block_m = 64, .block_n = 128, .block_k = 32, .threads = 128, .stages = 4},
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128, .stages = 4},
};

/* ... and its tiles for 8-bit floats, widened to f16 through registers in two stages */
static const trr_config ocl_mma_f8_tiles[] = {
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 256, .stages = 2},
    {.block_m = 128, .block_n = 128, .block_k = 32, .threads = 128, .stages = 2},
    {.block_m = 64, .block_n = 64, .block_k = 32, .threads = 128, .stages = 2},
};

/* The OpenCL wgmma kernel (matmul_wgmma.cl: 8-bit floats on Hopper; BK 64, a consumer warpgroup per 64 rows
 * beside the producer warpgroup): its default tile, the tiles around it that fit the 48 KiB with their mbarriers,
 * and the one-warpgroup tiles, each with groups of 4, 8 and 16 tile rows (the group that keeps B in the L2 best
 * moves with the size). The backend's check drops them all where the wgmma probe failed (other layouts run from
 * K-major copies of their operands). */
static const trr_config ocl_wgmma_tiles[] = {
    {.block_m = 128, .block_n = 112, .block_k = 64, .threads = 384, .stages = 3},
    {.block_m = 128, .block_n = 96, .block_k = 64, .threads = 384, .stages = 3},
    {.block_m = 128, .block_n = 128, .block_k = 64, .threads = 384, .stages = 2},
    {.block_m = 64, .block_n = 128, .block_k = 64, .threads = 256, .stages = 3},
    {.block_m = 64, .block_n = 64, .block_k = 64, .threads = 256, .stages = 5},
};

/* The CUDA tensor-core kernels take bf16 as they take f16 (the same tiles, one instruction type apart). */
#define HALVES (TRR_DTYPE_BIT(TRR_F16) | TRR_DTYPE_BIT(TRR_BF16))
/* 8-bit float inputs (A's dtype; B's is either as well) */
#define F8S (TRR_DTYPE_BIT(TRR_F8E4M3) | TRR_DTYPE_BIT(TRR_F8E5M2))

/* n_list = -1 stands for op_table.c's known-good NVIDIA list: an extern array's address and length cannot initialise a
 * static row's count. */
static const space_row space_table[] = {
    /* ---- cuda ---- */
    {.backend = "cuda", .shapes = MATMUL, .in_dtypes = HALVES, .list = NULL, .n_list = -1,
     .split_k = {1, 2, 4}, .variant = {TRR_VARIANT_MMA}},
    {.backend = "cuda", .shapes = MATMUL, .in_dtypes = HALVES, LIST(cuda_mma_few_tiles),
     .split_k = {1, 2, 3, 4, 6, 8}, .variant = {TRR_VARIANT_MMA}},
    {.backend = "cuda", .shapes = MATMUL, .in_dtypes = HALVES, LIST(cuda_wgmma_tiles),
     .split_k = {1, 2, 3, 4, 6, 8}, .variant = {TRR_VARIANT_WGMMA}},
    {.backend = "cuda", .shapes = MATMUL, .in_dtypes = HALVES, LIST(cuda_streamk_tiles), .split_k = {1},
     .variant = {TRR_VARIANT_STREAMK}},
    {.backend = "cuda", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_F32), LIST(cuda_f32_tiles),
     .split_k = {1, 2, 4}},
    {.backend = "cuda", .shapes = STREAMING, .threads = {128, 256, 512, 1024}, .vector_width = {1, 2, 4}},
    {.backend = "cuda", .shapes = ROWS, .threads = {32, 64, 128, 256, 512, 1024}},
    {.backend = "cuda", .shapes = ROW_REDUCE, .threads = {64, 128, 256, 512, 1024}},
    /* ---- opencl ---- */
    {.backend = "opencl", .shapes = MATMUL, LIST(wg_tiles), .variant = {TRR_VARIANT_SIMT}},
    {.backend = "opencl", .shapes = MATMUL, .in_dtypes = HALVES, LIST(ocl_mma_tiles), .variant = {TRR_VARIANT_MMA}},
    /* 8-bit floats: the tensor-core kernel's tiles and the wgmma kernel's */
    {.backend = "opencl", .shapes = MATMUL, .in_dtypes = F8S, LIST(ocl_mma_f8_tiles), .variant = {TRR_VARIANT_MMA}},
    {.backend = "opencl", .shapes = MATMUL, .in_dtypes = F8S, LIST(ocl_wgmma_tiles), .group_m = {4, 8, 16},
     .variant = {TRR_VARIANT_WGMMA}},
    /* split-K where the grid is small: every input dtype on the SIMT kernel, 16-bit floats on mma */
    {.backend = "opencl", .shapes = MATMUL, LIST(ocl_split_simt_tiles), .split_k = {2, 4, 8, 16},
     .variant = {TRR_VARIANT_SIMT}},
    {.backend = "opencl", .shapes = MATMUL, .in_dtypes = HALVES, LIST(ocl_split_mma_tiles), .split_k = {2, 4, 8, 16},
     .variant = {TRR_VARIANT_MMA}},
    {.backend = "opencl", .shapes = STREAMING, .threads = {64, 128, 256, 512}, .vector_width = {1, 2, 4, 8}},
    {.backend = "opencl", .shapes = ROWWISE, .threads = {16, 32, 64, 128, 256, 512}},
    /* ---- vulkan ---- */
    {.backend = "vulkan", .shapes = MATMUL, LIST(wg_tiles), .variant = {TRR_VARIANT_SIMT}},
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_F16), LIST(vk_coop_tiles),
     .variant = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV, TRR_VARIANT_CM2}},
    /* bf16 on cooperative matrices: the KHR and cooperative_matrix2 builds (VK_KHR_shader_bfloat16), where the
     * library has them */
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_BF16), LIST(vk_coop_tiles),
     .variant = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_CM2}},
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_F16) | TRR_DTYPE_BIT(TRR_BF16),
     LIST(vk_cm2_tiles), .variant = {TRR_VARIANT_CM2}},
    /* 8-bit floats on the f16 matrices of the KHR and NV builds (widened as they are staged) */
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = F8S, LIST(vk_coop_tiles),
     .variant = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV}},
    /* split-K where the grid is small: every input dtype on the SIMT kernel, the cooperative kernels' dtypes on theirs */
    {.backend = "vulkan", .shapes = MATMUL, LIST(vk_split_simt_tiles), .split_k = {2, 4, 8, 16},
     .variant = {TRR_VARIANT_SIMT}},
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_F16) | F8S, LIST(vk_split_coop_tiles),
     .split_k = {2, 4, 8, 16}, .variant = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV}},
    {.backend = "vulkan", .shapes = MATMUL, .in_dtypes = TRR_DTYPE_BIT(TRR_BF16), LIST(vk_split_coop_tiles),
     .split_k = {2, 4, 8, 16}, .variant = {TRR_VARIANT_COOP_KHR}},
    {.backend = "vulkan", .shapes = STREAMING, LIST(vk_streaming)},
    {.backend = "vulkan", .shapes = ROWS, .threads = {16, 32, 64, 128, 256, 512, 1024},
     .variant = {TRR_VARIANT_SIMT, TRR_VARIANT_SUBGROUP}},
    {.backend = "vulkan", .shapes = ROW_REDUCE, .threads = {16, 32, 64, 128, 256, 512, 1024},
     .variant = {TRR_VARIANT_SIMT, TRR_VARIANT_SUBGROUP}},
    /* ---- cpu: cache blocks; a 64 x 256 f32 panel of A and a 256 x 256 panel of B are the heuristic's ---- */
    {.backend = "cpu", .shapes = MATMUL, .block_m = {32, 64, 128}, .block_n = {64, 128, 256, 512},
     .block_k = {128, 256, 512}},
    {.backend = "cpu", .shapes = MATMUL, .block_m = {64, 128}, .block_n = {128, 256}, .block_k = {512},
     .split_k = {2, 4, 8}},
    {.backend = "cpu", .shapes = STREAMING | ROWWISE, .block_n = {4096, 16384, 65536}},
    /* ---- any other backend: a small generic set ---- */
    {.backend = NULL, .shapes = MATMUL, .block_m = {32, 64, 128}, .block_n = {32, 64, 128}, .block_k = {16, 32}},
    {.backend = NULL, .shapes = STREAMING | ROWWISE, .threads = {64, 128, 256}},
};
#define N_ROWS ((int)(sizeof space_table / sizeof space_table[0]))

static int row_matches(const space_row *r, const char *backend, const trr_call *call) {
    if (!(r->shapes & SHAPE(trr_op_desc_get(call->op)->shape))) return 0;
    if (r->in_dtypes && !(r->in_dtypes & TRR_DTYPE_BIT(call->x.dtype))) return 0;
    return r->backend ? strcmp(r->backend, backend) == 0 : 1;
}

/* ---- the space ---- */

static int pow2_ceil(int64_t n) {
    int64_t p = 1;
    while (p < n && p < ((int64_t)1 << 30)) p <<= 1;
    return (int)p;
}

/* Expands one row into out[*n...]: every list config (or one all-zero config) crossed with the value lists of
 * the fields it leaves at zero. */
static void expand_row(const space_row *r, trr_tune_candidate *out, int cap, int *n) {
    const int *axes[TRR_CONFIG_FIELD_COUNT] = {r->block_m, r->block_n, r->block_k, r->group_m, r->threads,
                                               r->stages, r->vector_width, r->split_k, r->variant};
    const trr_config *list = r->list;
    int n_list = r->n_list;
    if (n_list < 0) { /* the known-good NVIDIA list from op_table.c */
        list = trr_matmul_f16_nvidia_configs;
        n_list = trr_matmul_f16_nvidia_config_count;
    }
    trr_config zero;
    memset(&zero, 0, sizeof zero);
    if (!list || n_list == 0) list = &zero, n_list = 1;
    enum { NF = TRR_CONFIG_FIELD_COUNT };
    for (int li = 0; li < n_list; li++) {
        int len[NF], idx[NF] = {0};
        for (int f = 0; f < NF; f++) {
            len[f] = 0;
            if (trr_config_get(&list[li], f) == 0)
                while (len[f] < AXIS && axes[f][len[f]] != 0) len[f]++;
        }
        for (;;) {
            if (*n >= cap) return;
            trr_config c = list[li];
            for (int f = 0; f < NF; f++)
                if (len[f] > 0) trr_config_set(&c, f, axes[f][idx[f]]);
            memset(&out[*n], 0, sizeof out[*n]);
            out[*n].listed = c;
            (*n)++;
            int f = 0; /* odometer over the fields that have lists */
            while (f < NF && (len[f] == 0 || ++idx[f] == len[f])) {
                if (len[f] > 0) idx[f] = 0;
                f++;
            }
            if (f == NF) break;
        }
    }
}

static void drop(trr_tune_candidate *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void drop(trr_tune_candidate *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    c->dropped = 1;
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
}

/* Matmul tiles far larger than the problem only compute padding: a tile over the problem's size (rounded up to
 * a power of two) is dropped when a smaller tile of the same field is in the space. Split-K only pays when the
 * grid of output tiles is too small to fill the device and K is long enough to split. */
static void prune_shape(const trr_call *call, const trr_device_info *info, trr_tune_candidate *cand, int n) {
    if (trr_op_desc_get(call->op)->shape != TRR_SHAPE_MATMUL) return;
    int min_bm = 1 << 30, min_bn = 1 << 30, min_bk = 1 << 30;
    for (int i = 0; i < n; i++) {
        const trr_config *c = &cand[i].resolved;
        if (c->block_m < min_bm) min_bm = c->block_m;
        if (c->block_n < min_bn) min_bn = c->block_n;
        if (c->block_k < min_bk) min_bk = c->block_k;
    }
    const int pm = pow2_ceil(call->rows), pn = pow2_ceil(call->cols), pk = pow2_ceil(call->k);
    for (int i = 0; i < n; i++) {
        trr_tune_candidate *cd = &cand[i];
        const trr_config *c = &cd->resolved;
        if (cd->dropped) continue;
        if (c->block_m > pm && c->block_m > min_bm)
            drop(cd, "BLOCK_M %d is over M rounded up (%d); a smaller tile does the same work", c->block_m, pm);
        else if (c->block_n > pn && c->block_n > min_bn)
            drop(cd, "BLOCK_N %d is over N rounded up (%d); a smaller tile does the same work", c->block_n, pn);
        else if (c->block_k > pk && c->block_k > min_bk)
            drop(cd, "BLOCK_K %d is over K rounded up (%d); a smaller step does the same work", c->block_k, pk);
        else if (c->split_k > 1) {
            const int64_t batch = call->batch > 1 ? call->batch : 1;
            int64_t tiles = ((call->rows + c->block_m - 1) / c->block_m) * ((call->cols + c->block_n - 1) / c->block_n) *
                            batch;
            const int units = info->compute_units;
            if (units <= 0)
                drop(cd, "split-K fills the device's idle compute units, and %s does not say how many it has",
                     info->name);
            else if (tiles >= units)
                drop(cd, "split-K is for grids smaller than the device: %lld output tiles already cover %d "
                         "compute units", (long long)tiles, units);
            else if (call->k / c->split_k < 4LL * c->block_k)
                drop(cd, "K = %lld is too short to split %d ways", (long long)call->k, c->split_k);
        } else if (c->variant == TRR_VARIANT_STREAMK) {
            const int64_t batch = call->batch > 1 ? call->batch : 1;
            int64_t tiles = ((call->rows + c->block_m - 1) / c->block_m) * ((call->cols + c->block_n - 1) / c->block_n) *
                            batch;
            int units = info->compute_units > 0 ? info->compute_units : 1;
            if (tiles >= units && tiles % units == 0)
                drop(cd, "stream-K balances a part wave: %lld output tiles are whole waves of %d compute units, "
                         "which the plain schedule (variant wgmma) runs", (long long)tiles, units);
        }
    }
}

/* The device's own limits, applied before the backend is asked. */
static void prune_device(trr_context *ctx, const trr_call *call, trr_tune_candidate *cand, int n) {
    const trr_device_info *info = &ctx->info;
    size_t esz = 4;
    trr_dtype_size(call->x.dtype, &esz);
    for (int i = 0; i < n; i++) {
        trr_tune_candidate *cd = &cand[i];
        const trr_config *c = &cd->resolved;
        if (cd->dropped) continue;
        int over = -1;
        for (int k = 0; k < TRR_CONFIG_FIELD_COUNT; k++)
            if (trr_config_get(c, k) < 0 || trr_config_get(c, k) > trr_config_fields[k].max) over = k;
        if (over >= 0) {
            drop(cd, "%s is %d, outside the 0..%d a config may hold", trr_config_fields[over].name,
                 trr_config_get(c, over), trr_config_fields[over].max);
            continue;
        }
        /* a user op's threads are its launch rule's, judged by the backend's user path (the CPU's C function has
         * none) */
        if (info->max_threads_per_block > 0 && c->threads > info->max_threads_per_block &&
            !trr_op_desc_get(call->op)->user) {
            drop(cd, "%d threads per block; the device allows %d", c->threads, info->max_threads_per_block);
            continue;
        }
        /* a GPU matmul holds an A and a B tile per pipeline stage in shared memory */
        if (trr_op_desc_get(call->op)->shape == TRR_SHAPE_MATMUL && info->is_gpu && info->shared_memory_per_block > 0) {
            long long stages = c->stages > 0 ? c->stages : 1;
            long long bytes = ((long long)c->block_m * c->block_k + (long long)c->block_k * c->block_n) *
                              (long long)esz * stages;
            if ((unsigned long long)bytes > info->shared_memory_per_block)
                drop(cd, "tiles need %lld bytes of shared memory; the device has %llu per block", bytes,
                     (unsigned long long)info->shared_memory_per_block);
        }
    }
}

/* A user op's space (core/user_op.h): every combination of its tile parameters' candidates, the definition's
 * order (the first candidates, its default, first). */
static void expand_user(const trr_user_op *u, trr_tune_candidate *out, int cap, int *n) {
    int idx[TRR_MAX_TILE_PARAMS] = {0};
    for (;;) {
        if (*n >= cap) return;
        memset(&out[*n], 0, sizeof out[*n]);
        for (int t = 0; t < u->def.n_tiles; t++)
            trr_config_set(&out[*n].listed, u->tile_field[t], u->def.tiles[t].candidates[idx[t]]);
        (*n)++;
        int t = 0; /* odometer, the last tile parameter slowest */
        while (t < u->def.n_tiles && ++idx[t] == u->def.tiles[t].n_candidates) idx[t++] = 0;
        if (t == u->def.n_tiles) return;
    }
}

trr_status trr_tune_space(trr_context *ctx, const trr_call *call, trr_tune_candidate *out, int cap,
                          int *out_count) {
    if (!ctx || !call || !out || cap < 1 || !out_count)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "trr_tune_space: bad argument");
    const char *backend = ctx->backend->name;
    const trr_user_op *user = trr_op_desc_get(call->op)->user;
    int own = 0;
    for (int r = 0; r < N_ROWS && !user; r++)
        if (space_table[r].backend && row_matches(&space_table[r], backend, call)) own = 1;
    int n = 0;
    if (user) expand_user(user, out, cap, &n);
    for (int r = 0; r < N_ROWS && !user; r++) {
        const space_row *row = &space_table[r];
        if (!row_matches(row, backend, call) || (own && !row->backend)) continue;
        expand_row(row, out, cap, &n);
    }
    /* a field the backend's kernels do not read changes nothing: it is not swept, and a candidate that sweeps
     * nothing else is no candidate (the default is timed anyway) */
    const unsigned used = trr_config_fields_used(ctx, call->op);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        trr_config masked = out[i].listed;
        int any = 0, changed = 0;
        for (int f = 0; f < TRR_CONFIG_FIELD_COUNT; f++) {
            if (!trr_config_get(&masked, f)) continue;
            if (used & trr_config_fields[f].bit) any = 1;
            else trr_config_set(&masked, f, 0), changed = 1;
        }
        if (changed && !any) continue;
        out[kept] = out[i];
        out[kept++].listed = masked;
    }
    n = kept;
    for (int i = 0; i < n; i++) trr_tune_complete_config(ctx, call, &out[i].listed, &out[i].resolved);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!out[j].dropped && trr_config_equal(&out[i].resolved, &out[j].resolved)) {
                drop(&out[i], "the same config as candidate %d once the backend fills its choices", j + 1);
                break;
            }
    prune_shape(call, &ctx->info, out, n);
    prune_device(ctx, call, out, n);
    for (int i = 0; i < n; i++)
        if (!out[i].dropped && !trr_tune_config_runs(ctx, call, &out[i].resolved, out[i].reason, sizeof out[i].reason))
            out[i].dropped = 1;
    *out_count = n;
    return TRR_OK;
}

typedef struct shape_set {
    const char *full;
    const char *quick;
} shape_set;

static const shape_set default_shapes[TRR_SHAPE_COUNT] = {
    [TRR_SHAPE_ELEMENTWISE] = {"65536,1048576,16777216", "65536"},
    [TRR_SHAPE_PLANES] = {"1066x1600,4320x7680", "256x320"},
    [TRR_SHAPE_ROWS] = {"4096x256,4096x1024,4096x4096,4096x12288", "256x1000"},
    [TRR_SHAPE_ROW_REDUCE] = {"4096x256,4096x1024,4096x8192,4096x65536", "256x1000"},
    [TRR_SHAPE_MATMUL] = {"256x256x256,1024x1024x1024,2048x2048x2048,4096x4096x4096", "128x128x128,127x200x64"},
    [TRR_SHAPE_ROW_NORM] = {"4096x1024,4096x4096,4096x8192,4096x16384", "256x1000"},
};

const char *trr_tune_default_shapes(trr_op_shape shape, int quick) {
    if ((int)shape < 0 || shape >= TRR_SHAPE_COUNT || !default_shapes[shape].full) return "";
    return quick ? default_shapes[shape].quick : default_shapes[shape].full;
}
