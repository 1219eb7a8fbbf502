/* TRIREME_TRACE=FILE: every op call as a Chrome / Perfetto trace event ({"traceEvents": [...]}, the format
 * chrome://tracing and ui.perfetto.dev open). Each event is a complete ("X") event named after the op, with the
 * host time it began and how long the call took on the host, and its arguments: the device, the status, each
 * operand's dtype, shape, strides and offset, the epilogue and flags of a matmul, and the tile config it ran with.
 *
 * Device time is not recorded: a call's device time is known only after the device finishes it, and waiting for
 * that on every call would change what is traced (the bench's timer, trr_timer_start/stop, measures it instead).
 * So for an asynchronous backend the duration is the host's submission time.
 *
 * Events are kept in memory (up to a million; later ones are counted as dropped) and the whole file is written
 * when a context is destroyed and at exit. The file is first opened on the first traced call; when it cannot be
 * written, one warning goes to stderr and tracing stops. Nothing is printed to stdout. */
#ifndef TRR_TRACE_H
#define TRR_TRACE_H

#include "trireme.h"

/* The host time a call begins, or a negative number when tracing is off (one getenv per process). */
double trr_trace_begin(void);
/* Records the call begun at t0 (when t0 >= 0) and returns st unchanged, so the hook wraps a return. */
trr_status trr_trace_end(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const trr_op_params *params,
                         double t0, trr_status st);
/* Writes the trace file with every event so far (context destroy, exit). Safe to call when tracing is off. */
void trr_trace_flush(void);

#endif
