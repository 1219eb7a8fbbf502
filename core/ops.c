/* The public op entry points: validate, resolve the tile config, check the backend can run it, dispatch. */
#include "backend.h"
#include "half.h"
#include "op_params.h"
#include "op_table.h"
#include "trace.h"
#include "user_op.h"
#include "validate.h"

static trr_status dispatch(trr_context *ctx, trr_op op, const trr_tensor *const slots[TRR_SLOTS],
                           const double params[TRR_MAX_OP_PARAMS]) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    trr_call call;
    int empty = 0;
    /* matmul's declared parameters in the form validation and the backends take them */
    const int mm = trr_op_desc_get(op)->shape == TRR_SHAPE_MATMUL;
    const trr_epilogue epilogue = mm ? (trr_epilogue)params[TRR_MATMUL_PARAM_EPILOGUE] : TRR_EPI_NONE;
    const float alpha = mm ? (float)params[TRR_MATMUL_PARAM_ALPHA] : 0.0f;
    const unsigned flags = mm && params[TRR_MATMUL_PARAM_ALLOW_TF32] != 0.0 ? TRR_MATMUL_ALLOW_TF32 : 0u;
    TRR_TRY(trr_call_build_slots(ctx, op, slots, epilogue, alpha, flags, &call, &empty));
    /* the per-tensor scales are the 8-bit floats' (their inputs carry a scale); other dtypes take the default */
    if (mm && !trr_dtype_is_f8(call.x.dtype) &&
        (params[TRR_MATMUL_PARAM_SCALE_A] != 1.0 || params[TRR_MATMUL_PARAM_SCALE_B] != 1.0)) {
        const char *name = "?";
        trr_dtype_name(call.x.dtype, &name);
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                         "matmul: scale_a and scale_b scale 8-bit float inputs; %s inputs take only 1 (got %g, %g)",
                         name, params[TRR_MATMUL_PARAM_SCALE_A], params[TRR_MATMUL_PARAM_SCALE_B]);
    }
    trr_call_set_params(&call, params);
    if (empty == TRR_CALL_NOTHING) return TRR_OK;
    if (empty == TRR_CALL_IDENTITY) return trr_call_write_identity(ctx, &call);
    /* supports and check_config ran there, once: the config is final */
    trr_config_origin origin;
    TRR_TRY(trr_call_resolve_config(ctx, &call, &origin));
    const trr_backend *be = ctx->backend;
    ctx->last_config = call.config;
    ctx->last_config_origin = origin;
    /* each slice whole, or in parts each kernel can index (parts.c); a user op of rank-1 operands one row at a
     * time */
    const trr_user_op *u = trr_op_desc_get(op)->user;
    trr_status (*run)(trr_context *, const trr_call *) = u && u->rank == 1 ? trr_user_run_rows : be->run;
    if (call.slices == 1) return trr_call_run_parts(ctx, &call, run);
    for (int64_t s = 0; s < call.slices; s++) {
        trr_call slice = trr_call_slice(&call, s);
        TRR_TRY(trr_call_run_parts(ctx, &slice, run));
    }
    return TRR_OK;
}

trr_status trr_op_get_info(trr_op op, trr_op_info *out_info) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (!out_info) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_info is NULL");
    out_info->name = d->name;
    out_info->n_inputs = d->n_inputs;
    out_info->operands = d->operands;
    out_info->n_params = d->n_params;
    out_info->n_outputs = trr_op_outputs(d);
    return TRR_OK;
}

static trr_status op_run(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const trr_op_params *params) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (!operands) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: operands is NULL", d->name);
    double values[TRR_MAX_OP_PARAMS];
    TRR_TRY(trr_op_params_resolve(ctx, d, params, values));
    const trr_tensor *slots[TRR_SLOTS] = {NULL};
    for (int i = 0; i < d->n_inputs + trr_op_outputs(d); i++) slots[trr_slot_of_operand(d->n_inputs, i)] = operands[i];
    const double trace_t0 = trr_trace_begin(); /* TRIREME_TRACE (trace.h) */
    /* TRIREME_TRACE_DEVICE_TIME=1: the call between the backend's timer, unless the caller is timing already */
    const int timed = trace_t0 >= 0 && trr_trace_device_time() && !ctx->timer_running &&
                      ctx->backend->timer_start(ctx) == TRR_OK;
    trr_status st = dispatch(ctx, op, slots, values);
    double device_ms = -1.0;
    if (timed && ctx->backend->timer_stop(ctx, &device_ms) != TRR_OK) device_ms = -1.0;
    return trr_trace_end(ctx, op, operands, values, trace_t0, device_ms, st);
}

