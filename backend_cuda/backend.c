/* The CUDA backend's entry points (core/backend.h documents each slot; the ops: rules.c). */
#include "trr_cuda.h"

static trr_status cuda_native_context(trr_context *ctx, trr_native *out) {
    TRR_TRY(trr_cuda_bind(ctx)); /* the primary context current on the calling thread, as cuBLAS expects */
    trr_cuda_dev *dev = ctx->dev;
    /* The caller may put work on the stream from now on: nothing of ours may stay queued behind its back. */
    TRR_TRY(trr_cuda_batch_flush(ctx));
    dev->batch_off = 1;
    dev->native = 1;
    out->device = (void *)(intptr_t)dev->device;
    out->context = dev->context;
    out->queue = dev->stream;
    return TRR_OK;
}

/* a buffer handle is the CUdeviceptr itself (memory.c) */
static trr_status cuda_native_buffer(trr_context *ctx, void *mem, uint64_t *out_handle) {
    (void)ctx;
    *out_handle = (uint64_t)(uintptr_t)mem;
    return TRR_OK;
}

const trr_backend trr_backend_cuda = {
    .name = "cuda",
    .api_version = TRR_BACKEND_API_VERSION,
    .probe = trr_cuda_probe,
    .device_info = trr_cuda_device_info,
    .open = trr_cuda_open,
    .close = trr_cuda_close,
    .alloc = trr_cuda_alloc,
    .free = trr_cuda_free,
    .write = trr_cuda_write,
    .read = trr_cuda_read,
    .copy = trr_cuda_copy,
    .fill = trr_cuda_fill,
    .synchronize = trr_cuda_synchronize,
    .timer_start = trr_cuda_timer_start,
    .timer_stop = trr_cuda_timer_stop,
    .supports = trr_cuda_supports,
    .choose_config = trr_cuda_choose_config,
    .check_config = trr_cuda_check_config,
    .run = trr_cuda_run,
    .native_context = cuda_native_context,
    .native_buffer = cuda_native_buffer,
    .order_native = trr_cuda_order_native,
    .native_stream = trr_cuda_native_stream,
    /* memory allocated elsewhere */
    .wrap = trr_cuda_wrap,
    .unwrap = trr_cuda_unwrap,
};
