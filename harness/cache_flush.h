/* Evicting a device's caches between timed repetitions, so small sizes are not measured from L2 (docs/ops.md,
 * Benchmarks). Shared by the benchmarks and the tuner. */
#ifndef TRR_CACHE_FLUSH_H
#define TRR_CACHE_FLUSH_H

#include "trireme.h"

#include <stddef.h>

typedef struct trr_cache_flush {
    trr_buffer *buf; /* NULL: flushing is off (the buffer could not be had) */
    size_t bytes;
} trr_cache_flush;

/* A buffer larger than the device's last-level cache: 256 MiB on GPUs, 64 MiB on CPU devices, never more than an
 * eighth of the device's memory. */
trr_status trr_cache_flush_create(trr_context *ctx, trr_cache_flush *out);
void trr_cache_flush_destroy(trr_cache_flush *flush);
/* Writes the whole buffer (a different byte each repetition, so no driver can skip it). Queue it before the
 * timer starts: it then delays the timed call but is not part of it. */
trr_status trr_cache_flush_run(trr_context *ctx, const trr_cache_flush *flush, int rep);

#endif
