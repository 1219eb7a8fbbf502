/* matmul: the tensor-core kernels for f16 and bf16 with aligned row-major A (wgmma + TMA on sm_90a, mma.sync elsewhere),
 * the CUDA-core kernel for everything else (f32 always: true f32 arithmetic; TF32 is permitted by allow_tf32 but
 * never required, so it is not used). */
#include "trr_cuda.h"

#include <string.h>

/* A TMA descriptor of a row-major f16 or bf16 (dt) matrix of rows x cols (row stride ld elements) read in boxes of
 * box_cols x box_rows with the 128-byte swizzle; boxes past the edges read zeros. */
static trr_status encode_map(trr_context *ctx, trr_cu_tensor_map *map, trr_dtype dt, CUdeviceptr base, int64_t rows,
                             int64_t cols, int64_t ld, unsigned box_cols, unsigned box_rows) {
    memset(map, 0, sizeof *map);
    /* A zero extent (K = 0) is not encodable; the kernel then issues no copy, so any extent does. */
    uint64_t dims[2] = {(uint64_t)(cols > 0 ? cols : 1), (uint64_t)(rows > 0 ? rows : 1)};
    uint64_t stride = (uint64_t)ld * 2u;
    /* a single row's stride is never followed, but must still be a multiple of 16 covering the row */
    if (dims[1] == 1 || stride < dims[0] * 2u) stride = (dims[0] * 2u + 15u) & ~(uint64_t)15u;
    uint64_t strides[1] = {stride};
    unsigned box[2] = {box_cols, box_rows};
    unsigned estrides[2] = {1, 1};
    TRR_CU_CHECK(ctx,
                 trr_cu.TensorMapEncodeTiled(map, dt == TRR_BF16 ? TRR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)(uintptr_t)base, dims,
                                             strides, box, estrides, 0, TRR_CU_TENSOR_MAP_SWIZZLE_128B,
                                             TRR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0),
                 "cuTensorMapEncodeTiled");
    return TRR_OK;
}

static trr_status run_wgmma(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    trr_cuda_variant v;
    trr_cuda_variant_matmul_wgmma(&v, cfg, call->trans_b, call->x.dtype, call->z.dtype);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, "matmul_wgmma", &fn));
    trr_cu_tensor_map ta, tb;
    /* A [M,K] in 64 x 128 boxes (K x M); B [K,N] in 64 x 64 boxes (N x K), or B stored [N,K] in 64 x BN */
    TRR_TRY(encode_map(ctx, &ta, call->x.dtype, trr_cuda_operand_ptr(&call->x), call->rows, call->k, call->x.stride0,
                       TRR_CUDA_WGMMA_BK, TRR_CUDA_WGMMA_BM));
    if (call->trans_b)
        TRR_TRY(encode_map(ctx, &tb, call->y.dtype, trr_cuda_operand_ptr(&call->y), call->cols, call->k, call->y.stride0,
                           TRR_CUDA_WGMMA_BK, (unsigned)cfg->block_n));
    else
        TRR_TRY(encode_map(ctx, &tb, call->y.dtype, trr_cuda_operand_ptr(&call->y), call->k, call->cols, call->y.stride0, 64,
                           TRR_CUDA_WGMMA_BK));
    CUdeviceptr c = trr_cuda_operand_ptr(&call->z);
    long long ldc = call->z.stride0;
    int m = (int)call->rows, n = (int)call->cols, k = (int)call->k;
    int epi = (int)call->epilogue, group_m = cfg->group_m;
    float alpha = call->alpha;
    int64_t blocks = ((call->rows + cfg->block_m - 1) / cfg->block_m) * ((call->cols + cfg->block_n - 1) / cfg->block_n);
    if (blocks > 0x7fffffff) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: %lld blocks exceed the grid limit", (long long)blocks);
    void *args[] = {&ta, &tb, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m};
    return trr_cuda_launch(ctx, fn, (unsigned)blocks, 1, (unsigned)cfg->threads, (unsigned)trr_cuda_wgmma_smem(cfg), args);
}

trr_status trr_cuda_run_matmul(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    trr_cuda_variant v;
    const char *kernel;
    unsigned smem = 0;
    /* the variant is resolved and checked (config.c: check_config) before run */
    if (cfg->variant == TRR_VARIANT_WGMMA) return run_wgmma(ctx, call);
    if (cfg->variant == TRR_VARIANT_MMA) {
        trr_cuda_variant_matmul_mma(&v, cfg, call->trans_b, call->x.dtype, call->z.dtype);
        kernel = "matmul_mma";
        smem = (unsigned)trr_cuda_mma_smem(cfg);
    } else {
        /* Four consecutive elements load as one vector when leading dimensions and bases keep the alignment. */
        unsigned align = call->x.dtype == TRR_F32 ? 16u : 8u;
        int aligned = call->x.stride0 % 4 == 0 && call->y.stride0 % 4 == 0 &&
                      trr_cuda_operand_ptr(&call->x) % align == 0 && trr_cuda_operand_ptr(&call->y) % align == 0;
        trr_cuda_variant_matmul_simt(&v, cfg, call->x.dtype, call->z.dtype, call->trans_a, call->trans_b, aligned);
        kernel = "matmul_simt";
    }
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, kernel, &fn));
    CUdeviceptr a = trr_cuda_operand_ptr(&call->x), b = trr_cuda_operand_ptr(&call->y), c = trr_cuda_operand_ptr(&call->z);
    long long lda = call->x.stride0, ldb = call->y.stride0, ldc = call->z.stride0;
    int m = (int)call->rows, n = (int)call->cols, k = (int)call->k;
    int epi = (int)call->epilogue, group_m = cfg->group_m;
    float alpha = call->alpha;
    int64_t blocks = ((call->rows + cfg->block_m - 1) / cfg->block_m) * ((call->cols + cfg->block_n - 1) / cfg->block_n);
    if (blocks > 0x7fffffff) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: %lld blocks exceed the grid limit", (long long)blocks);
    void *args[] = {&a, &lda, &b, &ldb, &c, &ldc, &m, &n, &k, &epi, &alpha, &group_m};
    return trr_cuda_launch(ctx, fn, (unsigned)blocks, 1, (unsigned)cfg->threads, smem, args);
}
