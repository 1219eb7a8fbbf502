/* Validation and normalisation of op calls: from public tensor views to the trr_call a backend receives. */
#ifndef TRR_VALIDATE_H
#define TRR_VALIDATE_H

#include "backend.h"

/* Validates one op call and normalises it (backend.h describes the forms). y is NULL for one-input ops.
 * Returns the first problem found with its own status and a message recorded on ctx. *out_empty is set when
 * the call has a zero dimension (valid, and nothing to do; for matmul a zero K leaves C untouched too). Rank-3
 * elementwise views that cannot be folded into rows x cols come back with slices > 1. */
trr_status trr_call_build(trr_context *ctx, trr_op op, const trr_tensor *x, const trr_tensor *y,
                          const trr_tensor *z, trr_epilogue epilogue, float alpha, unsigned flags,
                          trr_call *out_call, int *out_empty);

/* The call for outer slice s of a sliced elementwise call (slices == 1 in the result). */
trr_call trr_call_slice(const trr_call *call, int64_t s);

/* Fills the call's config: the context's override, then the backend's heuristic, then the op table. */
void trr_call_resolve_config(trr_context *ctx, trr_call *call);

#endif
