/* How long timing code keeps a device busy before it times anything. Shared by the benchmarks and the tuner.
 *
 * A GPU's clocks can fall within 100 ms of idling (the host filling inputs or checking a result): under NVIDIA's
 * Vulkan driver the SM clock drops far below its top where CUDA keeps it up, and it takes a good fraction of a
 * second of steady load to come back. A few short calls do not bring it back, and a short warm-up still leaves
 * memory-bound figures well below those at full clock, so GPUs get 1 s. */
#ifndef TRR_WARMUP_H
#define TRR_WARMUP_H

#include "trireme.h"

/* Seconds of back-to-back calls before timing on ctx's device: 1 on a GPU, 0.05 on a CPU device, or
 * TRIREME_WARMUP_MS when set (0 and up). */
double trr_warmup_seconds(trr_context *ctx);

/* One round of what is warmed up (the bench's case and its vendor call in turn, or the tuner's op). */
typedef trr_status (*trr_warmup_fn)(trr_context *ctx, void *user);

/* Runs fn back to back for `seconds` (and at least min_rounds times), queued in bursts of about 20 ms with one
 * trr_synchronize each: the device stays busy, where calls that each wait for the host leave it idle between
 * them, long enough for NVIDIA's driver to lower the clock again. round_ms: a guess at one round's time (0: unknown, the first
 * burst is one round); each burst's own time sizes the next. Stops after seconds + 0.5 s whatever min_rounds. */
trr_status trr_warmup_run(trr_context *ctx, trr_warmup_fn fn, void *user, double round_ms, double seconds,
                          int min_rounds);

#endif
