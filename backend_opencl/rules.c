/* The OpenCL backend's ops by shape rule: each rule's heuristic, limits and launch, and the one place that decides
 * whether the backend runs an op (trr_cl_supports). An op reaches its kernel through its definition: the rule of
 * its shape, the file of its stem (kernels/opencl/<stem>.cl), the entry of its name. */
#include "opencl.h"

#include "kernel_find.h"
#include "user_op.h"

typedef struct cl_rule {
    trr_op_shape shape;
    int own_files; /* matmul: its host code picks its kernel files by variant */
    void (*choose)(trr_context *ctx, trr_call *call);
    trr_status (*check)(trr_context *ctx, const trr_call *call);
    trr_status (*run)(trr_context *ctx, const trr_call *call);
} cl_rule;

static const cl_rule rules[] = {
    {TRR_SHAPE_ELEMENTWISE, 0, trr_cl_choose_elementwise, trr_cl_check_elementwise, trr_cl_run_elementwise},
    {TRR_SHAPE_PLANES, 0, trr_cl_choose_planes, trr_cl_check_planes, trr_cl_run_rgb_to_grey},
    {TRR_SHAPE_ROWS, 0, trr_cl_choose_rows, trr_cl_check_rows, trr_cl_run_softmax},
    {TRR_SHAPE_ROW_REDUCE, 0, trr_cl_choose_row_reduce, trr_cl_check_row_reduce, trr_cl_run_row_sum},
    {TRR_SHAPE_MATMUL, 1, trr_cl_choose_matmul, trr_cl_check_matmul, trr_cl_run_matmul},
    {TRR_SHAPE_ROW_NORM, 0, trr_cl_choose_row_norm, trr_cl_check_row_norm, trr_cl_run_row_norm},
    {TRR_SHAPE_ATTENTION, 0, trr_cl_attention_choose_config, trr_cl_attention_check_config, trr_cl_run_attention},
};

/* user ops (core/user_op.h): the definition's source and launch rule; its tiles are the defaults, an override or
 * the tuning database's, never a heuristic's */
static void choose_user(trr_context *ctx, trr_call *call) { (void)ctx, (void)call; }
static trr_status check_user(trr_context *ctx, const trr_call *call) {
    int64_t groups[3];
    int threads = 0;
    return trr_user_prepare(ctx, trr_op_desc_get(call->op)->user, call, TRR_USER_OPENCL, "opencl",
                            ctx->info.max_threads_per_block, groups, &threads);
}
static const cl_rule user_rule = {TRR_SHAPE_ELEMENTWISE, 1, choose_user, check_user, trr_cl_run_user};

static const cl_rule *rule_for(const trr_op_desc *d) {
    if (!d) return NULL;
    if (d->user) return &user_rule;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].shape == d->shape) return &rules[i];
    return NULL;
}

/* Whether the kernel file of each op's stem has its entries, found once per definition. */
static trr_kernel_memo provided[TRR_OP_LIMIT];

trr_status trr_cl_supports(trr_context *ctx, const trr_call *call) {
    const trr_kernel_sources src = {"opencl", "OpenCL", trr_opencl_kernels, trr_opencl_kernels_count,
                                    "cl",     trr_cl_rows_kinds, TRR_CL_ROWS_KINDS};
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const cl_rule *r = rule_for(d);
    return trr_kernel_sources_support(ctx, &src, d, r != NULL, r && r->own_files, TRR_USER_OPENCL,
                                      &provided[call->op]);
}

void trr_cl_choose_config(trr_context *ctx, trr_call *call) {
    const cl_rule *r = rule_for(trr_op_desc_get(call->op));
    if (r) r->choose(ctx, call); /* else trr_cl_supports says why */
}

trr_status trr_cl_check_config(trr_context *ctx, const trr_call *call) {
    const cl_rule *r = rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_cl_supports(ctx, call);
    return r->check(ctx, call);
}

trr_status trr_cl_run(trr_context *ctx, const trr_call *call) {
    const cl_rule *r = rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_cl_supports(ctx, call);
    return r->run(ctx, call);
}
