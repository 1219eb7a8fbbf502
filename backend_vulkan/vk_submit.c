/* Command recording and submission. Each op records one command buffer into the next slot of a ring and
 * submits it with that slot's fence, without waiting; synchronize waits for every slot in flight. Every command
 * buffer starts with a memory barrier, which (barriers order all earlier submissions on the queue) makes each
 * op see the writes of every op before it, and ends with one that makes its writes visible to the host. */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

trr_status trr_vk_slots_create(trr_context *ctx, trr_vk_device *d) {
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    TRR_VK_CHECK(ctx, d->fn.vkCreateCommandPool(d->device, &pci, NULL, &d->cmd_pool), "vkCreateCommandPool");
    VkDescriptorPoolSize sizes = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3 * 4};
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        trr_vk_slot *s = &d->slots[i];
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = d->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        TRR_VK_CHECK(ctx, d->fn.vkAllocateCommandBuffers(d->device, &ai, &s->cmd), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        TRR_VK_CHECK(ctx, d->fn.vkCreateFence(d->device, &fci, NULL, &s->fence), "vkCreateFence");
        VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = 4,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &sizes};
        TRR_VK_CHECK(ctx, d->fn.vkCreateDescriptorPool(d->device, &dci, NULL, &s->pool), "vkCreateDescriptorPool");
    }
    return TRR_OK;
}

void trr_vk_slots_destroy(trr_vk_device *d) {
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        trr_vk_slot *s = &d->slots[i];
        if (s->fence) d->fn.vkDestroyFence(d->device, s->fence, NULL);
        if (s->pool) d->fn.vkDestroyDescriptorPool(d->device, s->pool, NULL);
    }
    if (d->cmd_pool) d->fn.vkDestroyCommandPool(d->device, d->cmd_pool, NULL); /* frees the command buffers */
}

static trr_status wait_slot(trr_context *ctx, trr_vk_device *d, trr_vk_slot *s) {
    if (!s->in_flight) return TRR_OK;
    TRR_VK_CHECK(ctx, d->fn.vkWaitForFences(d->device, 1, &s->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    TRR_VK_CHECK(ctx, d->fn.vkResetFences(d->device, 1, &s->fence), "vkResetFences");
    s->in_flight = 0;
    return TRR_OK;
}

static void barrier(trr_vk_device *d, VkCommandBuffer cmd, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = dst_access};
    d->fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage,
                               0, 1, &mb, 0, NULL, 0, NULL);
}

trr_status trr_vk_begin(trr_context *ctx, VkCommandBuffer *out_cmd) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_slot *s = &d->slots[d->next_slot];
    TRR_TRY(wait_slot(ctx, d, s));
    TRR_VK_CHECK(ctx, d->fn.vkResetDescriptorPool(d->device, s->pool, 0), "vkResetDescriptorPool");
    TRR_VK_CHECK(ctx, d->fn.vkResetCommandBuffer(s->cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    TRR_VK_CHECK(ctx, d->fn.vkBeginCommandBuffer(s->cmd, &bi), "vkBeginCommandBuffer");
    barrier(d, s->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
    if (d->timer_state == 1) {
        /* The start stamp waits for everything before it, so the interval covers only the timed work. */
        d->fn.vkCmdResetQueryPool(s->cmd, d->queries, 0, 2);
        d->fn.vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->queries, 0);
        d->timer_state = 2;
    }
    d->recording = s;
    *out_cmd = s->cmd;
    return TRR_OK;
}

trr_status trr_vk_submit(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_slot *s = d->recording;
    d->recording = NULL;
    barrier(d, s->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    if (d->timer_state == 2) {
        /* While the timer runs, every command buffer ends with the stop stamp, after the barrier that waits for
         * its work: the last one before timer_stop leaves the end of the timed work there, and the interval
         * holds no gap between submissions (about 12 us a call on an H100, which a stamp in a command buffer of
         * its own counted). */
        d->fn.vkCmdResetQueryPool(s->cmd, d->queries, 1, 1);
        d->fn.vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->queries, 1);
    }
    TRR_VK_CHECK(ctx, d->fn.vkEndCommandBuffer(s->cmd), "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &s->cmd};
    TRR_VK_CHECK(ctx, d->fn.vkQueueSubmit(d->queue, 1, &si, s->fence), "vkQueueSubmit");
    s->in_flight = 1;
    d->next_slot = (d->next_slot + 1) % TRR_VK_SLOTS;
    return trr_vk_check_validation(ctx);
}

trr_status trr_vk_synchronize(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    /* Oldest first, so a failure reports the earliest work that failed. */
    for (int i = 0; i < TRR_VK_SLOTS; i++) TRR_TRY(wait_slot(ctx, d, &d->slots[(d->next_slot + i) % TRR_VK_SLOTS]));
    return trr_vk_check_validation(ctx);
}

trr_status trr_vk_timer_start(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (!d->queries)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: the compute queue of %s has no timestamps",
                         d->phys.props.deviceName);
    d->timer_state = 1; /* the next command buffer writes the start stamp */
    return TRR_OK;
}

trr_status trr_vk_timer_stop(trr_context *ctx, double *out_ms) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (d->timer_state == 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "vulkan: timer_stop without timer_start");
    if (d->timer_state == 1) {
        /* Nothing ran since timer_start: this command buffer writes both stamps (begin the start, submit the
         * stop), an interval of about zero. */
        VkCommandBuffer cmd;
        TRR_TRY(trr_vk_begin(ctx, &cmd));
        trr_status st = trr_vk_submit(ctx);
        d->timer_state = 0;
        TRR_TRY(st);
    }
    d->timer_state = 0;
    TRR_TRY(trr_vk_synchronize(ctx));
    uint64_t t[2];
    TRR_VK_CHECK(ctx,
                 d->fn.vkGetQueryPoolResults(d->device, d->queries, 0, 2, sizeof t, t, sizeof t[0],
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
    uint64_t mask = d->timestamp_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << d->timestamp_bits) - 1);
    uint64_t ticks = (t[1] - t[0]) & mask;
    *out_ms = (double)ticks * (double)d->phys.props.limits.timestampPeriod * 1e-6;
    return TRR_OK;
}
