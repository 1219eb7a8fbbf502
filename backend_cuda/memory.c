/* Buffers, transfers and timing. Every command goes on the context's one stream, after the queued kernels
 * (batch.c), so transfers are ordered after the kernels before them; host transfers then wait, because the
 * caller's memory is pageable and may be reused as soon as we return. */
#include "trr_cuda.h"

#include <stdio.h>

CUdeviceptr trr_cuda_operand_ptr(const trr_operand *op) {
    size_t esize = 1;
    trr_dtype_size(op->dtype, &esize);
    return (CUdeviceptr)(uintptr_t)op->mem + (CUdeviceptr)op->offset * esize;
}

/* A buffer handle is the device address itself: no bookkeeping to allocate or free. */
static CUdeviceptr addr(void *mem, size_t offset) { return (CUdeviceptr)(uintptr_t)mem + offset; }

trr_status trr_cuda_alloc(trr_context *ctx, size_t bytes, void **out_mem) {
    TRR_TRY(trr_cuda_bind(ctx));
    CUdeviceptr p = 0;
    /* cuMemAlloc rejects 0 bytes; an empty buffer still needs a distinct, freeable handle. */
    TRR_CU_CHECK(ctx, trr_cu.MemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    *out_mem = (void *)(uintptr_t)p;
    return TRR_OK;
}

void trr_cuda_free(void *handle, void *mem) {
    trr_cuda_dev *dev = handle;
    trr_cu.CtxSetCurrent(dev->context);
    /* Kernels still queued may read the buffer; cuMemFree does not wait for a non-blocking stream. */
    trr_cuda_batch_flush_dev(dev);
    trr_cu.StreamSynchronize(dev->stream);
    trr_cuda_waited(dev);
    trr_cu.MemFree((CUdeviceptr)(uintptr_t)mem);
}

/* A wrapped CUdeviceptr must lie, with all its bytes, inside one allocation the driver knows in this context
 * (the primary context, which the CUDA runtime and frameworks share). */
trr_status trr_cuda_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem) {
    TRR_TRY(trr_cuda_bind(ctx));
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = trr_cu.MemGetAddressRange(&base, &size, (CUdeviceptr)native);
    if (r != 0) {
        const char *name = NULL;
        if (trr_cu.GetErrorName(r, &name) != 0 || !name) name = "unknown";
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                         "cuda: 0x%llx is not device memory of this context (cuMemGetAddressRange: %s)",
                         (unsigned long long)native, name);
    }
    if ((CUdeviceptr)native - base > size || bytes > size - ((CUdeviceptr)native - base))
        return trr_error(ctx, TRR_ERR_OUT_OF_BOUNDS,
                         "cuda: 0x%llx + %zu bytes reaches past its allocation (0x%llx, %zu bytes)",
                         (unsigned long long)native, bytes, (unsigned long long)base, size);
    *out_mem = (void *)(uintptr_t)native;
    return TRR_OK;
}

void trr_cuda_unwrap(void *handle, void *mem) {
    (void)mem;
    trr_cuda_dev *dev = handle;
    /* The owner may free the memory as soon as we forget it: let the kernels queued on it finish. */
    trr_cu.CtxSetCurrent(dev->context);
    trr_cuda_batch_flush_dev(dev);
    trr_cu.StreamSynchronize(dev->stream);
    trr_cuda_waited(dev);
}

trr_status trr_cuda_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx));
    TRR_CU_CHECK(ctx, trr_cu.MemcpyHtoDAsync(addr(mem, offset), src, bytes, dev->stream), "cuMemcpyHtoDAsync");
    TRR_CU_CHECK(ctx, trr_cu.StreamSynchronize(dev->stream), "cuStreamSynchronize");
    trr_cuda_waited(dev);
    return TRR_OK;
}

trr_status trr_cuda_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx));
    TRR_CU_CHECK(ctx, trr_cu.MemcpyDtoHAsync(dst, addr(mem, offset), bytes, dev->stream), "cuMemcpyDtoHAsync");
    TRR_CU_CHECK(ctx, trr_cu.StreamSynchronize(dev->stream), "cuStreamSynchronize");
    trr_cuda_waited(dev);
    return TRR_OK;
}

trr_status trr_cuda_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                         size_t bytes) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx));
    TRR_CU_CHECK(ctx, trr_cu.MemcpyDtoDAsync(addr(dst, dst_offset), addr(src, src_offset), bytes, dev->stream),
                 "cuMemcpyDtoDAsync");
    trr_cuda_enqueued(dev);
    return TRR_OK;
}

trr_status trr_cuda_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx));
    TRR_CU_CHECK(ctx, trr_cu.MemsetD8Async(addr(mem, offset), value, bytes, dev->stream), "cuMemsetD8Async");
    trr_cuda_enqueued(dev);
    return TRR_OK;
}

trr_status trr_cuda_synchronize(trr_context *ctx) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx));
    TRR_CU_CHECK(ctx, trr_cuda_wait_stream(dev), "cuStreamSynchronize");
    trr_cuda_waited(dev);
    return TRR_OK;
}

trr_status trr_cuda_timer_start(trr_context *ctx) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_TRY(trr_cuda_bind(ctx));
    TRR_TRY(trr_cuda_batch_flush(ctx)); /* before the start: the queued kernels are not the timed work */
    TRR_CU_CHECK(ctx, trr_cu.EventRecord(dev->timer_begin, dev->stream), "cuEventRecord");
    trr_cuda_enqueued(dev);
    dev->timing = 1;
    return TRR_OK;
}

trr_status trr_cuda_timer_stop(trr_context *ctx, double *out_ms) {
    trr_cuda_dev *dev = ctx->dev;
    if (!dev->timing) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "trr_timer_stop without trr_timer_start");
    TRR_TRY(trr_cuda_bind(ctx));
    dev->timing = 0;
    TRR_CU_CHECK(ctx, trr_cu.EventRecord(dev->timer_end, dev->stream), "cuEventRecord");
    TRR_CU_CHECK(ctx, trr_cu.EventSynchronize(dev->timer_end), "cuEventSynchronize");
    trr_cuda_waited(dev);
    float ms = 0.0f;
    TRR_CU_CHECK(ctx, trr_cu.EventElapsedTime(&ms, dev->timer_begin, dev->timer_end), "cuEventElapsedTime");
    *out_ms = ms;
    return TRR_OK;
}

trr_status trr_cuda_scratch_get(trr_context *ctx, trr_cuda_scratch *s, size_t bytes, const char *what,
                                CUdeviceptr *out) {
    if (s->ptr && s->bytes >= bytes) {
        *out = s->ptr;
        return TRR_OK;
    }
    trr_cuda_dev *dev = ctx->dev;
    if (s->ptr) {
        TRR_TRY(trr_cuda_batch_flush(ctx));
        TRR_CU_CHECK(ctx, trr_cuda_wait_stream(dev), "cuStreamSynchronize");
        trr_cuda_waited(dev);
        trr_cu.MemFree(s->ptr);
        s->ptr = 0;
        s->bytes = 0;
    }
    /* room to grow, in whole MiB: the next call of a similar size finds it large enough */
    size_t want = bytes + bytes / 4;
    want = (want + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
    CUdeviceptr p = 0;
    const CUresult r = trr_cu.MemAlloc(&p, want);
    if (r != TRR_CUDA_SUCCESS) {
        char fname[128];
        snprintf(fname, sizeof fname, "cuMemAlloc (%s)", what);
        return trr_cuda_fail(ctx, fname, r);
    }
    s->ptr = p;
    s->bytes = want;
    *out = p;
    return TRR_OK;
}
