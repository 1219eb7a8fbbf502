/* The Vulkan backend's ops by shape rule: each rule's heuristic, limits and launch, and the one place that decides
 * whether the backend runs an op (trr_vk_supports). An op reaches its shader through its definition: the rule of
 * its shape, and the shader its name, kind and dtypes name (vk_kinds.h), which the build made from the same
 * definition. */
#include "vk_config.h"
#include "vk_kinds.h"
#include "vk_norm.h"
#include "vk_attention.h"

#include "kernel_find.h"
#include "user_op.h"

#include <stdio.h>

typedef struct vk_rule {
    trr_op_shape shape;
    void (*choose)(const trr_vk_device *d, trr_call *call);
    trr_status (*check)(trr_context *ctx, const trr_call *call);
    trr_status (*run)(trr_context *ctx, const trr_call *call);
} vk_rule;

static const vk_rule rules[] = {
    {TRR_SHAPE_ELEMENTWISE, trr_vk_choose_stream, trr_vk_check_stream, trr_vk_run_elementwise},
    {TRR_SHAPE_PLANES, trr_vk_choose_stream, trr_vk_check_stream, trr_vk_run_planes},
    {TRR_SHAPE_ROWS, trr_vk_choose_rowwise, trr_vk_check_rowwise, trr_vk_run_rowwise},
    {TRR_SHAPE_ROW_REDUCE, trr_vk_choose_rowwise, trr_vk_check_rowwise, trr_vk_run_rowwise},
    {TRR_SHAPE_MATMUL, trr_vk_choose_matmul, trr_vk_check_matmul, trr_vk_run_matmul},
    {TRR_SHAPE_ROW_NORM, trr_vk_row_norm_choose, trr_vk_row_norm_check, trr_vk_row_norm_run},
    {TRR_SHAPE_ATTENTION, trr_vk_attention_choose, trr_vk_attention_check, trr_vk_attention_run},
};

/* user ops (core/user_op.h): the definition's SPIR-V and launch rule; tiles from the defaults, an override or the
 * tuning database, never a heuristic */
static void choose_user(const trr_vk_device *d, trr_call *call) { (void)d, (void)call; }
static trr_status check_user(trr_context *ctx, const trr_call *call) {
    int64_t groups[3];
    int threads = 0;
    return trr_vk_user_prepare(ctx, call, groups, &threads);
}
static const vk_rule user_rule = {TRR_SHAPE_ELEMENTWISE, choose_user, check_user, trr_vk_run_user};

static const vk_rule *rule_for(const trr_op_desc *d) {
    if (!d) return NULL;
    if (d->user) return &user_rule;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].shape == d->shape) return &rules[i];
    return NULL;
}

/* Whether the shader of each op and dtype pair was built, found once per definition. */
static trr_kernel_memo built[TRR_OP_COUNT][TRR_DTYPE_COUNT][TRR_DTYPE_COUNT];

trr_status trr_vk_supports(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    char why[256];
    if (!rule_for(desc)) {
        snprintf(why, sizeof why, "the Vulkan backend has no path for its shape rule (%d)",
                 desc ? (int)desc->shape : -1);
        return trr_kernel_unsupported(ctx, "vulkan", desc, why);
    }
    if (desc->shape == TRR_SHAPE_ELEMENTWISE && desc->bytewise) return TRR_OK; /* a byte copy: every dtype */
    if (desc->user) TRR_TRY(trr_user_need_code(ctx, desc->user, TRR_USER_VULKAN, "vulkan"));
    /* the shaders the definition names were built (vk_kinds.h): its rule's base kernel for these dtypes; a user
     * op's SPIR-V is its definition's */
    const trr_vk_rule_kinds *kinds = desc->user ? NULL : trr_vk_kinds_of(desc);
    trr_kernel_memo *memo = kinds ? &built[call->op][call->x.dtype][call->z.dtype] : NULL;
    if (kinds && trr_kernel_memo_get(memo, desc) != 1) {
        char shader[64], file[80];
        trr_vk_shader_name(shader, sizeof shader, desc, kinds->kind[0], call->x.dtype, call->z.dtype);
        snprintf(file, sizeof file, "%s.spv", shader);
        if (!trr_embedded_find(trr_vulkan_kernels, trr_vulkan_kernels_count, file)) {
            snprintf(why, sizeof why, "no %s was built (kernels/vulkan/%s%s.comp with ENTRY_%s)", file,
                     desc->kernel, kinds->kind[0], desc->name);
            return trr_kernel_unsupported(ctx, "vulkan", desc, why);
        }
        trr_kernel_memo_put(memo, desc, 1);
    }
    if (desc->shape == TRR_SHAPE_ROW_NORM && !desc->user) TRR_TRY(trr_vk_row_norm_supports(ctx, call));
    const trr_dtype types[2] = {call->x.dtype, call->z.dtype};
    for (int i = 0; i < 2; i++) {
        if ((types[i] == TRR_F16 || types[i] == TRR_BF16) && !d->phys.storage16)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s lacks storageBuffer16BitAccess, needed for %s",
                             d->phys.props.deviceName, trr_vk_dtype_suffix(types[i]));
        if ((types[i] == TRR_U8 || types[i] == TRR_F8E4M3 || types[i] == TRR_F8E5M2) && !d->phys.storage8)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s lacks storageBuffer8BitAccess, needed for %s",
                             d->phys.props.deviceName, trr_vk_dtype_suffix(types[i]));
    }
    return TRR_OK;
}

void trr_vk_choose_config(trr_context *ctx, trr_call *call) {
    const vk_rule *r = rule_for(trr_op_desc_get(call->op));
    if (r) r->choose(trr_vk_dev(ctx), call); /* else trr_vk_supports says why */
}

trr_status trr_vk_check_config(trr_context *ctx, const trr_call *call) {
    const vk_rule *r = rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_vk_supports(ctx, call);
    if (r == &user_rule) return r->check(ctx, call); /* its threads come from its launch rule */
    TRR_TRY(trr_vk_check_threads(ctx, call));
    return r->check(ctx, call);
}

trr_status trr_vk_run(trr_context *ctx, const trr_call *call) {
    const vk_rule *r = rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_vk_supports(ctx, call);
    return r->run(ctx, call);
}
