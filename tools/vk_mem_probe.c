/* trr_vk_mem_probe: does the memory a Vulkan buffer gets change its bandwidth? Lists the device's memory types and
 * heaps, then times a 1 GiB (--mib) vkCmdCopyBuffer (device timestamps, median of 20 after two untimed, both buffers filled
 * first; GB/s of bytes read + written) between two buffers placed in each of these ways:
 *   lib        trr_buffer_create's buffers and trr_buffer_copy under trr_timer (the bench's copy ceiling)
 *   type T     one allocation per buffer in memory type T (each device-local type the buffers accept)
 *   dedicated  the same in the first device-local type, as dedicated allocations (VkMemoryDedicatedAllocateInfo)
 *   shared     both buffers bound to one allocation of twice the size
 * It records its own command buffers on the library's device and queue (trr_context_native, vk_tool.h).
 * `trr_vk_mem_probe --device vulkan:0 [--mib 1024]`. */
#define TOOL_NAME "trr_vk_mem_probe"
#include "tool_util.h"

#define VK_TOOL_DEVICE_FNS(X)                                                                                          \
    X(vkCreateBuffer)                                                                                                  \
    X(vkDestroyBuffer)                                                                                                 \
    X(vkGetBufferMemoryRequirements)                                                                                   \
    X(vkAllocateMemory)                                                                                                \
    X(vkFreeMemory)                                                                                                    \
    X(vkBindBufferMemory)                                                                                              \
    X(vkCreateCommandPool)                                                                                             \
    X(vkDestroyCommandPool)                                                                                            \
    X(vkAllocateCommandBuffers)                                                                                        \
    X(vkResetCommandBuffer)                                                                                            \
    X(vkBeginCommandBuffer)                                                                                            \
    X(vkEndCommandBuffer)                                                                                              \
    X(vkCmdFillBuffer)                                                                                                 \
    X(vkCmdPipelineBarrier)                                                                                            \
    X(vkCmdResetQueryPool)                                                                                             \
    X(vkCmdWriteTimestamp)                                                                                             \
    X(vkCmdCopyBuffer)                                                                                                 \
    X(vkQueueSubmit)                                                                                                   \
    X(vkWaitForFences)                                                                                                 \
    X(vkResetFences)                                                                                                   \
    X(vkCreateFence)                                                                                                   \
    X(vkDestroyFence)                                                                                                  \
    X(vkCreateQueryPool)                                                                                               \
    X(vkDestroyQueryPool)                                                                                              \
    X(vkGetQueryPoolResults)                                                                                           \
    X(vkDeviceWaitIdle)
#include "vk_tool.h"

/* the buffers' size: 1 GiB unless --mib says otherwise (a CPU driver's heap may not hold four of them) */
static VkDeviceSize BYTES = (VkDeviceSize)1 << 30;
#define REPS 20

typedef struct probe {
    trr_context *ctx;
    vk_tool *d;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;
} probe;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What every buffer here is: BYTES, storage and both transfer directions, as the library's buffers. */
static VkBufferCreateInfo buffer_info(void) {
    return (VkBufferCreateInfo){.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = BYTES,
                                .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
}

/* One buffer of BYTES, bound to mem at offset (mem NULL: its own allocation in type, dedicated or not). */
static int make_buffer(probe *p, int type, int dedicated, VkDeviceMemory shared, VkDeviceSize offset, VkBuffer *out,
                       VkDeviceMemory *out_mem) {
    vk_tool *d = p->d;
    VkBufferCreateInfo bci = buffer_info();
    if (vk_ok(d->vkCreateBuffer(d->device, &bci, NULL, out), "vkCreateBuffer")) return 1;
    *out_mem = VK_NULL_HANDLE;
    if (shared) return vk_ok(d->vkBindBufferMemory(d->device, *out, shared, offset), "vkBindBufferMemory");
    VkMemoryRequirements req;
    d->vkGetBufferMemoryRequirements(d->device, *out, &req);
    VkMemoryDedicatedAllocateInfo ded = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, .buffer = *out};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = dedicated ? &ded : NULL,
                               .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)type};
    if (vk_ok(d->vkAllocateMemory(d->device, &ai, NULL, out_mem), "vkAllocateMemory")) return 1;
    return vk_ok(d->vkBindBufferMemory(d->device, *out, *out_mem, 0), "vkBindBufferMemory");
}

