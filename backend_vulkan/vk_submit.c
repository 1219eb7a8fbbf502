/* Batches: ops are recorded one after another into one command buffer and submitted together (vk_internal.h
 * says when). A submission per op binds a run of small ops by the submissions; batched they take a fraction of
 * that (docs/performance.md).
 * Every op starts with a global memory barrier, which makes it see the writes of every op before it, in this
 * batch or an earlier one (a barrier orders all commands earlier in submission order), unless that barrier is
 * the last command recorded (timer_start puts one before its stamp). A batch whose writes the host may read ends
 * with a barrier that makes them visible to the host: on a device with staging, where the host reads nothing but
 * the staging buffer and wrapped buffers, only a batch that a host access waits for or that uses a wrapped
 * buffer; on a direct_map device every batch.
 * A synchronize opens the next batch (command buffer reset and begun, descriptor pool reset, the op barrier
 * recorded) between its submission and its wait, where the host would otherwise only poll, and where the batch
 * it submitted held one dispatch, records that dispatch again after the barrier ("ahead"): a synchronized op that
 * repeats the last one then claims it and records nothing (issue #17: recording is a good part of a synchronized
 * tiny add's cost, which a command buffer submitted again without recording saves). Anything
 * else first clears the dispatch recorded ahead (a reset, what opening the batch would have cost); a freed
 * buffer clears it too, and the dispatch remembered. A batch holding nothing but the barrier, or an unclaimed
 * dispatch, is not submitted: a wait leaves it open.
 * On GPUs every batch ends by setting an event, which a synchronize polls beside the fence: on NVIDIA the event
 * reaches a polling thread as soon on every CPU, the fence as soon on most but late, by tens of microseconds, on
 * the CPU that takes the GPU's interrupt. A wait where
 * the host then touches memory the batch used, a free, and a slot's reuse still wait for a fence: the batch's
 * own where it carries one, else a later batch's (fences signal in submission order), else an empty
 * submission's; on GPUs only one batch in TRR_VK_FENCE_EVERY carries one (vk_internal.h says why). */
#define _POSIX_C_SOURCE 200809L
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a wait polls the fence before it blocks, on GPUs: a blocking wait adds the thread's wake-up to every
 * synchronize (what makes a synchronized tiny op slow); on CPU devices polling would take a core from the work. */
#define SPIN_NS 500000

trr_status trr_vk_slots_create(trr_context *ctx, trr_vk_device *d) {
    const char *spin_env = getenv("TRIREME_VK_SPIN_WAIT");
    d->spin_wait = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU || (spin_env && strcmp(spin_env, "1") == 0);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    TRR_VK_CHECK(ctx, d->fn.vkCreateCommandPool(d->device, &pci, NULL, &d->cmd_pool), "vkCreateCommandPool");
    VkDescriptorPoolSize sizes = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3 * TRR_VK_BATCH_OPS};
    VkFenceCreateInfo sfci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    TRR_VK_CHECK(ctx, d->fn.vkCreateFence(d->device, &sfci, NULL, &d->sync_fence), "vkCreateFence");
    d->next_seq = 1;
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        trr_vk_slot *s = &d->slots[i];
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = d->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        TRR_VK_CHECK(ctx, d->fn.vkAllocateCommandBuffers(d->device, &ai, &s->cmd), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        TRR_VK_CHECK(ctx, d->fn.vkCreateFence(d->device, &fci, NULL, &s->fence), "vkCreateFence");
        if (d->spin_wait) {
            VkEventCreateInfo eci = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
            TRR_VK_CHECK(ctx, d->fn.vkCreateEvent(d->device, &eci, NULL, &s->done_event), "vkCreateEvent");
        }
        if (d->push_set) continue; /* operands go into the command buffer */
        VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = TRR_VK_BATCH_OPS,
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
        if (s->done_event) d->fn.vkDestroyEvent(d->device, s->done_event, NULL);
        if (s->pool) d->fn.vkDestroyDescriptorPool(d->device, s->pool, NULL);
    }
    if (d->sync_fence) d->fn.vkDestroyFence(d->device, d->sync_fence, NULL);
    if (d->cmd_pool) d->fn.vkDestroyCommandPool(d->device, d->cmd_pool, NULL); /* frees the command buffers */
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Marks complete every batch up to seq, which a signalled fence has shown done, and frees their slots for reuse:
 * a slot's own fence, where its batch carried one, has signalled too (fences signal in submission order) and is
 * reset, as is its event. */
