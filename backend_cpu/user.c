/* The CPU backend's user path (core/user_op.h): the definition's C function, given the call's operands as host
 * addresses (docs/custom-ops.md, the CPU's convention). */
#include "cpu.h"

#include "user_op.h"

trr_status trr_cpu_user(trr_context *ctx, const trr_call *call) {
    const trr_user_op *u = trr_op_desc_get(call->op)->user;
    if (!u->def.cpu)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu: %s has no kernel here: its definition gives no C function",
                         u->name);
    const trr_operand *ops[TRR_MAX_USER_OPERANDS];
    const int n = trr_user_operands(u, call, ops);
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &call->config, tiles);
    trr_op_cpu_args args = {{0}, {0}, call->rows, call->cols, call->z.dtype, call->params, tiles, u->def.user};
    for (int i = 0; i < n; i++) {
        size_t es = 1;
        trr_dtype_size(ops[i]->dtype, &es);
        args.operands[i] = (unsigned char *)ops[i]->mem + (size_t)ops[i]->offset * es;
        args.row_strides[i] = ops[i]->stride0;
    }
    u->def.cpu(&args);
    return TRR_OK;
}
