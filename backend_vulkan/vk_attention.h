/* attention on the Vulkan backend (vk_attention.c): its own host code, as matmul's; vk_ops.c and vk_config.c call in
 * here by op. */
#ifndef TRR_VK_ATTENTION_H
#define TRR_VK_ATTENTION_H

#include "vk_internal.h"
#include "vk_norm.h" /* trr_vk_bind, trr_vk_loop_budget */

/* Completes the call's config: variant (coop_khr for prefill where attention_coop.comp runs the call, else simt),
 * threads, block_m (query rows per workgroup), block_n (keys per block). */
void trr_vk_attention_choose(const trr_vk_device *d, trr_call *call);
/* Refuses a config the kernel cannot run here (shared memory, the loop budget, the grid), with the reason. */
trr_status trr_vk_attention_check(trr_context *ctx, const trr_call *call);
trr_status trr_vk_attention_run(trr_context *ctx, const trr_call *call);
/* Frees what the path created on the device (layouts, descriptor pools, the split scratch); at close. */
void trr_vk_attention_destroy(trr_vk_device *d);

#endif
