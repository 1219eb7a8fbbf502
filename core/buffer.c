/* Device buffers: allocation and host transfers, bounds-checked before the backend sees them. */
#include "backend.h"

#include <stdlib.h>

/* offset + bytes must lie inside the buffer, computed without wrapping */
static trr_status check_range(trr_context *ctx, const trr_buffer *b, size_t offset, size_t bytes, const char *what) {
    if (offset > b->size || bytes > b->size - offset)
        return trr_error(ctx, TRR_ERR_OUT_OF_BOUNDS, "%s: range [%zu, %zu + %zu) exceeds the buffer's %zu bytes", what,
                         offset, offset, bytes, b->size);
    return TRR_OK;
}

static trr_status check_owner(trr_context *ctx, const trr_buffer *b, const char *what) {
    if (!b) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: buffer is NULL", what);
    if (b->ctx != ctx) return trr_error(ctx, TRR_ERR_WRONG_CONTEXT, "%s: buffer belongs to another context", what);
    return TRR_OK;
}

static trr_status buffer_create(trr_context *ctx, size_t bytes, trr_buffer **out_buffer) {
    if (!out_buffer) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "ctx or out_buffer is NULL");
    if (bytes == 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer size is zero");
    if (bytes > ctx->info.global_memory && ctx->info.global_memory > 0)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "%zu bytes requested; %s has %llu bytes", bytes, ctx->info.spec,
                         (unsigned long long)ctx->info.global_memory);
    trr_buffer *b = calloc(1, sizeof *b);
    if (!b) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "allocating a buffer handle");
    trr_status st = ctx->backend->alloc(ctx, bytes, &b->mem);
    if (st != TRR_OK) {
        free(b);
        return st;
    }
    b->ctx = ctx;
    b->size = bytes;
    ctx->refs++; /* the context stays open while the buffer lives */
    *out_buffer = b;
    return TRR_OK;
}

static trr_status buffer_wrap(trr_context *ctx, uint64_t native_handle, size_t bytes, trr_buffer **out_buffer) {
    if (!out_buffer) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "ctx or out_buffer is NULL");
    if (native_handle == 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_wrap: the native handle is 0");
    if (bytes == 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_wrap: size is zero");
    if (!ctx->backend->wrap)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "buffer_wrap: the %s backend cannot wrap memory allocated elsewhere",
                         ctx->backend->name);
    trr_buffer *b = calloc(1, sizeof *b);
    if (!b) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "allocating a buffer handle");
    trr_status st = ctx->backend->wrap(ctx, native_handle, bytes, &b->mem);
    if (st != TRR_OK) {
        free(b);
        return st;
    }
    b->ctx = ctx;
    b->size = bytes;
    ctx->refs++; /* the context stays open while the buffer lives */
    b->wrapped = 1;
    *out_buffer = b;
    return TRR_OK;
}

/* The context outlives its buffers (trireme.h): the device is still open here even after trr_context_destroy. */
trr_status trr_buffer_destroy(trr_buffer *buffer) {
    if (!buffer) return TRR_OK;
    trr_context *ctx = buffer->ctx;
    pthread_mutex_lock(&ctx->lock);
    const trr_backend *be = ctx->backend;
    if (!buffer->wrapped) be->free(ctx->dev, buffer->mem);
    else if (be->unwrap) be->unwrap(ctx->dev, buffer->mem);
    pthread_mutex_unlock(&ctx->lock);
    free(buffer);
    trr_context_release(ctx);
    return TRR_OK;
}

trr_status trr_buffer_size(const trr_buffer *buffer, size_t *out_bytes) {
    if (!buffer || !out_bytes) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "buffer or out_bytes is NULL");
    *out_bytes = buffer->size;
    return TRR_OK;
}

static trr_status buffer_write(trr_context *ctx, trr_buffer *dst, size_t offset, const void *src, size_t bytes) {
    TRR_TRY(check_owner(ctx, dst, "buffer_write"));
    if (!src && bytes) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_write: src is NULL");
    TRR_TRY(check_range(ctx, dst, offset, bytes, "buffer_write"));
    if (bytes == 0) return TRR_OK;
    return ctx->backend->write(ctx, dst->mem, offset, src, bytes);
}

