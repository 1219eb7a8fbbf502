/* A pipeline layout of n storage-buffer bindings and one push-constant range, with the descriptor sets it needs
 * where the device has no push descriptors: the paths with their own operand lists (the row norms, attention)
 * share it. */
#ifndef TRR_VK_BINDSET_H
#define TRR_VK_BINDSET_H

#include "vk_internal.h"

/* The most bindings a layout here has (attention: q, k, v, o, lse and the two scratch buffers). */
#define TRR_VK_BINDSET_MAX 8

typedef struct trr_vk_bindset {
    uint32_t bindings;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    /* descriptor sets (no push descriptors): one pool per batch slot, reset when the slot holds a new batch
     * (open_batch waited for the old one); pool_seq is the batch its sets belong to */
    VkDescriptorPool pools[TRR_VK_SLOTS];
    uint64_t pool_seq[TRR_VK_SLOTS];
} trr_vk_bindset;

/* Creates bs's layouts: bindings storage buffers (pushed where the device pushes descriptors) and push_bytes of
 * push constants. On failure what was made stays in bs for trr_vk_bindset_destroy. */
trr_status trr_vk_bindset_create(trr_context *ctx, trr_vk_bindset *bs, uint32_t bindings, uint32_t push_bytes);
/* Binds info[0 .. bindings) in the open batch's command buffer: pushed, or a set from the batch slot's pool. */
trr_status trr_vk_bindset_bind(trr_context *ctx, trr_vk_bindset *bs, VkCommandBuffer cmd,
                               const VkDescriptorBufferInfo *info);
void trr_vk_bindset_destroy(trr_vk_device *d, trr_vk_bindset *bs);

#endif
