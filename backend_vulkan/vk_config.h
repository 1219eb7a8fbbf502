/* What the Vulkan ops (vk_ops.c, where a call runs) and their configs (vk_config.c: the heuristic and the
 * checks) both need to know about the kernels. */
#ifndef TRR_VK_CONFIG_H
#define TRR_VK_CONFIG_H

#include "vk_internal.h"

/* Words per invocation of the copy kernel where no config applies (trr_buffer_copy): 2. The copy op takes it
 * from its config (block_n / (threads x vector_width)), whose default is the same 2. */
#define COPY_WORDS_PER_INVOCATION 2
/* Loads per invocation of elementwise.comp by default (vk_config.c says where each applies and why). */
#define ADD_LOADS_PER_INVOCATION 2                  /* add */
#define STREAM_LOADS_PER_INVOCATION 4               /* gelu, silu and rgb_to_grey */
#define GPU_ONE_LOAD_ELEMENTS ((int64_t)1 << 23)    /* on GPUs add, gelu and silu this long take 1 */

size_t trr_vk_dtype_bytes(trr_dtype t);

/* Each rule's heuristic (vk_config.c, vk_norm.c), limits and launch (vk_ops.c, vk_norm.c); vk_rules.c picks them by
 * the op's shape rule. */
void trr_vk_choose_stream(const trr_vk_device *d, trr_call *call); /* element-wise and planes */
void trr_vk_choose_rowwise(const trr_vk_device *d, trr_call *call); /* rows and row-reduce */
void trr_vk_choose_matmul(const trr_vk_device *d, trr_call *call);
/* what every rule checks first: a workgroup the device takes */
trr_status trr_vk_check_threads(trr_context *ctx, const trr_call *call);
trr_status trr_vk_check_stream(trr_context *ctx, const trr_call *call);
trr_status trr_vk_check_rowwise(trr_context *ctx, const trr_call *call);
trr_status trr_vk_check_matmul(trr_context *ctx, const trr_call *call);
trr_status trr_vk_run_elementwise(trr_context *ctx, const trr_call *call);
/* a user op's SPIR-V (core/user_op.h); its checks and launch (trr_user_prepare) within the workgroup limits */
trr_status trr_vk_run_user(trr_context *ctx, const trr_call *call);
trr_status trr_vk_user_prepare(trr_context *ctx, const trr_call *call, int64_t groups[3], int *threads);
trr_status trr_vk_run_planes(trr_context *ctx, const trr_call *call);
trr_status trr_vk_run_rowwise(trr_context *ctx, const trr_call *call);
trr_status trr_vk_run_matmul(trr_context *ctx, const trr_call *call);
/* elementwise.comp's ops (add, gelu, silu) may read 4-element vectors: every operand is one contiguous span
 * starting on a 4-element boundary (the binding starts 16-aligned). */
int trr_vk_elementwise_vec4_layout(const trr_call *c);
/* 1 for an op of the element-wise rule whose kernel the op table names by stem (cast: vk_ops.c's convert path). */
int trr_vk_convert_call(const trr_call *call);
/* The register softmaxes read 4-element vectors: rows 4-aligned on both sides, and subgroup arithmetic. */
int trr_vk_softmax_regs_layout(const trr_vk_device *d, const trr_call *c);
/* The register micro-tile (TM x TN) of the SIMT matmul for a config; 0 when the config has none. */
int trr_vk_micro_tile(const trr_config *cfg, int *out_tm, int *out_tn);

/* The cooperative-matrix matmul variants (coop_khr, coop_nv, cm2). */
int trr_vk_coop_variant(int v);
/* The cooperative kernel's matrix shape and subgroup size for variant v and input dtype in: on
 * VK_KHR_cooperative_matrix the shape picked from the device's list (vk_coop_shape.h) on the device's subgroup
 * size; the NV extensions' kernels take 16x16x16 on 32-wide subgroups. */
typedef struct trr_vk_coop_geom {
    int tm, tn, tk, sg;
} trr_vk_coop_geom;
trr_vk_coop_geom trr_vk_coop_geometry(const trr_vk_device *d, int v, trr_dtype in);
/* Subgroups along M for the cooperative kernel (matmul_coop.comp's WM); 0 when the block has no split. */
int trr_vk_coop_wm(const trr_config *cfg, trr_vk_coop_geom g);
/* Whether the subgroup kernel's stages value is one of its producer pipelines (4 to 6). */
int trr_vk_coop_producer_stages(int stages);
/* Its workgroup size: config.threads plus the producer subgroups of stages 4 to 6. */
int trr_vk_coop_invocations(const trr_config *cfg, trr_vk_coop_geom g);

#endif
