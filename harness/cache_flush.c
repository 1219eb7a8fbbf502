/* A buffer larger than the last-level cache, written between timed repetitions so each starts cold (cache_flush.h). */
#include "cache_flush.h"

trr_status trr_cache_flush_create(trr_context *ctx, trr_cache_flush *out) {
    trr_device_info dev;
    out->buf = NULL;
    out->bytes = 0;
    trr_status st = trr_context_device(ctx, &dev);
    if (st != TRR_OK) return st;
    /* GPUs: 256 MiB is larger than any L2 (H200: 60 MB). CPU devices: 64 MiB is past a desktop or small server
     * last-level cache and keeps the fill cheap on a 2-core machine. */
    size_t bytes = dev.is_gpu ? (size_t)256 << 20 : (size_t)64 << 20;
    if (dev.global_memory && bytes > dev.global_memory / 8) bytes = (size_t)(dev.global_memory / 8);
    st = trr_buffer_create(ctx, bytes, &out->buf);
    if (st == TRR_OK) out->bytes = bytes;
    return st;
}

void trr_cache_flush_destroy(trr_cache_flush *flush) {
    if (flush && flush->buf) trr_buffer_destroy(flush->buf);
    if (flush) flush->buf = NULL, flush->bytes = 0;
}

trr_status trr_cache_flush_run(trr_context *ctx, const trr_cache_flush *flush, int rep) {
    if (!flush || !flush->buf) return TRR_OK;
    return trr_buffer_fill(ctx, flush->buf, 0, flush->bytes, (uint8_t)(rep * 17 + 1));
}
