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

/* shaders/empty.comp and shaders/first_reads.comp, compiled by the build */
#include "empty_spv.h"
#include "reads1_spv.h"
#include "reads2_spv.h"
#include "reads3_spv.h"
#include "reads4_spv.h"

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
    /* the probe shaders (STATE_BARE on): the empty one under three pipeline layouts (none, push constants
     * only, the library's set + push), then first_reads.comp's four under the library's */
    VkPipelineLayout empty_layout[2];
    VkPipeline state_pipe[8];
} vprobe;

/* What a dispatch carries and reads first (interval's `state`). STATE_LIBRARY: the library's softmax pipeline
 * with rows = 0, as the probe's other lines; the empty shader with nothing bound but the pipeline, with push
 * constants pushed, with the library's descriptors and push constants; then under the library's set and push
 * constants a shader that reads a push constant, a word of a buffer, that word at an index the push constant
 * gives (two reads in a chain), or both independently, and exits. */
enum {
    STATE_LIBRARY,
    STATE_BARE,
    STATE_PUSH,
    STATE_SET_PUSH,
    STATE_READ_PUSH,
    STATE_READ_WORD,
    STATE_READ_CHAIN,
    STATE_READ_BOTH,
    STATES
};
static const char *const state_names[STATES] = {"softmax_rows, rows = 0",        "empty shader, nothing bound",
                                                "empty shader, push constants",  "empty shader, set + push constants",
                                                "reads a push constant",         "reads a buffer word",
                                                "reads push constant then word", "reads push constant and word"};

static void bind_all(vprobe *p, VkCommandBuffer cmd, int state) {
    trr_vk_device *d = p->d;
    if (state == STATE_BARE || state == STATE_PUSH) {
        d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->state_pipe[state]);
        d->recording->bound = VK_NULL_HANDLE;
        if (state == STATE_PUSH) {
            trr_vk_push push;
            memset(&push, 0, sizeof push);
            d->fn.vkCmdPushConstants(cmd, p->empty_layout[1], VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
        }
        return;
    }
    if (d->push_set) {
        VkWriteDescriptorSet wr[3];
        trr_vk_storage_writes(p->info, wr);
        d->push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 3, wr);
    } else {
        d->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &p->set, 0, NULL);
    }
    VkPipeline pipe = state == STATE_LIBRARY ? p->pipe : p->state_pipe[state];
    d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    d->recording->bound = state == STATE_LIBRARY ? pipe : VK_NULL_HANDLE;
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
static int interval(vprobe *p, int k, uint32_t groups, int bar, int prebound, int fill, int state, int rep,
                    double *out_us) {
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
        bind_all(p, cmd, state);
        if (tool_check(p->ctx, trr_vk_end(p->ctx), "end")) return 1;
    }
    if (tool_check(p->ctx, trr_timer_start(p->ctx), "timer_start")) return 1;
    VkCommandBuffer cmd = d->recording->cmd; /* timer_start leaves a batch open */
    for (int i = 0; i < k; i++) {
        if (i) barrier(p, cmd, bar);
        if (!prebound || i) bind_all(p, cmd, state);
        d->fn.vkCmdDispatch(cmd, groups, 1, 1);
    }
    trr_vk_use(d, p->small->mem);
    if (tool_check(p->ctx, trr_timer_stop(p->ctx, &ms), "timer_stop")) return 1;
    *out_us = ms * 1e3;
    return 0;
}

static int measure_state(vprobe *p, int k, uint32_t groups, int bar, int prebound, int fill, int state, int reps,
                         double *out_us) {
    double t[200];
    for (int i = 0; i < 20; i++)
        if (interval(p, k, groups, bar, prebound, 0, state, i, &t[0])) return 1;
    for (int r = 0; r < reps; r++)
        if (interval(p, k, groups, bar, prebound, fill, state, r, &t[r])) return 1;
    *out_us = tool_median(t, reps);
    return 0;
}

static int measure(vprobe *p, int k, uint32_t groups, int bar, int prebound, int fill, int reps, double *out_us) {
    return measure_state(p, k, groups, bar, prebound, fill, STATE_LIBRARY, reps, out_us);
}