static trr_status buffer_read(trr_context *ctx, const trr_buffer *src, size_t offset, void *dst, size_t bytes) {
    TRR_TRY(check_owner(ctx, src, "buffer_read"));
    if (!dst && bytes) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "buffer_read: dst is NULL");
    TRR_TRY(check_range(ctx, src, offset, bytes, "buffer_read"));
    if (bytes == 0) return TRR_OK;
    return ctx->backend->read(ctx, src->mem, offset, dst, bytes);
}

static trr_status buffer_copy(trr_context *ctx, trr_buffer *dst, size_t dst_offset, const trr_buffer *src,
                              size_t src_offset, size_t bytes) {
    TRR_TRY(check_owner(ctx, dst, "buffer_copy (dst)"));
    TRR_TRY(check_owner(ctx, src, "buffer_copy (src)"));
    TRR_TRY(check_range(ctx, dst, dst_offset, bytes, "buffer_copy (dst)"));
    TRR_TRY(check_range(ctx, src, src_offset, bytes, "buffer_copy (src)"));
    if (dst == src && dst_offset < src_offset + bytes && src_offset < dst_offset + bytes)
        return trr_error(ctx, TRR_ERR_OVERLAP, "buffer_copy: source and destination ranges overlap");
    if (bytes == 0) return TRR_OK;
    return ctx->backend->copy(ctx, dst->mem, dst_offset, src->mem, src_offset, bytes);
}

static trr_status buffer_fill(trr_context *ctx, trr_buffer *dst, size_t offset, size_t bytes, uint8_t value) {
    TRR_TRY(check_owner(ctx, dst, "buffer_fill"));
    TRR_TRY(check_range(ctx, dst, offset, bytes, "buffer_fill"));
    if (bytes == 0) return TRR_OK;
    return ctx->backend->fill(ctx, dst->mem, offset, bytes, value);
}

/* ---- the public entry points: each holds the context's lock (trireme.h, thread safety) ---- */

#define LOCKED(ctx, what, call)                                                                                \
    do {                                                                                                       \
        if (!(ctx)) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", what);                 \
        TRR_TRY(trr_context_enter(ctx, what));                                                                 \
        const trr_status locked_status_ = (call);                                                              \
        trr_context_leave(ctx);                                                                                \
        return locked_status_;                                                                                 \
    } while (0)

trr_status trr_buffer_create(trr_context *ctx, size_t bytes, trr_buffer **out_buffer) {
    LOCKED(ctx, "buffer_create", buffer_create(ctx, bytes, out_buffer));
}

trr_status trr_buffer_wrap(trr_context *ctx, uint64_t native_handle, size_t bytes, trr_buffer **out_buffer) {
    LOCKED(ctx, "buffer_wrap", buffer_wrap(ctx, native_handle, bytes, out_buffer));
}

trr_status trr_buffer_write(trr_context *ctx, trr_buffer *dst, size_t offset, const void *src, size_t bytes) {
    LOCKED(ctx, "buffer_write", buffer_write(ctx, dst, offset, src, bytes));
}

trr_status trr_buffer_read(trr_context *ctx, const trr_buffer *src, size_t offset, void *dst, size_t bytes) {
    LOCKED(ctx, "buffer_read", buffer_read(ctx, src, offset, dst, bytes));
}

trr_status trr_buffer_copy(trr_context *ctx, trr_buffer *dst, size_t dst_offset, const trr_buffer *src,
                           size_t src_offset, size_t bytes) {
    LOCKED(ctx, "buffer_copy", buffer_copy(ctx, dst, dst_offset, src, src_offset, bytes));
}

trr_status trr_buffer_fill(trr_context *ctx, trr_buffer *dst, size_t offset, size_t bytes, uint8_t value) {
    LOCKED(ctx, "buffer_fill", buffer_fill(ctx, dst, offset, bytes, value));
}
