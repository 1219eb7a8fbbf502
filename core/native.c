/* Native handles (trr_context_native, trr_buffer_native): the seam through which another library, such as the
 * bench's cuBLAS ceiling, works on trireme's device, queue and buffers without reaching a backend's internals. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

static trr_status context_native(trr_context *ctx, trr_native *out_native) {
    if (!out_native) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "context_native: out_native is NULL");
    memset(out_native, 0, sizeof *out_native);
    const trr_backend *be = ctx->backend;
    snprintf(out_native->backend, sizeof out_native->backend, "%s", be->name);
    if (!be->native_context)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "context_native: the %s backend exposes no native handles",
                         be->name);
    return be->native_context(ctx, out_native);
}

static trr_status buffer_native(trr_context *ctx, const trr_buffer *buffer, uint64_t *out_handle) {
    if (!out_handle) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_native: out_handle is NULL");
    *out_handle = 0;
    const trr_backend *be = ctx->backend;
    if (!be->native_buffer)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "buffer_native: the %s backend exposes no native handles",
                         be->name);
    return be->native_buffer(ctx, buffer->mem, out_handle);
}

trr_status trr_context_native(trr_context *ctx, trr_native *out_native) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "context_native: ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "context_native"));
    const trr_status st = context_native(ctx, out_native);
    trr_context_leave(ctx);
    return st;
}

trr_status trr_buffer_native(const trr_buffer *buffer, uint64_t *out_handle) {
    if (!buffer) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "buffer_native: buffer is NULL");
    trr_context *ctx = buffer->ctx;
    TRR_TRY(trr_context_enter(ctx, "buffer_native"));
    const trr_status st = buffer_native(ctx, buffer, out_handle);
    trr_context_leave(ctx);
    return st;
}

/* Why a backend has nothing to order with another library's stream, for TRR_ERR_UNSUPPORTED's detail. */
static trr_status no_streams(trr_context *ctx, const char *what) {
    const trr_backend *be = ctx->backend;
    if (strcmp(be->name, "cpu") == 0)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "%s: the cpu backend has no streams: every op has finished when its call returns", what);
    return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                     "%s: the %s backend does not order its queue with another library's (only cuda streams do); "
                     "trr_synchronize before the hand-over instead", what, be->name);
}

static trr_status order_native(trr_context *ctx, uint64_t native_stream, int native_waits, const char *what) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", what);
    TRR_TRY(trr_context_enter(ctx, what));
    const trr_backend *be = ctx->backend;
    const trr_status st = be->order_native ? be->order_native(ctx, native_stream, native_waits) : no_streams(ctx, what);
    trr_context_leave(ctx);
    return st;
}

trr_status trr_stream_wait_native(trr_context *ctx, uint64_t native_stream) {
    return order_native(ctx, native_stream, 0, "stream_wait_native");
}

trr_status trr_native_wait_stream(trr_context *ctx, uint64_t native_stream) {
    return order_native(ctx, native_stream, 1, "native_wait_stream");
}

trr_status trr_context_stream(trr_context *ctx, uint64_t *out_stream) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "context_stream: ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "context_stream"));
    trr_status st;
    if (!out_stream) st = trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "context_stream: out_stream is NULL");
    else {
        *out_stream = 0;
        const trr_backend *be = ctx->backend;
        st = be->native_stream ? be->native_stream(ctx, out_stream) : no_streams(ctx, "context_stream");
    }
    trr_context_leave(ctx);
    return st;
}
