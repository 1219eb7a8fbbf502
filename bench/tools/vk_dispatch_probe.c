/* trr_vk_dispatch_probe: what a Vulkan dispatch costs inside the device timer, apart from any kernel's work
 * (issue #17: the ~2 us a call that Vulkan's softmax pays over CUDA's at every size). It records by hand, into
 * the backend's open batch between trr_timer_start and trr_timer_stop (as the bench times, a 256 MiB fill
 * before each interval), dispatches of softmax_rows_f32 with rows = 0 in its push constants, so every
 * workgroup exits after reading them: one workgroup or a grid of 4096, k = 1, 2, 4 in an interval, with the
 * backend's barrier between them (every op's), a compute-to-compute barrier or none; and the first dispatch
 * with its pipeline and descriptors bound before the start stamp; and after a copy kernel or vkCmdFillBuffer in
 * place of the library's fill (whether the compute units were busy up to the timer). Medians over the
 * repetitions, in us.
 * White-box (links the static library and reads the backend's state): a measuring tool, not an API user.
 * `trr_vk_dispatch_probe --device vulkan:0 --reps 30`. */
#define _POSIX_C_SOURCE 200809L
#define TOOL_NAME "trr_vk_dispatch_probe"
#include "tool_util.h"
#include "vk_internal.h"

#include <string.h>

#define FLUSH_BYTES ((size_t)256 << 20)
#define MAX_K 4

enum { BAR_OP, BAR_COMPUTE, BAR_NONE };

typedef struct vprobe {
    trr_context *ctx;
    trr_vk_device *d;
    trr_buffer *flush, *small;
    trr_tensor cx, cz; /* the flush buffer's halves, for a copy kernel in place of the fill */
    VkPipeline pipe;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkDescriptorBufferInfo info[3];
} vprobe;

static void bind_all(vprobe *p, VkCommandBuffer cmd) {
    trr_vk_device *d = p->d;
    if (d->push_set) {
        VkWriteDescriptorSet wr[3];
        trr_vk_storage_writes(p->info, wr);
        d->push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 3, wr);
    } else {
        d->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &p->set, 0, NULL);
    }
    d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    d->recording->bound = p->pipe;
    trr_vk_push push;
    memset(&push, 0, sizeof push); /* rows = 0: every workgroup returns at once */
    d->fn.vkCmdPushConstants(cmd, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
}

