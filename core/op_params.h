/* Named op parameters resolved against an op's definition (op_table.h declares each op's parameters). */
#ifndef TRR_OP_PARAMS_H
#define TRR_OP_PARAMS_H

#include "backend.h"
#include "op_table.h"

/* Every declared parameter's value in slot order: the default, or the value params gives, checked against its
 * type; unknown or repeated names are TRR_ERR_INVALID_ARGUMENT with the op's parameter list. params may be NULL. */
trr_status trr_op_params_resolve(trr_context *ctx, const trr_op_desc *d, const trr_op_params *params,
                                 double out_values[TRR_MAX_OP_PARAMS]);

#endif