static VkResult retire_upto(trr_vk_device *d, uint64_t seq, const char **what) {
    if (seq > d->retired_seq) d->retired_seq = seq;
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        trr_vk_slot *s = &d->slots[i];
        if (!s->in_flight || s->seq > d->retired_seq) continue;
        VkResult r;
        if (s->armed) {
            *what = "vkWaitForFences"; /* signalled already: returns at once */
            r = d->fn.vkWaitForFences(d->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
            if (r != VK_SUCCESS) return r;
            *what = "vkResetFences";
            r = d->fn.vkResetFences(d->device, 1, &s->fence);
            if (r != VK_SUCCESS) return r;
        }
        s->in_flight = 0;
        s->done = 0;
        s->armed = 0;
        if (s->done_event) {
            *what = "vkResetEvent";
            r = d->fn.vkResetEvent(d->device, s->done_event);
            if (r != VK_SUCCESS) return r;
        }
    }
    return VK_SUCCESS;
}

/* The fence that shows batch seq complete: that of the first fenced batch at or after it still in flight, or
 * the empty submission's where it covers seq; VK_NULL_HANDLE where none does. */
static VkFence covering_fence(const trr_vk_device *d, uint64_t seq, uint64_t *covers) {
    const trr_vk_slot *best = NULL;
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        const trr_vk_slot *s = &d->slots[i];
        if (s->in_flight && s->armed && s->seq >= seq && (!best || s->seq < best->seq)) best = s;
    }
    if (best) {
        *covers = best->seq;
        return best->fence;
    }
    *covers = d->sync_seq;
    return d->sync_seq >= seq ? d->sync_fence : VK_NULL_HANDLE;
}

/* Waits for the empty submission's fence, if one is submitted, and retires what it covers. */
static VkResult wait_sync_fence(trr_vk_device *d, const char **what) {
    if (!d->sync_seq) return VK_SUCCESS;
    *what = "vkWaitForFences";
    VkResult r = d->fn.vkWaitForFences(d->device, 1, &d->sync_fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return r;
    *what = "vkResetFences";
    r = d->fn.vkResetFences(d->device, 1, &d->sync_fence);
    if (r != VK_SUCCESS) return r;
    const uint64_t covered = d->sync_seq;
    d->sync_seq = 0;
    return retire_upto(d, covered, what);
}

/* An empty submission with a fence, which signals once every batch submitted before it has completed: for a
 * wait that no fenced batch covers. */
static VkResult submit_sync_fence(trr_vk_device *d, const char **what) {
    VkResult r = wait_sync_fence(d, what);
    if (r != VK_SUCCESS) return r;
    *what = "vkQueueSubmit";
    r = d->fn.vkQueueSubmit(d->queue, 0, NULL, d->sync_fence);
    if (r == VK_SUCCESS) d->sync_seq = d->submitted_seq;
    return r;
}

/* Where no fence covers batch seq yet (*f is null), submits the empty fenced one and takes its fence. */
static VkResult ensure_covered(trr_vk_device *d, uint64_t seq, VkFence *f, uint64_t *covers, const char **what) {
    if (*f) return VK_SUCCESS;
    VkResult r = submit_sync_fence(d, what);
    if (r == VK_SUCCESS) *f = covering_fence(d, seq, covers);
    return r;
}

/* Waits for the slot's batch. by_event (a synchronize, where the host touches nothing the batch used): its
 * done_event, polled beside the fence, may end the wait, which then leaves the slot to a later fence. Otherwise
 * a fence that covers the batch (covering_fence; an empty submission's where none does), which also makes the
 * batch's writes visible to the host and lets its slot be reused. */
static VkResult wait_slot(trr_vk_device *d, trr_vk_slot *s, int by_event, const char **what) {
    if (!s->in_flight) return VK_SUCCESS;
    by_event = by_event && s->done_event;
    if (by_event && s->done) return VK_SUCCESS;
    if (s->seq <= d->retired_seq) return retire_upto(d, d->retired_seq, what);
    uint64_t covers = 0;
    VkFence f = covering_fence(d, s->seq, &covers);
    VkResult r;
    if (!by_event) { /* an event-ended wait submits one only if the event is slow to come */
        r = ensure_covered(d, s->seq, &f, &covers, what);
        if (r != VK_SUCCESS) return r;
    }
    r = VK_NOT_READY;
    if (d->spin_wait) {
        const int64_t until = now_ns() + SPIN_NS;
        for (unsigned i = 0;; i++) {
            if (by_event) {
                VkResult e = d->fn.vkGetEventStatus(d->device, s->done_event);
                if (e == VK_EVENT_SET) {
                    s->done = 1;
                    return VK_SUCCESS;
                }
                if (e != VK_EVENT_RESET) {
                    *what = "vkGetEventStatus";
                    return e;
                }
                /* the fence every eighth poll (it reports a lost device): its poll took about ten times the
                 * event's in trr_vk_sync_probe */
                if (!f || i % 8 != 7) {
                    if (now_ns() >= until) break;
                    continue;
                }
            }
            *what = "vkGetFenceStatus";
            r = d->fn.vkGetFenceStatus(d->device, f);
            if (r != VK_NOT_READY || now_ns() >= until) break;
        }
        if (r != VK_SUCCESS && r != VK_NOT_READY) return r;
    }
    if (r != VK_SUCCESS) {
        r = ensure_covered(d, s->seq, &f, &covers, what);
        if (r != VK_SUCCESS) return r;
        *what = "vkWaitForFences";
        r = d->fn.vkWaitForFences(d->device, 1, &f, VK_TRUE, UINT64_MAX);
        if (r != VK_SUCCESS) return r;
    }
    if (f == d->sync_fence) return wait_sync_fence(d, what); /* signalled: resets it and retires */
    return retire_upto(d, covers, what);
}

static void barrier(trr_vk_device *d, VkCommandBuffer cmd, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = dst_access};
    d->fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage,
                               0, 1, &mb, 0, NULL, 0, NULL);
}

