/* Validation and normalisation of op calls: from public tensor views to the trr_call a backend receives. */
#ifndef TRR_VALIDATE_H
#define TRR_VALIDATE_H

#include "backend.h"
#include "op_table.h"

/* What an empty call (a zero dimension somewhere) still has to do. */
enum {
    TRR_CALL_RUNS = 0,     /* not empty: the backend runs it */
    TRR_CALL_NOTHING = 1,  /* the output is empty: nothing to do, nothing written */
    TRR_CALL_IDENTITY = 2  /* the output is not empty but the reduced dimension is (matmul K = 0, row_sum N = 0):
                              the output is the reduction's identity, 0 (docs/ops.md, Empty reductions) */
};

/* Validates one op call and normalises it (backend.h describes the forms). y is NULL for one-input ops.
 * Returns the first problem found with its own status and a message recorded on ctx. *out_empty is one of
 * TRR_CALL_*. Elementwise views of rank 3 or 4 that cannot be folded into rows x cols come back with slices > 1. */
trr_status trr_call_build(trr_context *ctx, trr_op op, const trr_tensor *x, const trr_tensor *y,
                          const trr_tensor *z, trr_epilogue epilogue, float alpha, unsigned flags,
                          trr_call *out_call, int *out_empty);

/* The same over every operand slot (op_table.h's TRR_SLOT_*; NULL where the op has none): what trr_op_run and
 * the harness call for ops of three inputs. */
trr_status trr_call_build_slots(trr_context *ctx, trr_op op, const trr_tensor *const slots[TRR_SLOTS],
                                trr_epilogue epilogue, float alpha, unsigned flags, trr_call *out_call,
                                int *out_empty);

/* The normalised call's parameters: copies the op's resolved values into call->params and derives what the
 * call's form keeps apart (attention's attn.scale and attn.causal). What trr_op_run and the harness call after
 * building a call. */
void trr_call_set_params(trr_call *call, const double params[TRR_MAX_OP_PARAMS]);

/* Writes the identity (zero) into a TRR_CALL_IDENTITY call's output through the backend's fill. */
trr_status trr_call_write_identity(trr_context *ctx, const trr_call *call);

/* The call for outer slice s of a sliced elementwise call (slices == 1 in the result). */
trr_call trr_call_slice(const trr_call *call, int64_t s);

/* Calls past the 32-bit index (parts.c): kernels index an operand from its offset in 32 bits, so a call (one
 * slice) whose operands span 2^31 elements or more runs as parts that each span fewer: ranges of elements, rows,
 * columns or a batch's matrices, as the op's shape rule allows. check_parts is TRR_OK when the call runs whole or
 * in parts, else TRR_ERR_OVERFLOW with what cannot be cut (one row past the limit for a row-wise op);
 * run_parts runs it, part after part, through run. */
trr_status trr_call_check_parts(trr_context *ctx, const trr_call *call);
trr_status trr_call_run_parts(trr_context *ctx, const trr_call *call,
                              trr_status (*run)(trr_context *ctx, const trr_call *part));
/* Tests only: the span (elements) from which a call is cut into parts, so the cutting runs on small tensors;
 * 0 restores 2^31. Not thread-safe: set it with no op in flight. */
void trr_call_part_limit_set(int64_t elements);
int64_t trr_call_part_limit(void);

/* Resolves the call's config once (config_resolve.c): the context's override, else the tuning database's entry
 * (skipped, with a one-time message, when the backend rejects it), then the backend's heuristic fills zero
 * fields, then the op table; then the backend's supports and check_config run once. *out_origin (may be NULL) says which of
 * them gave the config. TRR_OK when the call can
 * run as configured; else the backend's status and reason. */
trr_status trr_call_resolve_config(trr_context *ctx, trr_call *call, trr_config_origin *out_origin);

/* One view's argument checks (NULL, buffer, context, dtype, rank, negative sizes) and its alignment, overflow
 * and bounds checks with its byte range: validate.c's own steps, for the shape rules kept in their own files. */
trr_status trr_validate_tensor(trr_context *ctx, const trr_tensor *t, const char *name);
trr_status trr_validate_extent(trr_context *ctx, const trr_tensor *t, const char *name, size_t *out_begin,
                               size_t *out_end);
/* "[4,5,6]": a view's shape for messages. */
void trr_shape_text(const trr_tensor *t, char *out, size_t cap);

/* attention (attention.c): validates and normalises a call over the slots x = q, y = k, u = v, z = o, w = lse
 * (NULL: none); Skv = 0 with outputs that are not empty comes back as TRR_CALL_IDENTITY. set_params resolves
 * attn.scale (0: 1/sqrt(D)) and attn.causal from call->params; write_empty writes o = 0 and lse = -inf. */
trr_status trr_attention_call_build(trr_context *ctx, const trr_tensor *const slots[TRR_SLOTS], trr_call *out_call,
                                    int *out_empty);
void trr_attention_set_params(trr_call *call);
trr_status trr_attention_write_empty(trr_context *ctx, const trr_call *call);
/* attention's calls in parts (attention_parts.c): check_parts and run_parts above, for its axes (batches, query
 * heads by key/value groups, query rows; causal parts with the keys their rows see). */
trr_status trr_attention_check_parts(trr_context *ctx, const trr_call *call);
trr_status trr_attention_run_parts(trr_context *ctx, const trr_call *call,
                                   trr_status (*run)(trr_context *ctx, const trr_call *part));

#endif
