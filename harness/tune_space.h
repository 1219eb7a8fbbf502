/* The tuner's search space: for one call on one device, the candidate configs to time. The candidates come
 * from data tables per backend kind and op (tune_space.c), are cut down by the device's limits (threads per
 * block, shared memory per block) and by the shape, and are then completed and judged by the backend itself
 * (choose_config fills what a candidate leaves at zero, check_config rejects what it cannot run). */
#ifndef TRR_TUNE_SPACE_H
#define TRR_TUNE_SPACE_H

#include "backend.h"
#include "op_table.h"

#define TRR_TUNE_MAX_CANDIDATES 512

typedef struct trr_tune_candidate {
    trr_config listed;   /* as the table lists it: zero fields are the backend's choice */
    trr_config resolved; /* what the call would run with: the backend's choices and the op table filled in */
    int dropped;         /* 1: not to be timed; reason says why */
    char reason[200];
} trr_tune_candidate;

/* Fills out (up to cap) with every candidate for call on ctx's device, dropped ones included with their
 * reason, in table order; *out_count is how many were written. Duplicates (two listed configs the backend
 * completes to the same one) are dropped as such. TRR_ERR_INVALID_ARGUMENT for a bad argument. */
trr_status trr_tune_space(trr_context *ctx, const trr_call *call, trr_tune_candidate *out, int cap,
                          int *out_count);

/* The shapes an op of this shape rule is tuned at when none are given, comma-separated: matmul M x N x K;
 * row-wise ops and rgb_to_grey rows x cols; element-wise ops n (or rows x cols). The full lists follow
 * docs/ops.md's benchmark sizes, sparsely; quick is for a first look or a CPU. "" for a rule without any. */
const char *trr_tune_default_shapes(trr_op_shape shape, int quick);

#endif
