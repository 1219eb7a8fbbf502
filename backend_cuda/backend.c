/* The CUDA backend's entry points (core/backend.h documents each slot). */
#include "trr_cuda.h"

#include "op_table.h"

static trr_status cuda_run(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cuda_bind(ctx));
    /* ops whose kernel the op table names run by their shape rule's launcher */
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (d && d->kernel && d->shape == TRR_SHAPE_ROW_NORM) return trr_cuda_run_row_norm(ctx, call);
    switch (call->op) {
    case TRR_OP_COPY:
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU: return trr_cuda_run_elementwise(ctx, call);
    case TRR_OP_RGB_TO_GREY: return trr_cuda_run_rgb_to_grey(ctx, call);
    case TRR_OP_SOFTMAX: return trr_cuda_run_softmax(ctx, call);
    case TRR_OP_ROW_SUM: return trr_cuda_run_row_sum(ctx, call);
    case TRR_OP_MATMUL: return trr_cuda_run_matmul(ctx, call);
    case TRR_OP_ATTENTION: return trr_cuda_run_attention(ctx, call);
    default: return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda: op %d is not implemented", (int)call->op);
    }
}

static trr_status cuda_supports(trr_context *ctx, const trr_call *call) {
    /* every op table signature, bf16 included, has a kernel: the hand-picked ones by op (attention: every D up to
     * the op's limit, any strides), the others by their shape rule's launcher and the kernel file the op table
     * names */
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (!d || !d->kernel) return TRR_OK;
    trr_cuda_variant v;
    if (d->shape != TRR_SHAPE_ROW_NORM || !trr_cuda_variant_rule(&v, d->kernel, call->x.dtype, 0, 1))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda: %s has no kernel for its shape rule here (%s.cu)", d->name,
                         d->kernel);
    return TRR_OK;
}

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
    .supports = cuda_supports,
    .choose_config = trr_cuda_choose_config,
    .check_config = trr_cuda_check_config,
    .run = cuda_run,
    .native_context = cuda_native_context,
    .native_buffer = cuda_native_buffer,
    .order_native = trr_cuda_order_native,
    .native_stream = trr_cuda_native_stream,
    /* memory allocated elsewhere */
    .wrap = trr_cuda_wrap,
    .unwrap = trr_cuda_unwrap,
};
