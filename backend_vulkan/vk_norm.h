/* The row-norm ops on the Vulkan backend (vk_norm.c): the generic path for op_table.h's TRR_SHAPE_ROW_NORM,
 * reached by the op's shape rule and kernel stem rather than by op id (vk_rules.c). */
#ifndef TRR_VK_NORM_H
#define TRR_VK_NORM_H

#include "vk_internal.h"

/* The device can run it at all (subgroup arithmetic); else TRR_ERR_UNSUPPORTED with the reason. */
trr_status trr_vk_row_norm_supports(trr_context *ctx, const trr_call *call);
/* Completes the call's config: threads, vector_width, block_n (the longest row held in registers). */
void trr_vk_row_norm_choose(const trr_vk_device *d, trr_call *call);
/* Refuses a config the kernel cannot run, with the reason. */
trr_status trr_vk_row_norm_check(trr_context *ctx, const trr_call *call);
trr_status trr_vk_row_norm_run(trr_context *ctx, const trr_call *call);
/* A user row op (core/user_op.h) by its launch rule's groups and threads, in the row ops' layout (bindings 0..4
 * the operands, docs/custom-ops.md). */
struct trr_user_op;
trr_status trr_vk_run_user_rows(trr_context *ctx, const trr_call *call, const struct trr_user_op *u,
                                const int64_t groups[3], int threads);
/* Frees what the path created on the device (its layouts and descriptor pools); at close. */
void trr_vk_norm_destroy(trr_vk_device *d);

/* vk_ops.c: binds an operand at the largest aligned offset at or below its first element (the element offset
 * from there in *out_elem_offset); TRR_ERR_UNSUPPORTED where the span is past one binding. */
trr_status trr_vk_bind(trr_context *ctx, const trr_operand *o, int64_t extent, VkDescriptorBufferInfo *info,
                       uint32_t *out_elem_offset);
/* vk_config.c: the most loop iterations an invocation may run on this device (lavapipe stops at 65535). */
uint64_t trr_vk_loop_budget(const trr_vk_device *d);

#endif
