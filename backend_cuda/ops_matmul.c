/* matmul: the tensor-core kernels for f16 and bf16 with aligned row-major A (wgmma + TMA on sm_90a, mma.sync elsewhere),
 * the CUDA-core kernel for everything else (f32 always: true f32 arithmetic; TF32 is permitted by allow_tf32 but
 * never required, so it is not used). Every kernel takes a batch as blockIdx.z, one launch for all of it.
 * split_k S > 1 (tensor-core kernels only; config_matmul.c says when the heuristic takes it): the main kernel, compiled
 * with SPLIT_K, cuts K into S runs of whole K tiles and writes each run's f32 sum to the context's split-K
 * workspace, [batch][S][M][N]; matmul_reduce.cu then adds the S partials in order and applies the scale, the
 * epilogue and C's type. */
#include "trr_cuda.h"

#include "matmul_scale.h"
#include "op_table.h"

#include <stdint.h>
#include <string.h>

/* The driver's CUtensorMapDataType for an element type (the 8-bit floats move as bytes). */
static int map_dtype(trr_dtype dt) {
    return dt == TRR_BF16 ? TRR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
           : dt == TRR_F32 ? TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32
           : dt == TRR_F16 ? TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                           : TRR_CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

static uint64_t elem_bytes(trr_dtype dt) {
    size_t es = 2;
    trr_dtype_size(dt, &es);
    return es;
}

/* A TMA descriptor of a batch of row-major f16, bf16, f32 or 8-bit float (dt) matrices of rows x cols (row stride ld
 * elements, matrix i at i * bstride) in boxes of box_cols x box_rows x 1 with the swizzle of the box's row (128,
 * 64 or 32 bytes: box_cols elements); boxes past the edges read zeros and store nothing there. A single matrix
 * (batch 1, or an input shared by every batch: bstride 0) is a batch of one, at matrix coordinate 0. */
static trr_status encode_map(trr_context *ctx, trr_cu_tensor_map *map, trr_dtype dt, CUdeviceptr base, int64_t rows,
                             int64_t cols, int64_t ld, int64_t batch, int64_t bstride, unsigned box_cols,
                             unsigned box_rows) {
    memset(map, 0, sizeof *map);
    const uint64_t es = elem_bytes(dt);
    /* A zero extent (K = 0) is not encodable; the kernel then issues no copy, so any extent does. */
    const int batched = batch > 1 && bstride > 0;
    uint64_t dims[3] = {(uint64_t)(cols > 0 ? cols : 1), (uint64_t)(rows > 0 ? rows : 1),
                        (uint64_t)(batched ? batch : 1)};
    uint64_t stride = (uint64_t)ld * es;
    /* a single row's stride is never followed, but must still be a multiple of 16 covering the row */
    if (dims[1] == 1 || stride < dims[0] * es) stride = (dims[0] * es + 15u) & ~(uint64_t)15u;
    /* likewise a single matrix's: check_config keeps a followed one a multiple of 16 bytes */
    uint64_t mstride = batched ? (uint64_t)bstride * es : (stride * dims[1] + 15u) & ~(uint64_t)15u;
    uint64_t strides[2] = {stride, mstride};
    unsigned box[3] = {box_cols, box_rows, 1};
    unsigned estrides[3] = {1, 1, 1};
    const uint64_t row_bytes = box_cols * es;
    const int swizzle = row_bytes == 128 ? TRR_CU_TENSOR_MAP_SWIZZLE_128B
                        : row_bytes == 64 ? TRR_CU_TENSOR_MAP_SWIZZLE_64B
                                          : TRR_CU_TENSOR_MAP_SWIZZLE_32B;
    TRR_CU_CHECK(ctx,
                 trr_cu.TensorMapEncodeTiled(map, map_dtype(dt), 3, (void *)(uintptr_t)base, dims, strides, box,
                                             estrides, 0, swizzle,
                                             TRR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0),
                 "cuTensorMapEncodeTiled");
    return TRR_OK;
}

/* Whether the kernel's epilogue may store C through a tensor map (the TMA's rules: a 16-byte aligned base, row
 * and matrix strides that are multiples of 16 bytes, every matrix of a batch its own); else it stores from
 * registers. */
static int c_tma_ok(const trr_call *call, int64_t batch) {
    const int64_t es = (int64_t)elem_bytes(call->z.dtype);
    if (trr_cuda_operand_ptr(&call->z) % 16 || (call->z.stride0 * es) % 16) return 0;
    if (batch > 1 && (call->z.batch_stride <= 0 || (call->z.batch_stride * es) % 16)) return 0;
    /* the driver's limits on a tensor map: extents below 2^32, strides below 2^40 bytes */
    const int64_t lim = (int64_t)1 << 40;
    return call->z.stride0 * es < lim && call->z.batch_stride * es < lim;
}

/* The split-K workspace of a call: batch x splits f32 matrices of M x N. */
static trr_status split_partials(trr_context *ctx, const trr_call *call, int64_t batch, CUdeviceptr *out) {
    const int64_t mn = call->rows * call->cols, splits = call->config.split_k;
    if (mn > 0 && batch * splits > INT64_MAX / 4 / mn)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: the split-K workspace overflows");
    const int64_t bytes = batch * splits * mn * 4;
    trr_cuda_dev *dev = ctx->dev;
    return trr_cuda_scratch_get(ctx, &dev->matmul_scratch, (size_t)(bytes > 0 ? bytes : 4), "matmul's split-K workspace",
                                out);
}

/* mma.sync's split-K (matmul_mma.cu joins the splits in the kernel): a slot of block_m x block_n f32 per split
 * of each of the grid's `tiles` output tiles (every matrix of a batch has its own), and a counter per tile. The
 * counters must read 0 when a launch starts: they are zeroed when allocated, on the stream before any launch
 * that uses them, and each launch leaves them at 0 again. */
static trr_status mma_split_workspace(trr_context *ctx, const trr_call *call, int64_t tiles, CUdeviceptr *out_ws,
                                      CUdeviceptr *out_flags) {
    const trr_config *cfg = &call->config;
    const int64_t slot = (int64_t)cfg->block_m * cfg->block_n, splits = cfg->split_k;
    if (tiles > 0 && splits * slot > INT64_MAX / 4 / tiles)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: the split-K workspace overflows");
    trr_cuda_dev *dev = ctx->dev;
    const int64_t bytes = tiles * splits * slot * 4;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_scratch, (size_t)(bytes > 0 ? bytes : 4),
                                 "matmul's split-K workspace", out_ws));
    const size_t had = dev->matmul_flags.bytes; /* grows (never shrinks) when allocated anew */
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_flags, (size_t)(tiles > 0 ? tiles : 1) * 4,
                                 "matmul's split-K counters", out_flags));
    if (dev->matmul_flags.bytes != had) {
        TRR_TRY(trr_cuda_batch_flush(ctx)); /* the queued launches go first: the zeroing is ordered after them */
        TRR_CU_CHECK(ctx, trr_cu.MemsetD8Async(*out_flags, 0, dev->matmul_flags.bytes, dev->stream),
                     "cuMemsetD8Async (matmul's split-K counters)");
        trr_cuda_enqueued(dev);
    }
    return TRR_OK;
}

