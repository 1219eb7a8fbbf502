/* Native handles (trr_context_native, trr_buffer_native): the seam through which another library, such as the
 * bench's cuBLAS ceiling, works on trireme's device, queue and buffers without reaching a backend's internals. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

trr_status trr_context_native(trr_context *ctx, trr_native *out_native) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "context_native: ctx is NULL");
    if (!out_native) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "context_native: out_native is NULL");
    memset(out_native, 0, sizeof *out_native);
    const trr_backend *be = ctx->backend;
    snprintf(out_native->backend, sizeof out_native->backend, "%s", be->name);
    if (!be->native_context)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "context_native: the %s backend exposes no native handles",
                         be->name);
    return be->native_context(ctx, out_native);
}

trr_status trr_buffer_native(const trr_buffer *buffer, uint64_t *out_handle) {
    if (!buffer) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "buffer_native: buffer is NULL");
    trr_context *ctx = buffer->ctx;
    if (!out_handle) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_native: out_handle is NULL");
    *out_handle = 0;
    const trr_backend *be = ctx->backend;
    if (!be->native_buffer)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "buffer_native: the %s backend exposes no native handles",
                         be->name);
    return be->native_buffer(ctx, buffer->mem, out_handle);
}