static int probe_pipeline(vprobe *p, const uint32_t *code, size_t bytes, VkPipelineLayout layout, VkPipeline *out) {
    trr_vk_device *d = p->d;
    VkShaderModuleCreateInfo mci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = code};
    VkShaderModule mod;
    if (d->fn.vkCreateShaderModule(d->device, &mci, NULL, &mod) != VK_SUCCESS) return 1;
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                .module = mod,
                                                .pName = "main"},
                                      .layout = layout};
    VkResult r = d->fn.vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &ci, NULL, out);
    d->fn.vkDestroyShaderModule(d->device, mod, NULL);
    return r != VK_SUCCESS;
}

static int state_pipelines(vprobe *p) {
    trr_vk_device *d = p->d;
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(trr_vk_push)};
    for (int i = 0; i < 2; i++) {
        VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .pushConstantRangeCount = (uint32_t)i,
                                          .pPushConstantRanges = i ? &range : NULL};
        if (d->fn.vkCreatePipelineLayout(d->device, &lci, NULL, &p->empty_layout[i]) != VK_SUCCESS) return 1;
    }
    const uint32_t *const reads[4] = {trr_probe_reads1_spv, trr_probe_reads2_spv, trr_probe_reads3_spv,
                                      trr_probe_reads4_spv};
    const size_t reads_bytes[4] = {sizeof trr_probe_reads1_spv, sizeof trr_probe_reads2_spv,
                                   sizeof trr_probe_reads3_spv, sizeof trr_probe_reads4_spv};
    int bad = probe_pipeline(p, trr_probe_empty_spv, sizeof trr_probe_empty_spv, p->empty_layout[0],
                             &p->state_pipe[STATE_BARE]) ||
              probe_pipeline(p, trr_probe_empty_spv, sizeof trr_probe_empty_spv, p->empty_layout[1],
                             &p->state_pipe[STATE_PUSH]) ||
              probe_pipeline(p, trr_probe_empty_spv, sizeof trr_probe_empty_spv, d->pipeline_layout,
                             &p->state_pipe[STATE_SET_PUSH]);
    for (int i = 0; !bad && i < 4; i++)
        bad = probe_pipeline(p, reads[i], reads_bytes[i], d->pipeline_layout, &p->state_pipe[STATE_READ_PUSH + i]);
    /* x holds zeros, so every reading shader exits */
    return bad || tool_check(p->ctx, trr_buffer_fill(p->ctx, p->small, 0, 4096, 0), "fill");
}

/* The interval's stamps at other stages than the library's (the bottom of the pipe at both ends), with the
 * probe's own query pool: after the fill, a batch resets the queries (the library resets them right before its
 * barrier), the op barrier, the start stamp, k dispatches of `state` (the op barrier between), the stop stamp. */
typedef struct stamps {
    const char *name;
    VkPipelineStageFlagBits start, stop;
    int reset_early; /* the queries reset in a batch of their own before the fill */
} stamps;

static int stamp_interval(vprobe *p, VkQueryPool qp, const stamps *st, int k, int state, int rep, double *out_us) {
    trr_vk_device *d = p->d;
    VkCommandBuffer cmd;
    if (st->reset_early) {
        if (tool_check(p->ctx, trr_vk_begin(p->ctx, &cmd), "begin")) return 1;
        d->fn.vkCmdResetQueryPool(cmd, qp, 0, 2);
        if (tool_check(p->ctx, trr_vk_end(p->ctx), "end")) return 1;
    }
    if (tool_check(p->ctx, trr_buffer_fill(p->ctx, p->flush, 0, FLUSH_BYTES, (uint8_t)(rep * 17 + 1)), "fill"))
        return 1;
    if (!st->reset_early) {
        if (tool_check(p->ctx, trr_vk_begin(p->ctx, &cmd), "begin")) return 1;
        d->fn.vkCmdResetQueryPool(cmd, qp, 0, 2);
        if (tool_check(p->ctx, trr_vk_end(p->ctx), "end")) return 1;
    }
    if (tool_check(p->ctx, trr_vk_begin(p->ctx, &cmd), "begin")) return 1; /* records the op barrier */
    d->fn.vkCmdWriteTimestamp(cmd, st->start, qp, 0);
    for (int i = 0; i < k; i++) {
        if (i) barrier(p, cmd, BAR_OP);
        bind_all(p, cmd, state);
        d->fn.vkCmdDispatch(cmd, 1, 1, 1);
    }
    d->fn.vkCmdWriteTimestamp(cmd, st->stop, qp, 1);
    trr_vk_use(d, p->small->mem);
    if (tool_check(p->ctx, trr_vk_end(p->ctx), "end") || tool_check(p->ctx, trr_synchronize(p->ctx), "synchronize"))
        return 1;
    uint64_t t[2];
    if (d->fn.vkGetQueryPoolResults(d->device, qp, 0, 2, sizeof t, t, sizeof t[0],
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
        return 1;
    uint64_t mask = d->timestamp_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << d->timestamp_bits) - 1);
    *out_us = (double)((t[1] - t[0]) & mask) * (double)d->phys.props.limits.timestampPeriod * 1e-3;
    return 0;
}

