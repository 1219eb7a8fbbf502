/* The public op entry points: validate, resolve the tile config, check the backend can run it, dispatch. */
#include "backend.h"
#include "op_table.h"
#include "validate.h"

static trr_status dispatch(trr_context *ctx, trr_op op, const trr_tensor *x, const trr_tensor *y, const trr_tensor *z,
                           trr_epilogue epilogue, float alpha, unsigned flags) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    trr_call call;
    int empty = 0;
    TRR_TRY(trr_call_build(ctx, op, x, y, z, epilogue, alpha, flags, &call, &empty));
    if (empty) return TRR_OK;
    trr_call_resolve_config(ctx, &call);
    const trr_backend *be = ctx->backend;
    if (be->supports) TRR_TRY(be->supports(ctx, &call));
    if (be->check_config) TRR_TRY(be->check_config(ctx, &call));
    ctx->last_config = call.config;
    if (call.slices == 1) return be->run(ctx, &call);
    for (int64_t s = 0; s < call.slices; s++) {
        trr_call slice = trr_call_slice(&call, s);
        TRR_TRY(be->run(ctx, &slice));
    }
    return TRR_OK;
}

trr_status trr_copy(trr_context *ctx, const trr_tensor *x, const trr_tensor *z) {
    return dispatch(ctx, TRR_OP_COPY, x, NULL, z, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_add(trr_context *ctx, const trr_tensor *x, const trr_tensor *y, const trr_tensor *z) {
    return dispatch(ctx, TRR_OP_ADD, x, y, z, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_gelu(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) {
    return dispatch(ctx, TRR_OP_GELU, x, NULL, y, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_rgb_to_grey(trr_context *ctx, const trr_tensor *img, const trr_tensor *grey) {
    return dispatch(ctx, TRR_OP_RGB_TO_GREY, img, NULL, grey, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_softmax(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) {
    return dispatch(ctx, TRR_OP_SOFTMAX, x, NULL, y, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_row_sum(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) {
    return dispatch(ctx, TRR_OP_ROW_SUM, x, NULL, y, TRR_EPI_NONE, 0.0f, 0);
}

trr_status trr_matmul(trr_context *ctx, const trr_tensor *a, const trr_tensor *b, const trr_tensor *c,
                      trr_epilogue epilogue, float alpha, unsigned flags) {
    return dispatch(ctx, TRR_OP_MATMUL, a, b, c, epilogue, alpha, flags);
}
