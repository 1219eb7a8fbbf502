/* A pipeline layout of storage buffers and push constants, and its descriptor sets (vk_bindset.h). */
#include "vk_bindset.h"

#include <stdlib.h>

trr_status trr_vk_bindset_create(trr_context *ctx, trr_vk_bindset *bs, uint32_t bindings, uint32_t push_bytes) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkDescriptorSetLayoutBinding *b = calloc(bindings, sizeof *b);
    if (!b) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    for (uint32_t i = 0; i < bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = d->push_set ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = bindings,
        .pBindings = b};
    bs->bindings = bindings;
    const VkResult r = d->fn.vkCreateDescriptorSetLayout(d->device, &lci, NULL, &bs->set_layout);
    free(b);
    TRR_VK_CHECK(ctx, r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = push_bytes};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &bs->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    TRR_VK_CHECK(ctx, d->fn.vkCreatePipelineLayout(d->device, &pci, NULL, &bs->layout), "vkCreatePipelineLayout");
    return TRR_OK;
}

trr_status trr_vk_bindset_bind(trr_context *ctx, trr_vk_bindset *bs, VkCommandBuffer cmd,
                               const VkDescriptorBufferInfo *info) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkWriteDescriptorSet wr[TRR_VK_BINDSET_MAX];
    if (bs->bindings > TRR_VK_BINDSET_MAX)
        return trr_error(ctx, TRR_ERR_INTERNAL, "vulkan: a layout of %u bindings (at most %d)", bs->bindings,
                         TRR_VK_BINDSET_MAX);
    for (uint32_t i = 0; i < bs->bindings; i++)
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &info[i]};
    if (d->push_set) {
        d->push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, bs->layout, 0, bs->bindings, wr);
        return TRR_OK;
    }
    const int slot = (int)(d->recording - d->slots);
    if (!bs->pools[slot]) {
        /* a batch holds at most TRR_VK_BATCH_OPS ops, so as many sets */
        VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                     .descriptorCount = bs->bindings * TRR_VK_BATCH_OPS};
        VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = TRR_VK_BATCH_OPS,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &size};
        TRR_VK_CHECK(ctx, d->fn.vkCreateDescriptorPool(d->device, &dci, NULL, &bs->pools[slot]),
                     "vkCreateDescriptorPool");
        bs->pool_seq[slot] = d->recording->seq;
    } else if (bs->pool_seq[slot] != d->recording->seq) {
        TRR_VK_CHECK(ctx, d->fn.vkResetDescriptorPool(d->device, bs->pools[slot], 0), "vkResetDescriptorPool");
        bs->pool_seq[slot] = d->recording->seq;
    }
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = bs->pools[slot],
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &bs->set_layout};
    VkDescriptorSet set;
    TRR_VK_CHECK(ctx, d->fn.vkAllocateDescriptorSets(d->device, &ai, &set), "vkAllocateDescriptorSets");
    for (uint32_t i = 0; i < bs->bindings; i++) wr[i].dstSet = set;
    d->fn.vkUpdateDescriptorSets(d->device, bs->bindings, wr, 0, NULL);
    d->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, bs->layout, 0, 1, &set, 0, NULL);
    return TRR_OK;
}

void trr_vk_bindset_destroy(trr_vk_device *d, trr_vk_bindset *bs) {
    for (int i = 0; i < TRR_VK_SLOTS; i++)
        if (bs->pools[i]) d->fn.vkDestroyDescriptorPool(d->device, bs->pools[i], NULL);
    if (bs->layout) d->fn.vkDestroyPipelineLayout(d->device, bs->layout, NULL);
    if (bs->set_layout) d->fn.vkDestroyDescriptorSetLayout(d->device, bs->set_layout, NULL);
    *bs = (trr_vk_bindset){0};
}
