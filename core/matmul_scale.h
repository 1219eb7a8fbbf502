/* The factor every backend's matmul applies to its f32 sums before the epilogue (docs/ops.md, matmul): the
 * product of the per-tensor scales of 8-bit float inputs, 1 for every other dtype (the front-end refuses other
 * scales there). */
#ifndef TRR_MATMUL_SCALE_H
#define TRR_MATMUL_SCALE_H

#include "backend.h"
#include "half.h"
#include "op_table.h"

static inline float trr_matmul_input_scale(const trr_call *call) {
    if (!trr_dtype_is_f8(call->x.dtype)) return 1.0f;
    return (float)call->params[TRR_MATMUL_PARAM_SCALE_A] * (float)call->params[TRR_MATMUL_PARAM_SCALE_B];
}

#endif