/* The whole call under the context's lock (trireme.h, thread safety): validation reads the buffers' sizes, the
 * backend's queue and caches are the context's. */
trr_status trr_op_run(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const trr_op_params *params) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "op_run"));
    const trr_status st = op_run(ctx, op, operands, params);
    trr_context_leave(ctx);
    return st;
}

#define RUN(op, ...)                                                                                           \
    do {                                                                                                       \
        const trr_tensor *const operands_[] = {__VA_ARGS__};                                                   \
        return trr_op_run(ctx, op, operands_, NULL);                                                           \
    } while (0)

trr_status trr_copy(trr_context *ctx, const trr_tensor *x, const trr_tensor *z) { RUN(TRR_OP_COPY, x, z); }
trr_status trr_add(trr_context *ctx, const trr_tensor *x, const trr_tensor *y, const trr_tensor *z) {
    RUN(TRR_OP_ADD, x, y, z);
}
trr_status trr_gelu(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) { RUN(TRR_OP_GELU, x, y); }
trr_status trr_silu(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) { RUN(TRR_OP_SILU, x, y); }
trr_status trr_rgb_to_grey(trr_context *ctx, const trr_tensor *img, const trr_tensor *grey) {
    RUN(TRR_OP_RGB_TO_GREY, img, grey);
}
trr_status trr_softmax(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) { RUN(TRR_OP_SOFTMAX, x, y); }
trr_status trr_cast(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) { RUN(TRR_OP_CAST, x, y); }
trr_status trr_row_sum(trr_context *ctx, const trr_tensor *x, const trr_tensor *y) { RUN(TRR_OP_ROW_SUM, x, y); }

trr_status trr_rms_norm(trr_context *ctx, const trr_tensor *x, const trr_tensor *w, const trr_tensor *y, float eps) {
    const trr_tensor *const operands[] = {x, w, y};
    const trr_op_params params = {1, {{"eps", (double)eps}}};
    return trr_op_run(ctx, TRR_OP_RMS_NORM, operands, &params);
}

trr_status trr_layer_norm(trr_context *ctx, const trr_tensor *x, const trr_tensor *w, const trr_tensor *b,
                          const trr_tensor *y, float eps) {
    const trr_tensor *const operands[] = {x, w, b, y};
    const trr_op_params params = {1, {{"eps", (double)eps}}};
    return trr_op_run(ctx, TRR_OP_LAYER_NORM, operands, &params);
}

trr_status trr_matmul(trr_context *ctx, const trr_tensor *a, const trr_tensor *b, const trr_tensor *c,
                      trr_epilogue epilogue, float alpha, unsigned flags) {
    const trr_tensor *const operands[] = {a, b, c};
    if (flags & ~TRR_MATMUL_ALLOW_TF32)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "matmul: unknown flags 0x%x", flags & ~TRR_MATMUL_ALLOW_TF32);
    /* only leaky_relu reads alpha: the others ignore it, whatever it holds */
    trr_op_params params = {2, {{"epilogue", (double)epilogue}, {"allow_tf32", (flags & TRR_MATMUL_ALLOW_TF32) ? 1.0 : 0.0}}};
    if (epilogue == TRR_EPI_LEAKY_RELU) params.values[params.count++] = (trr_param_value){"alpha", (double)alpha};
    return trr_op_run(ctx, TRR_OP_MATMUL, operands, &params);
}

trr_status trr_attention(trr_context *ctx, const trr_tensor *q, const trr_tensor *k, const trr_tensor *v,
                         const trr_tensor *o, const trr_tensor *lse, float scale, int causal) {
    const trr_tensor *const operands[] = {q, k, v, o, lse};
    const trr_op_params params = {2, {{"scale", (double)scale}, {"causal", causal ? 1.0 : 0.0}}};
    return trr_op_run(ctx, TRR_OP_ATTENTION, operands, &params);
}
