/* The CUDA backend's ops by shape rule: each rule's heuristic, limits and launch, and the one place that decides
 * whether the backend runs an op (trr_cuda_supports). An op reaches its kernel through its definition: the rule
 * of its shape, the file of its stem, the entry of its name. */
#include "trr_cuda.h"

#include "kernel_find.h"
#include "user_op.h"

static const trr_cuda_rule rules[] = {
    {TRR_SHAPE_ELEMENTWISE, 0, trr_cuda_choose_elementwise, trr_cuda_check_stream, trr_cuda_run_elementwise},
    {TRR_SHAPE_PLANES, 0, trr_cuda_choose_planes, trr_cuda_check_stream, trr_cuda_run_rgb_to_grey},
    {TRR_SHAPE_ROWS, 0, trr_cuda_choose_rows, trr_cuda_check_rows, trr_cuda_run_softmax},
    {TRR_SHAPE_ROW_REDUCE, 0, trr_cuda_choose_row_reduce, trr_cuda_check_row_reduce, trr_cuda_run_row_sum},
    {TRR_SHAPE_MATMUL, 1, trr_cuda_choose_matmul, trr_cuda_check_matmul, trr_cuda_run_matmul},
    {TRR_SHAPE_ROW_NORM, 0, trr_cuda_choose_row_norm, trr_cuda_check_row_norm, trr_cuda_run_row_norm},
    {TRR_SHAPE_ATTENTION, 1, trr_cuda_choose_attention, trr_cuda_check_attention, trr_cuda_run_attention},
};

/* user ops (core/user_op.h): the definition's source and launch rule; tiles from the defaults, an override or the
 * tuning database, never a heuristic */
static void choose_user(const trr_cuda_dev *dev, trr_call *call) { (void)dev, (void)call; }
static trr_status check_user(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    (void)dev;
    int64_t groups[3];
    int threads = 0;
    return trr_cuda_user_prepare(ctx, call, groups, &threads);
}
static const trr_cuda_rule user_rule = {TRR_SHAPE_ELEMENTWISE, 1, choose_user, check_user, trr_cuda_run_user};

const trr_cuda_rule *trr_cuda_rule_for(const trr_op_desc *d) {
    if (!d) return NULL;
    if (d->user) return &user_rule;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].shape == d->shape) return &rules[i];
    return NULL;
}

/* Whether the kernel file of each op's stem has its entries, found once per definition. */
static trr_kernel_memo provided[TRR_OP_LIMIT];

trr_status trr_cuda_supports(trr_context *ctx, const trr_call *call) {
    const trr_kernel_sources src = {"cuda", "CUDA", trr_cuda_kernels, trr_cuda_kernels_count,
                                    "cu",   trr_cuda_rows_kinds, TRR_CUDA_ROWS_KINDS};
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_cuda_rule *r = trr_cuda_rule_for(d);
    return trr_kernel_sources_support(ctx, &src, d, r != NULL, r && r->own_files, TRR_USER_CUDA,
                                      &provided[call->op]);
}

trr_status trr_cuda_run(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cuda_bind(ctx));
    const trr_cuda_rule *r = trr_cuda_rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_cuda_supports(ctx, call);
    return r->run(ctx, call);
}