/* Variant streamk (matmul_wgmma.cu with STREAM_K): its grid for `tiles` output tiles of kt K tiles each on `slots`
 * SMs, or 0 where the plain schedule is the same work (no K, or whole waves only). Past a wave, one block an SM;
 * below it, blocks enough that each runs about TRR_CUDA_STREAMK_MIN_RUN K tiles, so a piece still runs its
 * pipeline past the fill, and more blocks than tiles (else every tile is whole). */
static int64_t streamk_grid(int64_t tiles, int64_t kt, int64_t slots) {
    if (kt <= 0 || tiles <= 0) return 0;
    if (tiles >= slots) return tiles % slots ? slots : 0;
    int64_t g = tiles * kt / TRR_CUDA_STREAMK_MIN_RUN;
    if (g > slots) g = slots;
    return g > tiles ? g : 0;
}

/* Stream-K's workspace: a block_m x block_n f32 slot a block (two halves, one per consumer warpgroup) for the one
 * piece of a tile it may hand to the tile's owner, and a flag per half, 0 when a launch starts: zeroed when
 * allocated, on the stream before any launch that uses them, and each launch leaves them at 0 again (the
 * counters of mma.sync's split share the buffer and the rule). */
static trr_status streamk_workspace(trr_context *ctx, const trr_config *cfg, int64_t grid, CUdeviceptr *out_ws,
                                    CUdeviceptr *out_flags) {
    trr_cuda_dev *dev = ctx->dev;
    const int64_t bytes = grid * cfg->block_m * cfg->block_n * 4;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_scratch, (size_t)bytes, "matmul's stream-K workspace", out_ws));
    const size_t had = dev->matmul_flags.bytes;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_flags, (size_t)grid * 2 * 4, "matmul's stream-K flags", out_flags));
    if (dev->matmul_flags.bytes != had) {
        TRR_TRY(trr_cuda_batch_flush(ctx));
        TRR_CU_CHECK(ctx, trr_cu.MemsetD8Async(*out_flags, 0, dev->matmul_flags.bytes, dev->stream),
                     "cuMemsetD8Async (matmul's stream-K flags)");
        trr_cuda_enqueued(dev);
    }
    return TRR_OK;
}