/* The barrier every op starts with: the writes of every command before it, compute or transfer, are visible to
 * its reads and ordered before its writes. */
static void op_barrier(trr_vk_device *d, VkCommandBuffer cmd) {
    barrier(d, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
}

/* Ends and submits the open batch. While the timer runs, every batch's work ends with the stop stamp: the last
 * one before timer_stop leaves the end of the timed work there, and the interval holds no gap between
 * submissions (which a stamp in a command buffer of its own would count). A stamp at
 * the bottom of the pipe is written once every command before it has completed, so it needs no barrier; it goes
 * before the barrier that makes the batch's writes visible to the host, which belongs to the batch's end (the
 * host reading results) rather than to the timed ops, as a CUDA event leaves out the host's synchronization.
 * That barrier is left out where the host reads nothing the batch writes (a synchronized op on a GPU with
 * staging: the host waits for the fence alone). */
static VkResult flush(trr_vk_device *d, const char **what) {
    trr_vk_slot *s = d->recording;
    /* nothing recorded but the op barrier, or an unclaimed dispatch recorded ahead */
    if (!s || ((s->ops == 0 || s->ahead) && !d->timer_running)) return VK_SUCCESS;
    d->recording = NULL; /* even if the submission fails: the next op starts a new batch */
    if (d->timer_running) {
        /* timer_start reset the stop stamp's query with its own; a later batch that writes it again resets it
         * first (then inside the interval, a cost that only intervals of several batches pay) */
        if (d->timer_stamped) d->fn.vkCmdResetQueryPool(s->cmd, d->queries, 1, 1);
        d->fn.vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->queries, 1);
        d->timer_stamped = 1;
    }
    if (d->direct_map || s->host_reads) barrier(d, s->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    if (s->done_event) d->fn.vkCmdSetEvent(s->cmd, s->done_event, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    *what = "vkEndCommandBuffer";
    VkResult r = d->fn.vkEndCommandBuffer(s->cmd);
    if (r != VK_SUCCESS) return r;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &s->cmd};
    /* the fence where waits block on it (CPU devices), where the host will read what the batch writes, and on
     * one batch in TRR_VK_FENCE_EVERY (vk_internal.h) */
    const int arm = !d->spin_wait || s->host_reads || s->seq % TRR_VK_FENCE_EVERY == 0;
    *what = "vkQueueSubmit";
    r = d->fn.vkQueueSubmit(d->queue, 1, &si, arm ? s->fence : VK_NULL_HANDLE);
    if (r != VK_SUCCESS) return r;
    s->in_flight = 1;
    s->done = 0;
    s->armed = arm;
    d->submitted_seq = s->seq;
    return VK_SUCCESS;
}

/* Waits for every batch numbered up to seq (all of them: UINT64_MAX), oldest first, so a failure reports the
 * earliest work that failed; the open batch is submitted first if it is among them, ending with the barrier to
 * the host if host_access (the host reads or writes memory once the wait returns). by_event: a batch's
 * done_event may end its wait (wait_slot), except where the host reads what it writes. */
static VkResult wait_upto(trr_vk_device *d, uint64_t seq, int host_access, int by_event, const char **what) {
    if (d->recording && d->recording->seq <= seq) {
        if (host_access && d->recording->ops && !d->recording->ahead) d->recording->host_reads = 1;
        VkResult r = flush(d, what);
        if (r != VK_SUCCESS) return r;
    }
    for (int i = 0; i < TRR_VK_SLOTS; i++) {
        trr_vk_slot *s = &d->slots[(d->next_slot + i) % TRR_VK_SLOTS];
        if (s->in_flight && s->seq <= seq) {
            VkResult r = wait_slot(d, s, by_event && !host_access && !s->host_reads, what);
            if (r != VK_SUCCESS) return r;
        }
    }
    return VK_SUCCESS;
}

/* Empties the open batch of the dispatch recorded ahead: the command buffer and descriptor pool reset, the
 * command buffer begun again with the op barrier alone. */
static VkResult clear_ahead(trr_vk_device *d, const char **what) {
    trr_vk_slot *s = d->recording;
    if (!s || !s->ahead) return VK_SUCCESS;
    s->ahead = 0;
    s->ops = 0;
    s->bound = VK_NULL_HANDLE;
    if (s->pool) {
        *what = "vkResetDescriptorPool";
        VkResult r = d->fn.vkResetDescriptorPool(d->device, s->pool, 0);
        if (r != VK_SUCCESS) return r;
    }
    *what = "vkResetCommandBuffer";
    VkResult r = d->fn.vkResetCommandBuffer(s->cmd, 0);
    if (r != VK_SUCCESS) return r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    *what = "vkBeginCommandBuffer";
    r = d->fn.vkBeginCommandBuffer(s->cmd, &bi);
    if (r != VK_SUCCESS) return r;
    op_barrier(d, s->cmd);
    s->fenced = 1;
    return VK_SUCCESS;
}

static trr_status clear_ahead_ctx(trr_context *ctx, trr_vk_device *d) {
    const char *what = "";
    VkResult r = clear_ahead(d, &what);
    return r == VK_SUCCESS ? TRR_OK : trr_vk_fail(ctx, what, r);
}

static trr_status open_batch(trr_context *ctx, trr_vk_device *d) {
    trr_vk_slot *s = &d->slots[d->next_slot];
    const char *what = "";
    VkResult r = wait_slot(d, s, 0, &what);
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    if (s->pool) TRR_VK_CHECK(ctx, d->fn.vkResetDescriptorPool(d->device, s->pool, 0), "vkResetDescriptorPool");
    TRR_VK_CHECK(ctx, d->fn.vkResetCommandBuffer(s->cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    TRR_VK_CHECK(ctx, d->fn.vkBeginCommandBuffer(s->cmd, &bi), "vkBeginCommandBuffer");
    s->seq = d->next_seq++;
    s->ops = 0;
    s->bound = VK_NULL_HANDLE;
    s->fenced = 0;
    s->host_reads = 0;
    s->ahead = 0;
    d->next_slot = (d->next_slot + 1) % TRR_VK_SLOTS;
    d->recording = s;
    return TRR_OK;
}

/* Submits a full batch. It ends with the barrier to the host: a host access may wait for it after it has gone
 * (a staging copy that filled it), and one barrier in TRR_VK_BATCH_OPS ops costs nothing measurable. */
static trr_status flush_full(trr_context *ctx, trr_vk_device *d) {
    d->recording->host_reads = 1;
    return trr_vk_flush(ctx);
}

trr_status trr_vk_begin(trr_context *ctx, VkCommandBuffer *out_cmd) {
    trr_vk_device *d = trr_vk_dev(ctx);
    TRR_TRY(clear_ahead_ctx(ctx, d));
    d->last_valid = 0; /* trr_vk_dispatch sets it again where its op is the batch's only one */
    if (d->recording && d->recording->ops >= TRR_VK_BATCH_OPS) TRR_TRY(flush_full(ctx, d));
    if (!d->recording) TRR_TRY(open_batch(ctx, d));
    trr_vk_slot *s = d->recording;
    s->ops++; /* counted here, so an op that fails after taking a descriptor set still counts against the pool */
    if (!s->fenced) op_barrier(d, s->cmd);
    s->fenced = 0;
    *out_cmd = s->cmd;
    return TRR_OK;
}

trr_status trr_vk_end(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (d->recording && d->recording->ops >= TRR_VK_BATCH_OPS) TRR_TRY(flush_full(ctx, d));
    return trr_vk_check_validation(ctx);
}

trr_status trr_vk_record(trr_context *ctx, VkCommandBuffer cmd, const trr_vk_dispatch_rec *rec) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkWriteDescriptorSet wr[3];
    trr_vk_storage_writes(rec->info, wr);
    if (d->push_set) {
        d->push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 3, wr);
    } else {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = d->recording->pool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &d->set_layout};
        VkDescriptorSet set;
        TRR_VK_CHECK(ctx, d->fn.vkAllocateDescriptorSets(d->device, &ai, &set), "vkAllocateDescriptorSets");
        for (uint32_t i = 0; i < 3; i++) wr[i].dstSet = set;
        d->fn.vkUpdateDescriptorSets(d->device, 3, wr, 0, NULL);
        d->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &set, 0, NULL);
    }
    if (d->recording->bound != rec->pipeline) {
        d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, rec->pipeline);
        d->recording->bound = rec->pipeline;
    }
    d->fn.vkCmdPushConstants(cmd, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof rec->push, &rec->push);
    d->fn.vkCmdDispatch(cmd, rec->gx, rec->gy, rec->gz);
    return TRR_OK;
}