/* Median GB/s of REPS timed copies src -> dst, one submission each. */
static double time_copies(probe *p, VkBuffer src, VkBuffer dst) {
    vk_tool *d = p->d;
    double gbs[REPS];
    const uint64_t mask = d->timestamp_mask;
    for (int r = -2; r < REPS; r++) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkBufferCopy region = {.srcOffset = 0, .dstOffset = 0, .size = BYTES};
        if (vk_ok(d->vkResetCommandBuffer(p->cmd, 0), "vkResetCommandBuffer") ||
            vk_ok(d->vkBeginCommandBuffer(p->cmd, &bi), "vkBeginCommandBuffer"))
            return -1;
        if (r == -2) { /* both buffers written once first, so that no page is untouched (lavapipe maps lazily) */
            d->vkCmdFillBuffer(p->cmd, src, 0, BYTES, 0x3f800000u);
            d->vkCmdFillBuffer(p->cmd, dst, 0, BYTES, 0);
            VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                  .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                  .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
            d->vkCmdPipelineBarrier(p->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                                       0, NULL, 0, NULL);
        }
        d->vkCmdResetQueryPool(p->cmd, p->queries, 0, 2);
        d->vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 0);
        d->vkCmdCopyBuffer(p->cmd, src, dst, 1, &region);
        d->vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 1);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &p->cmd};
        if (vk_ok(d->vkEndCommandBuffer(p->cmd), "vkEndCommandBuffer") ||
            vk_ok(d->vkQueueSubmit(d->queue, 1, &si, p->fence), "vkQueueSubmit") ||
            vk_ok(d->vkWaitForFences(d->device, 1, &p->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences") ||
            vk_ok(d->vkResetFences(d->device, 1, &p->fence), "vkResetFences"))
            return -1;
        uint64_t t[2];
        if (vk_ok(d->vkGetQueryPoolResults(d->device, p->queries, 0, 2, sizeof t, t, sizeof t[0],
                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults"))
            return -1;
        double ns = (double)((t[1] - t[0]) & mask) * (double)d->props.limits.timestampPeriod;
        if (r >= 0) gbs[r] = 2.0 * (double)BYTES / ns;
    }
    qsort(gbs, REPS, sizeof gbs[0], cmp_d);
    return gbs[REPS / 2];
}

/* Median GB/s of REPS library copies src -> dst (trr_buffer_copy under trr_timer), src filled first. */
static double timed_lib_copy(trr_context *ctx, trr_buffer *src, trr_buffer *dst) {
    double ms[REPS];
    if (tool_check(ctx, trr_buffer_fill(ctx, src, 0, BYTES, 1), "fill")) return -1;
    for (int r = -2; r < REPS; r++) {
        double t = 0;
        if (tool_check(ctx, trr_timer_start(ctx), "timer") ||
            tool_check(ctx, trr_buffer_copy(ctx, dst, 0, src, 0, BYTES), "copy") ||
            tool_check(ctx, trr_timer_stop(ctx, &t), "timer"))
            return -1;
        if (r >= 0) ms[r] = t;
    }
    return 2.0 * (double)BYTES / (tool_median(ms, REPS) * 1e-3) * 1e-9;
}

/* The library's copy between two foreign VkBuffers it wraps (a) or two buffers of its own (a = NULL). */
static double lib_copy(trr_context *ctx, VkBuffer a, VkBuffer b) {
    trr_buffer *wa = NULL, *wb = NULL;
    double g = -1;
    if (a ? !tool_check(ctx, trr_buffer_wrap(ctx, (uint64_t)(uintptr_t)a, BYTES, &wa), "wrap") &&
                !tool_check(ctx, trr_buffer_wrap(ctx, (uint64_t)(uintptr_t)b, BYTES, &wb), "wrap")
          : !tool_check(ctx, trr_buffer_create(ctx, BYTES, &wa), "buffer") &&
                !tool_check(ctx, trr_buffer_create(ctx, BYTES, &wb), "buffer"))
        g = timed_lib_copy(ctx, wa, wb);
    if (wa) trr_buffer_destroy(wa);
    if (wb) trr_buffer_destroy(wb);
    return g;
}

static void one_way(probe *p, const char *name, int type, int dedicated, int shared) {
    vk_tool *d = p->d;
    VkBuffer a = VK_NULL_HANDLE, b = VK_NULL_HANDLE;
    VkDeviceMemory ma = VK_NULL_HANDLE, mb = VK_NULL_HANDLE, both = VK_NULL_HANDLE;
    int bad = 0;
    if (shared) {
        VkBufferCreateInfo bci = buffer_info();
        VkBuffer tmp;
        VkMemoryRequirements req;
        bad = vk_ok(d->vkCreateBuffer(d->device, &bci, NULL, &tmp), "vkCreateBuffer");
        if (!bad) {
            d->vkGetBufferMemoryRequirements(d->device, tmp, &req);
            d->vkDestroyBuffer(d->device, tmp, NULL);
            VkDeviceSize span = (req.size + req.alignment - 1) / req.alignment * req.alignment;
            VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                       .allocationSize = 2 * span,
                                       .memoryTypeIndex = (uint32_t)type};
            bad = vk_ok(d->vkAllocateMemory(d->device, &ai, NULL, &both), "vkAllocateMemory") ||
                  make_buffer(p, type, 0, both, 0, &a, &ma) || make_buffer(p, type, 0, both, span, &b, &mb);
        }
    } else {
        bad = make_buffer(p, type, dedicated, VK_NULL_HANDLE, 0, &a, &ma) ||
              make_buffer(p, type, dedicated, VK_NULL_HANDLE, 0, &b, &mb);
    }
    double g = bad ? -1 : time_copies(p, a, b);
    double k = bad ? -1 : lib_copy(p->ctx, a, b);
    if (g < 0) printf("%-28s failed\n", name);
    else printf("%-28s memory type %d: vkCmdCopyBuffer %7.1f GB/s, trr_buffer_copy of the buffers wrapped %7.1f GB/s\n",
                name, type, g, k);
    fflush(stdout);
    d->vkDeviceWaitIdle(d->device);
    if (a) d->vkDestroyBuffer(d->device, a, NULL);
    if (b) d->vkDestroyBuffer(d->device, b, NULL);
    if (ma) d->vkFreeMemory(d->device, ma, NULL);
    if (mb) d->vkFreeMemory(d->device, mb, NULL);
    if (both) d->vkFreeMemory(d->device, both, NULL);
}

int main(int argc, char **argv) {
    const char *device = "vulkan:0";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
        else if (strcmp(argv[i], "--mib") == 0) BYTES = (VkDeviceSize)strtoul(argv[i + 1], NULL, 10) << 20;
    if (BYTES == 0) {
        fprintf(stderr, "%s: --mib needs a size in MiB\n", TOOL_NAME);
        return 2;
    }
    probe p;
    vk_tool vt;
    memset(&p, 0, sizeof p);
    if (vk_tool_open(&vt, device)) return 1;
    p.ctx = vt.ctx;
    p.d = &vt;
    vk_tool *d = p.d;
    if (!d->timestamp_mask) {
        fprintf(stderr, "%s: the queue cannot time its work\n", TOOL_NAME);
        return 1;
    }
    const VkPhysicalDeviceMemoryProperties *mp = &d->mem;
    printf("device %s (%s)\n", device, d->props.deviceName);
    for (uint32_t h = 0; h < mp->memoryHeapCount; h++)
        printf("heap %u: %.1f GiB, flags 0x%x\n", h, (double)mp->memoryHeaps[h].size / (1 << 30),
               (unsigned)mp->memoryHeaps[h].flags);
    for (uint32_t t = 0; t < mp->memoryTypeCount; t++)
        printf("type %u: heap %u, flags 0x%x\n", t, mp->memoryTypes[t].heapIndex,
               (unsigned)mp->memoryTypes[t].propertyFlags);
    double lib = lib_copy(p.ctx, VK_NULL_HANDLE, VK_NULL_HANDLE);
    printf("%-28s %7.1f GB/s\n", "lib (trr_buffer_copy)", lib);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkQueryPoolCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    if (vk_ok(d->vkCreateCommandPool(d->device, &pci, NULL, &p.pool), "vkCreateCommandPool")) return 1;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = p.pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (vk_ok(d->vkAllocateCommandBuffers(d->device, &ai, &p.cmd), "vkAllocateCommandBuffers") ||
        vk_ok(d->vkCreateFence(d->device, &fci, NULL, &p.fence), "vkCreateFence") ||
        vk_ok(d->vkCreateQueryPool(d->device, &qci, NULL, &p.queries), "vkCreateQueryPool"))
        return 1;
    /* which types a storage/transfer buffer accepts */
    VkBufferCreateInfo bci = buffer_info();
    VkBuffer tmp;
    if (vk_ok(d->vkCreateBuffer(d->device, &bci, NULL, &tmp), "vkCreateBuffer")) return 1;
    VkMemoryRequirements req;
    d->vkGetBufferMemoryRequirements(d->device, tmp, &req);
    d->vkDestroyBuffer(d->device, tmp, NULL);
    printf("a %llu MiB buffer: alignment %llu, memory types 0x%x\n", (unsigned long long)(BYTES >> 20),
           (unsigned long long)req.alignment,
           (unsigned)req.memoryTypeBits);
    int first = -1;
    for (uint32_t t = 0; t < mp->memoryTypeCount; t++) {
        if (!(req.memoryTypeBits & (1u << t)) || !(mp->memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            continue;
        if (first < 0) first = (int)t;
        char name[32];
        snprintf(name, sizeof name, "type %u", t);
        one_way(&p, name, (int)t, 0, 0);
    }
    if (first >= 0) {
        one_way(&p, "dedicated", first, 1, 0);
        one_way(&p, "shared allocation", first, 0, 1);
        one_way(&p, "type (again)", first, 0, 0);
    }
    printf("lib again: %.1f GB/s\n", lib_copy(p.ctx, VK_NULL_HANDLE, VK_NULL_HANDLE));
    d->vkDeviceWaitIdle(d->device);
    d->vkDestroyQueryPool(d->device, p.queries, NULL);
    d->vkDestroyFence(d->device, p.fence, NULL);
    d->vkDestroyCommandPool(d->device, p.pool, NULL);
    trr_context_destroy(p.ctx);
    return 0;
}