/* The second pass of a split (kernel v): the partials at p summed into C with the scale, the epilogue and C's
 * type. */
static trr_status split_reduce(trr_context *ctx, const trr_call *call, const trr_cuda_variant *v, CUdeviceptr p,
                               unsigned gz) {
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, v, "matmul_reduce", &fn));
    CUdeviceptr c = trr_cuda_operand_ptr(&call->z);
    long long ldc = call->z.stride0, c_bs = call->z.batch_stride;
    int m = (int)call->rows, n = (int)call->cols, splits = call->config.split_k, epi = (int)call->epilogue;
    float alpha = call->alpha, scale = trr_matmul_input_scale(call);
    /* 256 threads an output; past 2^20 blocks the kernel's grid-stride loop takes the rest */
    const int64_t mn = call->rows * call->cols, want = (mn + 255) / 256;
    const unsigned gx = (unsigned)(want < 1 ? 1 : want > ((int64_t)1 << 20) ? ((int64_t)1 << 20) : want);
    void *args[] = {&p, &c, &ldc, &c_bs, &m, &n, &splits, &epi, &alpha, &scale};
    return trr_cuda_launch_3d(ctx, fn, gx, 1, gz, 256, 0, args);
}

/* The grid's z: one layer of blocks per matrix of the batch. */
static trr_status batch_grid(trr_context *ctx, const trr_call *call, unsigned *out_gz) {
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    if (batch > 65535)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: a batch of %lld exceeds the grid's z limit of 65535",
                         (long long)batch);
    *out_gz = (unsigned)batch;
    return TRR_OK;
}

/* Clusters of fn (compile-time size 2) that fit on the device at once: blocks of a pair must share a GPU
 * processing cluster, and one with an odd count of free SMs leaves one idle, so this can be below sm_count / 2.
 * A persistent grid above it would run its last clusters as a second wave. sm_count / 2 where the driver
 * cannot say. */