static int same_dispatch(const trr_vk_dispatch_rec *a, const trr_vk_dispatch_rec *b) {
    if (a->pipeline != b->pipeline || a->gx != b->gx || a->gy != b->gy || a->gz != b->gz) return 0;
    for (int i = 0; i < 3; i++)
        if (a->bufs[i] != b->bufs[i] || a->info[i].buffer != b->info[i].buffer ||
            a->info[i].offset != b->info[i].offset || a->info[i].range != b->info[i].range)
            return 0;
    return memcmp(&a->push, &b->push, sizeof a->push) == 0; /* 16 four-byte fields, no padding */
}

trr_status trr_vk_dispatch(trr_context *ctx, const trr_vk_dispatch_rec *rec) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_slot *s = d->recording;
    if (s && s->ahead && same_dispatch(rec, &d->last)) {
        s->ahead = 0; /* claimed: the batch holds this op (ops is 1) */
        for (int i = 0; i < 3; i++) trr_vk_use(d, rec->bufs[i]);
        return trr_vk_end(ctx);
    }
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    TRR_TRY(trr_vk_record(ctx, cmd, rec));
    for (int i = 0; i < 3; i++) trr_vk_use(d, rec->bufs[i]);
    if (d->recording->ops == 1) {
        d->last = *rec;
        d->last_valid = 1;
    }
    return trr_vk_end(ctx);
}

