/* The float64 reference: the definition of every op's semantics (docs/ops.md), computed on the host. */
#ifndef TRR_REFERENCE_H
#define TRR_REFERENCE_H

#include "backend.h"

/* Computes call in float64. The operands' mem fields are host base pointers (offsets and strides in elements,
 * exactly as a backend would see them); inputs are read in their dtype (f16 and u8 widened exactly). out gets
 * the results packed row-major: rows*cols values, or rows values for row_sum. The output operand (z) is not
 * touched. */
trr_status trr_reference_run(const trr_call *call, double *out);

#endif