static trr_status wgmma_cluster_fit(trr_context *ctx, CUfunction fn, unsigned smem, int *out_fit) {
    trr_cuda_dev *dev = ctx->dev;
    const int half = dev->sm_count > 1 ? dev->sm_count / 2 : 1;
    *out_fit = half;
    if (!trr_cu.OccupancyMaxActiveClusters) return TRR_OK;
    /* One block per SM whatever the variant (384 threads, launch bounds 1): what fits follows from the shared
     * memory alone, so the answer is kept per size and f16/bf16 or layout variants of one tile share it. */
    if (dev->cluster_smem == smem) {
        *out_fit = dev->cluster_fit;
        return TRR_OK;
    }
    TRR_CU_CHECK(ctx, trr_cu.FuncSetAttribute(fn, TRR_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
                 "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    trr_cu_launch_config lc = {(unsigned)(2 * half), 1, 1, TRR_CUDA_WGMMA_THREADS, 1, 1, smem, dev->stream, NULL, 0};
    int fit = 0;
    if (trr_cu.OccupancyMaxActiveClusters(&fit, fn, &lc) == TRR_CUDA_SUCCESS && fit > 0 && fit < half) *out_fit = fit;
    dev->cluster_smem = smem;
    dev->cluster_fit = *out_fit;
    return TRR_OK;
}

static trr_status run_wgmma(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    trr_cuda_variant v[2];
    const int split = cfg->split_k > 1;
    const trr_dtype c_type = trr_cuda_wgmma_c_type(call); /* a split's main kernel stores f32 partials */
    /* variant streamk where it balances anything (config_matmul.c keeps it to single blocks, unsplit), else the plain
     * schedule of the same tile */
    int64_t sk_grid = 0;
    trr_config kc = *cfg;
    if (cfg->variant == TRR_VARIANT_STREAMK) {
        const int64_t nb = call->batch > 1 ? call->batch : 1;
        const int64_t t = ((call->rows + cfg->block_m - 1) / cfg->block_m) *
                          ((call->cols + cfg->block_n - 1) / cfg->block_n) * nb;
        const trr_cuda_dev *d = ctx->dev;
        sk_grid = streamk_grid(t, (call->k + TRR_CUDA_WGMMA_BK - 1) / TRR_CUDA_WGMMA_BK, d->sm_count > 0 ? d->sm_count : 1);
        /* the kernel counts the split K tiles (at most two waves' worth) in an int */
        if (sk_grid && 2 * sk_grid * ((call->k + TRR_CUDA_WGMMA_BK - 1) / TRR_CUDA_WGMMA_BK) > 0x7fffffff)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul (streamk): K = %lld is too long for its schedule",
                             (long long)call->k);
        if (!sk_grid) kc.variant = TRR_VARIANT_WGMMA;
    }
    /* (the variant adds SPLIT_K for a split) */
    trr_call kcall = *call;
    kcall.config = kc;
    trr_cuda_matmul_call_variants(&kcall, v);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v[0], "matmul_wgmma", &fn));
    trr_cu_tensor_map ta, tb;
    /* A [M,K] in 128-byte x block rows boxes (K x M: 64 16-bit or 128 8-bit elements), or A stored [K,M] in 64 x
     * 64 boxes (M x K, 16-bit only; block rows / 64 of them); B [K,N] in 64 x 64 boxes (N x K, 16-bit only;
     * ceil(BN/64) of them), or B stored [N,K] in 128 bytes x BN (in a cluster of two, x BN/2: each block loads half
     * for both) */
    const unsigned kbox = (unsigned)(128u / elem_bytes(call->x.dtype));
    const int cluster = cfg->block_m / trr_cuda_wgmma_block_rows(cfg);
    unsigned gz = 1;
    TRR_TRY(batch_grid(ctx, call, &gz));
    const int64_t batch = gz;
    if (call->trans_a)
        TRR_TRY(encode_map(ctx, &ta, call->x.dtype, trr_cuda_operand_ptr(&call->x), call->k, call->rows, call->x.stride0,
                           batch, call->x.batch_stride, 64, TRR_CUDA_WGMMA_BK));
    else
        TRR_TRY(encode_map(ctx, &ta, call->x.dtype, trr_cuda_operand_ptr(&call->x), call->rows, call->k, call->x.stride0,
                           batch, call->x.batch_stride, kbox, (unsigned)trr_cuda_wgmma_block_rows(cfg)));
    if (call->trans_b)
        TRR_TRY(encode_map(ctx, &tb, call->y.dtype, trr_cuda_operand_ptr(&call->y), call->cols, call->k, call->y.stride0, batch,
                           call->y.batch_stride, kbox, (unsigned)(cfg->block_n / cluster)));
    else
        TRR_TRY(encode_map(ctx, &tb, call->y.dtype, trr_cuda_operand_ptr(&call->y), call->k, call->cols, call->y.stride0, batch,
                           call->y.batch_stride, 64, TRR_CUDA_WGMMA_BK));
    /* B [K,N]'s narrow last box (16 or 32 columns under the swizzle of their width), where the tile takes one */
    trr_cu_tensor_map tb_tail = tb;
    const int b_tail = call->trans_b ? 0 : trr_cuda_wgmma_b_tail(cfg);
    if (b_tail)
        TRR_TRY(encode_map(ctx, &tb_tail, call->y.dtype, trr_cuda_operand_ptr(&call->y), call->k, call->cols,
                           call->y.stride0, batch, call->y.batch_stride, (unsigned)b_tail, TRR_CUDA_WGMMA_BK));
    /* C in boxes of 64 rows x 128 bytes, one consumer warpgroup's half of a tile's rows */
    int c_tma = c_tma_ok(call, batch);
    trr_cu_tensor_map tc;
    memset(&tc, 0, sizeof tc);
    long long c_bs = call->z.batch_stride;
    int a_batched = batch > 1 && call->x.batch_stride > 0, b_batched = batch > 1 && call->y.batch_stride > 0;
    CUdeviceptr c = trr_cuda_operand_ptr(&call->z);
    long long ldc = call->z.stride0;
    int m = (int)call->rows, n = (int)call->cols, k = (int)call->k;
    int epi = (int)call->epilogue, group_m = cfg->group_m;
    float alpha = call->alpha;
    int splits = split ? cfg->split_k : 1;
    if (split) {
        /* the partials: batch x splits f32 matrices [M, N] of row stride N, stored through a tensor map where a row
         * is a whole number of 16 bytes (N % 4 == 0; the workspace's base is the allocation's), else from registers;
         * the epilogue waits for the second pass */
        TRR_TRY(split_partials(ctx, call, batch, &c));
        ldc = n;
        c_bs = (long long)m * n;
        epi = 0;
        alpha = 1.0f;
        c_tma = n % 4 == 0 && (int64_t)n * 4 < ((int64_t)1 << 40) && c_bs * 4 < ((int64_t)1 << 40);
        if (c_tma)
            TRR_TRY(encode_map(ctx, &tc, TRR_F32, c, call->rows, call->cols, ldc, batch * splits, c_bs, 32, 64));
    } else if (c_tma) {
        TRR_TRY(encode_map(ctx, &tc, call->z.dtype, trr_cuda_operand_ptr(&call->z), call->rows, call->cols,
                           call->z.stride0, batch, call->z.batch_stride,
                           128u / (call->z.dtype == TRR_F32 ? 4u : 2u), 64));
    }
    /* persistent: one block per SM at most, each (each cluster) looping over output tiles of every matrix of the
     * batch; a cluster's tile is block_m rows */
    const int64_t tiles = ((call->rows + cfg->block_m - 1) / cfg->block_m) *
                          ((call->cols + cfg->block_n - 1) / cfg->block_n) * batch * splits;
    if (tiles > 0x7fffffff)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: %lld output tiles exceed the kernel's int tile index",
                         (long long)tiles);
    const trr_cuda_dev *dev = ctx->dev;
    int64_t slots = dev->sm_count > 0 ? dev->sm_count : 1;
    if (cluster > 1) {
        int fit = 1;
        TRR_TRY(wgmma_cluster_fit(ctx, fn, (unsigned)trr_cuda_wgmma_smem(cfg, c_type), &fit));
        slots = fit;
    }
    const unsigned grid = (unsigned)(sk_grid ? sk_grid : (tiles < slots ? tiles : slots) * cluster);
    int nbatch = (int)batch;
    float scale = split ? 1.0f : trr_matmul_input_scale(call);
    if (sk_grid) {
        CUdeviceptr ws = 0, flags = 0;
        TRR_TRY(streamk_workspace(ctx, cfg, sk_grid, &ws, &flags));
        void *args[] = {&ta, &tb, &tb_tail, &tc, &c_tma, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m, &c_bs, &a_batched,
                        &b_batched, &nbatch, &scale, &splits, &ws, &flags};
        return trr_cuda_launch_3d(ctx, fn, grid, 1, 1, (unsigned)cfg->threads, (unsigned)trr_cuda_wgmma_smem(cfg, c_type), args);
    }
    void *args[] = {&ta, &tb, &tb_tail, &tc, &c_tma, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m, &c_bs, &a_batched,
                    &b_batched, &nbatch, &scale, &splits};
    TRR_TRY(trr_cuda_launch_3d(ctx, fn, grid, 1, 1, (unsigned)cfg->threads, (unsigned)trr_cuda_wgmma_smem(cfg, c_type), args));
    return split ? split_reduce(ctx, call, &v[1], c, gz) : TRR_OK;
}