void trr_vk_use(trr_vk_device *d, trr_vk_buffer *b) {
    if (!d->recording) return;
    b->seq = d->recording->seq;
    if (!b->mem) d->recording->host_reads = 1; /* wrapped: its owner may map it once the work is done */
}

trr_status trr_vk_flush(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const char *what = "";
    VkResult r = flush(d, &what);
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    return trr_vk_check_validation(ctx);
}

/* Frees and unwraps: the buffer may go, so neither the dispatch recorded ahead nor the one remembered may
 * name it. */
VkResult trr_vk_wait_buffer_quiet(trr_vk_device *d, const trr_vk_buffer *b, const char **what) {
    d->last_valid = 0;
    VkResult r = clear_ahead(d, what);
    if (r != VK_SUCCESS) return r;
    return b->seq ? wait_upto(d, b->seq, 1, 0, what) : VK_SUCCESS;
}

VkResult trr_vk_finish_quiet(trr_vk_device *d, const char **what) {
    VkResult r = wait_upto(d, UINT64_MAX, 0, 0, what);
    return r != VK_SUCCESS ? r : wait_sync_fence(d, what);
}

trr_status trr_vk_wait_buffer(trr_context *ctx, const trr_vk_buffer *b) {
    const char *what = "";
    VkResult r = b->seq ? wait_upto(trr_vk_dev(ctx), b->seq, 1, 0, &what) : VK_SUCCESS;
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    return trr_vk_check_validation(ctx);
}

