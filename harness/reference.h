/* The float64 reference: the definition of every op's semantics (docs/ops.md), computed on the host. */
#ifndef TRR_REFERENCE_H
#define TRR_REFERENCE_H

#include "backend.h"

/* Computes call in float64. The operands' mem fields are host base pointers (offsets and strides in elements,
 * exactly as a backend would see them); inputs are read in their dtype (f16 and u8 widened exactly). out gets
 * the results packed row-major: rows*cols values, or rows values for row_sum. The output operand (z) is not
 * touched. */
trr_status trr_reference_run(const trr_call *call, double *out);

/* The row norms' part of it (reference_norm.c): rms_norm and layer_norm of call (rows >= 1, cols >= 1), x.mem,
 * y.mem (w) and, for layer_norm, u.mem (b) host copies, eps in call->params[TRR_NORM_PARAM_EPS]. */
trr_status trr_reference_rms_norm(const trr_call *call, double *out);
trr_status trr_reference_layer_norm(const trr_call *call, double *out);

#endif