static int stamps_report(vprobe *p, int reps) {
    trr_vk_device *d = p->d;
    const stamps ways[] = {
        {"bottom / bottom (the library's)", VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0},
        {"bottom / bottom, reset early", VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 1},
        {"top / bottom", VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0},
        {"compute / compute", VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0},
        {"top / compute", VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0},
    };
    VkQueryPoolCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    VkQueryPool qp;
    if (d->fn.vkCreateQueryPool(d->device, &qci, NULL, &qp) != VK_SUCCESS) return 1;
    int bad = 0;
    for (size_t w = 0; !bad && w < sizeof ways / sizeof ways[0]; w++) {
        const int ks[4] = {0, 1, 4, 1}, states[4] = {STATE_BARE, STATE_BARE, STATE_BARE, STATE_LIBRARY};
        double med[4];
        for (int c = 0; !bad && c < 4; c++) {
            double t[200];
            for (int r = 0; !bad && r < reps; r++) bad = stamp_interval(p, qp, &ways[w], ks[c], states[c], r, &t[r]);
            med[c] = bad ? 0 : tool_median(t, reps);
        }
        if (!bad)
            printf("stamps %-32s after the fill: empty %.2f, 1 empty dispatch %.2f, 4 %.2f (%.2f a dispatch after the "
                   "first), softmax_rows (rows = 0) %.2f\n",
                   ways[w].name, med[0], med[1], med[2], (med[2] - med[1]) / 3, med[3]);
    }
    d->fn.vkDestroyQueryPool(d->device, qp, NULL);
    return bad;
}

/* Each state's dispatch of one workgroup after the fill: k = 1 and 4 behind the op barrier, 4 with none; k = 1
 * without the fill. */
static int states_report(vprobe *p, int reps) {
    for (int st = 0; st < STATES; st++) {
        double k1, k4, n4, nf;
        if (measure_state(p, 1, 1, BAR_OP, 0, 1, st, reps, &k1) || measure_state(p, 4, 1, BAR_OP, 0, 1, st, reps, &k4) ||
            measure_state(p, 4, 1, BAR_NONE, 0, 1, st, reps, &n4) || measure_state(p, 1, 1, BAR_OP, 0, 0, st, reps, &nf))
            return 1;
        printf("%-32s 1 workgroup after the fill: k = 1 %.2f, k = 4 %.2f (%.2f a dispatch after the first), "
               "k = 4 without barriers %.2f; k = 1 without the fill %.2f\n",
               state_names[st], k1, k4, (k4 - k1) / 3, n4, nf);
    }
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
    int bad = setup(&p) || state_pipelines(&p);
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
    if (!bad) bad = states_report(&p, reps);
    if (!bad) bad = stamps_report(&p, reps);
    if (tool_check(p.ctx, trr_synchronize(p.ctx), "synchronize")) bad = 1;
    for (int i = 0; i < STATES; i++)
        if (p.state_pipe[i]) p.d->fn.vkDestroyPipeline(p.d->device, p.state_pipe[i], NULL);
    for (int i = 0; i < 2; i++)
        if (p.empty_layout[i]) p.d->fn.vkDestroyPipelineLayout(p.d->device, p.empty_layout[i], NULL);
    if (p.pool) p.d->fn.vkDestroyDescriptorPool(p.d->device, p.pool, NULL);
    trr_buffer_destroy(p.small);
    trr_buffer_destroy(p.flush);
    trr_context_destroy(p.ctx);
    return bad;
}