trr_status trr_vk_synchronize(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const char *what = "";
    VkResult r = flush(d, &what);
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    /* The next batch is opened while the device runs this one (the file's header says why); not where its slot
     * is still running, which would make this wait for it first. A slot whose batch a synchronize saw done by
     * its event is reused: its fence, waited for first, has signalled or is about to. */
    const trr_vk_slot *next = &d->slots[d->next_slot];
    if (!d->recording && (!next->in_flight || next->done)) {
        TRR_TRY(open_batch(ctx, d));
        trr_vk_slot *s = d->recording;
        op_barrier(d, s->cmd);
        s->fenced = 1;
        if (d->last_valid && !d->timer_running) {
            TRR_TRY(trr_vk_record(ctx, s->cmd, &d->last));
            s->ops = 1;
            s->fenced = 0;
            s->ahead = 1;
        }
    }
    r = wait_upto(d, UINT64_MAX, 0, 1, &what); /* the batches' events may end it (wait_slot) */
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    return trr_vk_check_validation(ctx);
}

/* The start stamp goes into the open batch (one is opened if none is): it waits for everything recorded before
 * it, so the interval covers only the timed work. Before it goes the barrier the first timed op would begin with
 * (that op then records none): what orders the timed work after the work before it stays out of the interval,
 * as a CUDA event recorded after earlier work leaves that wait out. The queries are reset by the host after
 * each reading (hostQueryReset) where the device offers it: a reset recorded just before the start stamp still
 * delays the interval's first dispatch, though not the stamps themselves; elsewhere it is recorded here. */
trr_status trr_vk_timer_start(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (!d->queries)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: the compute queue of %s has no timestamps",
                         d->phys.props.deviceName);
    TRR_TRY(clear_ahead_ctx(ctx, d));
    if (!d->recording) TRR_TRY(open_batch(ctx, d));
    trr_vk_slot *s = d->recording;
    if (!d->queries_reset) d->fn.vkCmdResetQueryPool(s->cmd, d->queries, 0, 2);
    d->queries_reset = 0;
    op_barrier(d, s->cmd);
    d->fn.vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->queries, 0);
    s->fenced = 1;
    d->timer_running = 1;
    d->timer_stamped = 0;
    return TRR_OK;
}

trr_status trr_vk_timer_stop(trr_context *ctx, double *out_ms) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (!d->timer_running)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "vulkan: timer_stop without timer_start");
    /* The open batch ends with the stop stamp; where none is open, the last one submitted did. timer_start
     * opened one, so some batch since has the stamp. */
    trr_status st = trr_vk_flush(ctx);
    d->timer_running = 0;
    TRR_TRY(st);
    TRR_TRY(trr_vk_synchronize(ctx));
    if (d->host_reset) { /* the host resets the queries below: every batch that wrote them waited for by its fence */
        const char *what = "";
        VkResult r = wait_upto(d, UINT64_MAX, 0, 0, &what);
        if (r != VK_SUCCESS) return trr_vk_fail(ctx, what, r);
    }
    uint64_t t[2];
    TRR_VK_CHECK(ctx,
                 d->fn.vkGetQueryPoolResults(d->device, d->queries, 0, 2, sizeof t, t, sizeof t[0],
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
    if (d->host_reset) { /* for the next interval; every batch that wrote them has completed */
        d->host_reset(d->device, d->queries, 0, 2);
        d->queries_reset = 1;
    }
    uint64_t mask = d->timestamp_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << d->timestamp_bits) - 1);
    uint64_t ticks = (t[1] - t[0]) & mask;
    *out_ms = (double)ticks * (double)d->phys.props.limits.timestampPeriod * 1e-6;
    return TRR_OK;
}