static trr_status run_matmul(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    trr_cuda_variant v[2];
    const char *kernel;
    unsigned smem = 0;
    /* the variant is resolved and checked (config_matmul.c: check_matmul) before run */
    if (cfg->variant == TRR_VARIANT_WGMMA || cfg->variant == TRR_VARIANT_STREAMK) return run_wgmma(ctx, call);
    const int split = cfg->split_k > 1;
    trr_cuda_matmul_call_variants(call, v);
    int which = 0;
    if (cfg->variant == TRR_VARIANT_MMA) {
        /* a split joins its partials in the kernel (matmul_mma.cu): the variant stores C's type either way */
        kernel = "matmul_mma";
        smem = (unsigned)trr_cuda_mma_smem_es(cfg, (int)elem_bytes(call->x.dtype));
    } else {
        /* Four consecutive elements load as one vector when leading dimensions and bases keep the alignment. */
        unsigned align = call->x.dtype == TRR_F32 ? 16u : 8u;
        which = call->x.stride0 % 4 == 0 && call->y.stride0 % 4 == 0 && call->x.batch_stride % 4 == 0 &&
                call->y.batch_stride % 4 == 0 && trr_cuda_operand_ptr(&call->x) % align == 0 &&
                trr_cuda_operand_ptr(&call->y) % align == 0; /* the aligned variant is the second */
        kernel = "matmul_simt";
    }
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v[which], kernel, &fn));
    CUdeviceptr a = trr_cuda_operand_ptr(&call->x), b = trr_cuda_operand_ptr(&call->y), c = trr_cuda_operand_ptr(&call->z);
    long long lda = call->x.stride0, ldb = call->y.stride0, ldc = call->z.stride0;
    int m = (int)call->rows, n = (int)call->cols, k = (int)call->k;
    int epi = (int)call->epilogue, group_m = cfg->group_m;
    float alpha = call->alpha;
    int64_t blocks = ((call->rows + cfg->block_m - 1) / cfg->block_m) * ((call->cols + cfg->block_n - 1) / cfg->block_n);
    if (blocks > 0x7fffffff) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: %lld blocks exceed the grid limit", (long long)blocks);
    long long a_bs = call->x.batch_stride, b_bs = call->y.batch_stride, c_bs = call->z.batch_stride;
    unsigned gz = 1;
    TRR_TRY(batch_grid(ctx, call, &gz));
    float scale = trr_matmul_input_scale(call);
    if (cfg->variant != TRR_VARIANT_MMA) {
        void *args[] = {&a, &lda, &b, &ldb, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m, &a_bs, &b_bs, &c_bs, &scale};
        return trr_cuda_launch_3d(ctx, fn, (unsigned)blocks, 1, gz, (unsigned)cfg->threads, smem, args);
    }
    /* mma.sync: blockIdx.y is the split, whose blocks join their partials through the workspace and the tiles'
     * counters (none without a split) */
    CUdeviceptr ws = 0, flags = 0;
    if (split) TRR_TRY(mma_split_workspace(ctx, call, blocks * gz, &ws, &flags));
    void *args[] = {&a, &lda, &b, &ldb, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m, &a_bs, &b_bs, &c_bs, &scale,
                    &ws, &flags};
    return trr_cuda_launch_3d(ctx, fn, (unsigned)blocks, (unsigned)cfg->split_k, gz, (unsigned)cfg->threads, smem,
                              args);
}

trr_status trr_cuda_run_matmul(trr_context *ctx, const trr_call *call) {
    trr_call view;
    if (!trr_cuda_matmul_view(ctx->dev, call, &view)) return run_matmul(ctx, call);
    TRR_TRY(trr_cuda_matmul_pack(ctx, call, &view));
    return run_matmul(ctx, &view);
}