static void barrier(vprobe *p, VkCommandBuffer cmd, int kind) {
    if (kind == BAR_NONE) return;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    if (kind == BAR_OP) { /* vk_submit.c's op barrier */
        mb.srcAccessMask |= VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask |= VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        stages |= VK_PIPELINE_STAGE_TRANSFER_BIT;
    }
    p->d->fn.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One interval after the fill (fill 1, the library's; 2: a copy kernel over the flush buffer in its place; 3:
 * vkCmdFillBuffer, the transfer fill, recorded here; 0: nothing): k
 * dispatches of `groups` workgroups, `bar` between them; prebound: the pipeline and descriptors bound before the
 * start stamp. k = 0: an empty interval. */
static int interval(vprobe *p, int k, uint32_t groups, int bar, int prebound, int fill, int rep, double *out_us) {
    trr_vk_device *d = p->d;
    double ms = 0;
    if (fill == 1 &&
        tool_check(p->ctx, trr_buffer_fill(p->ctx, p->flush, 0, FLUSH_BYTES, (uint8_t)(rep * 17 + 1)), "fill"))
        return 1;
    if (fill == 2 && tool_check(p->ctx, trr_copy(p->ctx, &p->cx, &p->cz), "copy")) return 1;
    if (fill == 3) {
        VkCommandBuffer fcmd;
        if (tool_check(p->ctx, trr_vk_begin(p->ctx, &fcmd), "begin")) return 1;
        trr_vk_use(d, p->flush->mem);
        d->fn.vkCmdFillBuffer(fcmd, ((trr_vk_buffer *)p->flush->mem)->buf, 0, FLUSH_BYTES, 0x01010101u * (uint32_t)(rep & 255));
        if (tool_check(p->ctx, trr_vk_end(p->ctx), "end")) return 1;
    }
    if (prebound) {
        VkCommandBuffer cmd;
        if (tool_check(p->ctx, trr_vk_begin(p->ctx, &cmd), "begin")) return 1;
        bind_all(p, cmd);
        if (tool_check(p->ctx, trr_vk_end(p->ctx), "end")) return 1;
    }
    if (tool_check(p->ctx, trr_timer_start(p->ctx), "timer_start")) return 1;
    VkCommandBuffer cmd = d->recording->cmd; /* timer_start leaves a batch open */
    for (int i = 0; i < k; i++) {
        if (i) barrier(p, cmd, bar);
        if (!prebound || i) bind_all(p, cmd);
        d->fn.vkCmdDispatch(cmd, groups, 1, 1);
    }
    trr_vk_use(d, p->small->mem);
    if (tool_check(p->ctx, trr_timer_stop(p->ctx, &ms), "timer_stop")) return 1;
    *out_us = ms * 1e3;
    return 0;
}

static int measure(vprobe *p, int k, uint32_t groups, int bar, int prebound, int fill, int reps, double *out_us) {
    double t[200];
    for (int i = 0; i < 20; i++)
        if (interval(p, k, groups, bar, prebound, 0, i, &t[0])) return 1;
    for (int r = 0; r < reps; r++)
        if (interval(p, k, groups, bar, prebound, fill, r, &t[r])) return 1;
    *out_us = tool_median(t, reps);
    return 0;
}

static int setup(vprobe *p) {
    trr_vk_device *d = p->d;
    if (tool_check(p->ctx, trr_buffer_create(p->ctx, FLUSH_BYTES, &p->flush), "flush buffer") ||
        tool_check(p->ctx, trr_buffer_create(p->ctx, 4096, &p->small), "small buffer") ||
        tool_check(p->ctx, trr_tensor_1d(p->flush, 0, TRR_F32, (int64_t)(FLUSH_BYTES / 8), &p->cx), "tensor") ||
        tool_check(p->ctx, trr_tensor_1d(p->flush, FLUSH_BYTES / 2, TRR_F32, (int64_t)(FLUSH_BYTES / 8), &p->cz),
                   "tensor"))
        return 1;
    const trr_vk_buffer *b = p->small->mem;
    for (int i = 0; i < 3; i++) p->info[i] = (VkDescriptorBufferInfo){.buffer = b->buf, .offset = 0, .range = 4096};
    const uint32_t spec[3] = {64, 1, 0}; /* 64 threads, one vector each, bounds checked */
    if (tool_check(p->ctx, trr_vk_pipeline_get(p->ctx, "softmax_rows_f32", spec, 3, &p->pipe), "pipeline")) return 1;
    if (d->push_set) return 0;
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3};
    VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    if (d->fn.vkCreateDescriptorPool(d->device, &dci, NULL, &p->pool) != VK_SUCCESS) return 1;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = p->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &d->set_layout};
    if (d->fn.vkAllocateDescriptorSets(d->device, &ai, &p->set) != VK_SUCCESS) return 1;
    VkWriteDescriptorSet wr[3];
    for (uint32_t i = 0; i < 3; i++)
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = p->set,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &p->info[i]};
    d->fn.vkUpdateDescriptorSets(d->device, 3, wr, 0, NULL);
    return 0;
}

