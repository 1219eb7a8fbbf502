/* matmul: the tensor-core kernel for f16 with aligned row-major A, the CUDA-core kernel for everything else
 * (f32 always: true f32 arithmetic; TF32 is permitted by allow_tf32 but never required, so it is not used). */
#include "trr_cuda.h"

trr_status trr_cuda_run_matmul(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    const trr_config *cfg = &call->config;
    trr_cuda_variant v;
    const char *kernel;
    unsigned smem = 0;
    if (trr_cuda_matmul_path_for(dev, call) == TRR_CUDA_MATMUL_MMA) {
        trr_cuda_variant_matmul_mma(&v, cfg, call->trans_b, call->z.dtype);
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
