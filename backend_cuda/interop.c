/* Ordering trireme's stream with another library's (trr_stream_wait_native, trr_native_wait_stream,
 * trr_context_stream): one event, recorded on the stream that goes first and waited for by the other, so
 * neither the host nor the rest of either stream waits. cuStreamWaitEvent takes the event as it was recorded
 * when the wait is enqueued, so the one event serves every hand-over in turn. */
#include "trr_cuda.h"

#include <stdint.h>

#define TRR_CU_EVENT_DISABLE_TIMING 0x2 /* cuda.h's CU_EVENT_DISABLE_TIMING: the cheapest event to record */

/* DLPack's and the driver's numbering agree (1 legacy, 2 per-thread); 0, which DLPack leaves ambiguous, is
 * taken as the driver takes a null stream: the legacy default stream. */
static CUstream other_stream(uint64_t native) { return native ? (CUstream)(uintptr_t)native : (CUstream)(uintptr_t)1; }

trr_status trr_cuda_order_native(trr_context *ctx, uint64_t native, int native_waits) {
    TRR_TRY(trr_cuda_bind(ctx));
    trr_cuda_dev *dev = ctx->dev;
    if (!dev->interop_event)
        TRR_CU_CHECK(ctx, trr_cu.EventCreate(&dev->interop_event, TRR_CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    /* kernels queued in batch.c were called for before this: they go onto the stream first */
    TRR_TRY(trr_cuda_batch_flush(ctx));
    const CUstream other = other_stream(native);
    if (native_waits) {
        if (!dev->busy) return TRR_OK; /* the host has waited for all of trireme's work: nothing to wait for */
        TRR_CU_CHECK(ctx, trr_cu.EventRecord(dev->interop_event, dev->stream), "cuEventRecord");
        trr_cuda_enqueued(dev);
        TRR_CU_CHECK(ctx, trr_cu.StreamWaitEvent(other, dev->interop_event, 0), "cuStreamWaitEvent");
        return TRR_OK;
    }
    TRR_CU_CHECK(ctx, trr_cu.EventRecord(dev->interop_event, other), "cuEventRecord");
    TRR_CU_CHECK(ctx, trr_cu.StreamWaitEvent(dev->stream, dev->interop_event, 0), "cuStreamWaitEvent");
    trr_cuda_enqueued(dev);
    return TRR_OK;
}

trr_status trr_cuda_native_stream(trr_context *ctx, uint64_t *out_stream) {
    const trr_cuda_dev *dev = ctx->dev;
    *out_stream = (uint64_t)(uintptr_t)dev->stream;
    return TRR_OK;
}