int main(int argc, char **argv) {
    const char *device = "vulkan:0";
    int reps = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: trr_vk_dispatch_probe [--device vulkan:N] [--reps R]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 200 || strncmp(device, "vulkan", 6)) {
        fprintf(stderr, "trr_vk_dispatch_probe: a Vulkan device, --reps 1..200\n");
        return 2;
    }
    vprobe p;
    memset(&p, 0, sizeof p);
    if (tool_check(NULL, trr_context_create(device, &p.ctx), "opening the device")) return 1;
    p.d = trr_vk_dev(p.ctx);
    int bad = setup(&p);
    double e0 = 0, e1 = 0, one[MAX_K + 1] = {0}, grid[MAX_K + 1] = {0}, light4 = 0, none4 = 0, pre1 = 0, pre_grid = 0;
    double nofill1 = 0, nofill_grid = 0, copy0 = 0, copy1 = 0, copy_grid = 0, tf0 = 0, tf1 = 0, tf_grid = 0;
    if (!bad) bad = measure(&p, 0, 1, BAR_OP, 0, 0, reps, &e0) || measure(&p, 0, 1, BAR_OP, 0, 1, reps, &e1);
    for (int k = 1; !bad && k <= MAX_K; k *= 2)
        bad = measure(&p, k, 1, BAR_OP, 0, 1, reps, &one[k]) || measure(&p, k, 4096, BAR_OP, 0, 1, reps, &grid[k]);
    if (!bad)
        bad = measure(&p, 4, 4096, BAR_COMPUTE, 0, 1, reps, &light4) || measure(&p, 4, 4096, BAR_NONE, 0, 1, reps, &none4) ||
              measure(&p, 1, 1, BAR_OP, 1, 1, reps, &pre1) || measure(&p, 1, 4096, BAR_OP, 1, 1, reps, &pre_grid) ||
              measure(&p, 1, 1, BAR_OP, 0, 0, reps, &nofill1) || measure(&p, 1, 4096, BAR_OP, 0, 0, reps, &nofill_grid) ||
              measure(&p, 0, 1, BAR_OP, 0, 2, reps, &copy0) || measure(&p, 1, 1, BAR_OP, 0, 2, reps, &copy1) ||
              measure(&p, 1, 4096, BAR_OP, 0, 2, reps, &copy_grid) || measure(&p, 0, 1, BAR_OP, 0, 3, reps, &tf0) ||
              measure(&p, 1, 1, BAR_OP, 0, 3, reps, &tf1) || measure(&p, 1, 4096, BAR_OP, 0, 3, reps, &tf_grid);
    if (!bad) {
        trr_device_info info;
        if (trr_context_device(p.ctx, &info) == TRR_OK) printf("device: %s (%s)\n", info.spec, info.name);
        printf("medians of %d (us), descriptors %s: empty %.2f, empty after the fill %.2f\n", reps,
               p.d->push_set ? "pushed" : "from a set", e0, e1);
        printf("after the fill, k = 1 / 2 / 4 dispatches with the op barrier between: 1 workgroup %.2f / %.2f / %.2f "
               "(%.2f a dispatch after the first); 4096 workgroups %.2f / %.2f / %.2f (%.2f)\n",
               one[1], one[2], one[4], (one[4] - one[1]) / 3, grid[1], grid[2], grid[4], (grid[4] - grid[1]) / 3);
        printf("4 x 4096 workgroups with a compute-only barrier %.2f, with none %.2f\n", light4, none4);
        printf("k = 1 with pipeline and descriptors bound before the start stamp: 1 workgroup %.2f, 4096 %.2f\n", pre1,
               pre_grid);
        printf("k = 1 without the fill: 1 workgroup %.2f, 4096 %.2f\n", nofill1, nofill_grid);
        printf("after a copy kernel in place of the fill: empty %.2f, 1 workgroup %.2f, 4096 %.2f\n", copy0, copy1,
               copy_grid);
        printf("after vkCmdFillBuffer (the transfer fill) in place of the fill: empty %.2f, 1 workgroup %.2f, 4096 "
               "%.2f\n",
               tf0, tf1, tf_grid);
    }
    if (tool_check(p.ctx, trr_synchronize(p.ctx), "synchronize")) bad = 1;
    if (p.pool) p.d->fn.vkDestroyDescriptorPool(p.d->device, p.pool, NULL);
    trr_buffer_destroy(p.small);
    trr_buffer_destroy(p.flush);
    trr_context_destroy(p.ctx);
    return bad;
}
