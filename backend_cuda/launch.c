/* Kernel launches on the context's stream: small ones through the batch, any on an idle stream through its
 * one-node graph (batch.c). */
#include "trr_cuda.h"

trr_status trr_cuda_launch(trr_context *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned block, void **args) {
    const trr_cuda_dev *dev = ctx->dev;
    /* queued only behind work the host has not waited for; on an idle stream launch_3d launches it at once */
    if (dev->busy && (uint64_t)gx * gy * block <= TRR_CUDA_BATCH_MAX_THREADS) {
        trr_cu_kernel_node_params p = {fn, gx, gy, 1, block, 1, 1, 0, args, NULL, NULL, NULL};
        int queued = 0;
        TRR_TRY(trr_cuda_batch_add(ctx, &p, &queued));
        if (queued) return TRR_OK;
    }
    return trr_cuda_launch_3d(ctx, fn, gx, gy, 1, block, 0, args);
}

trr_status trr_cuda_launch_3d(trr_context *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                              unsigned smem_bytes, void **args) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_batch_flush(ctx));
    /* Above 48 KB a kernel must opt in to dynamic shared memory; setting it again is cheap and idempotent. */
    if (smem_bytes > 48u * 1024u)
        TRR_CU_CHECK(ctx, trr_cu.FuncSetAttribute(fn, TRR_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem_bytes),
                     "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    trr_cu_kernel_node_params p = {fn, gx, gy, gz, block, 1, 1, smem_bytes, args, NULL, NULL, NULL};
    int launched = 0;
    TRR_TRY(trr_cuda_batch_launch_now(ctx, &p, &launched));
    if (launched) return TRR_OK;
    TRR_CU_CHECK(ctx, trr_cu.LaunchKernel(fn, gx, gy, gz, block, 1, 1, smem_bytes, dev->stream, args, NULL),
                 "cuLaunchKernel");
    trr_cuda_enqueued(dev);
    return TRR_OK;
}
