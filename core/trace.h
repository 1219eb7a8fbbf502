/* TRIREME_TRACE=FILE: every op call as a Chrome / Perfetto trace event ({"traceEvents": [...]}, the format
 * chrome://tracing and ui.perfetto.dev open). Each event is a complete ("X") event named after the op, with the
 * host time it began and how long the call took on the host, and its arguments: the device, the status, each
 * operand's dtype, shape, strides and offset, the epilogue and flags of a matmul, and the tile config it ran with.
 *
 * Device time is recorded when TRIREME_TRACE_DEVICE_TIME=1 as well: each call then runs between the backend's
 * timer (trr_timer_start/stop), which waits for the device, so the trace changes what it traces (no overlap of
 * host and device work); the event's args carry device_us and its duration stays the host's, wait included.
 * Without it (the default), an asynchronous backend's duration is the host's submission time. A call made while
 * the caller's own timer runs is not timed again (the timers do not nest).
 *
 * Events are kept in memory (up to a million; later ones are counted as dropped) and the whole file is written
 * when a context is destroyed and at exit, each time there are calls it does not hold yet. The file is first
 * opened on the first traced call; when it cannot be written, one warning goes to stderr and tracing stops.
 * Nothing is printed to stdout. */
#ifndef TRR_TRACE_H
#define TRR_TRACE_H

#include "trireme.h"

/* The host time a call begins, or a negative number when tracing is off (one getenv per process). */
double trr_trace_begin(void);
/* Whether TRIREME_TRACE_DEVICE_TIME=1 asks for each call's device time. */
int trr_trace_device_time(void);
/* Records the call begun at t0 (when t0 >= 0), with its device time in ms when device_ms >= 0, and returns st
 * unchanged, so the hook wraps a return. */
trr_status trr_trace_end(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const double *params,
                         double t0, double device_ms, trr_status st);
/* Writes the trace file with every event so far (context destroy, exit). Safe to call when tracing is off. */
void trr_trace_flush(void);

#endif
