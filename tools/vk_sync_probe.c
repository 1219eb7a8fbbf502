/* trr_vk_sync_probe: where the time of a synchronized tiny Vulkan op goes. Every call here is one submission of
 * one tiny dispatch followed by a wait for its fence, timed on the host in four parts: recording, vkQueueSubmit,
 * the wait until the fence reads signalled, and the rest (fence reset). Variants, each over --calls calls after a
 * warm-up:
 *   lib      trr_add, then trr_synchronize: the library's path (its submission is inside the synchronize, so
 *            "submit" reads 0 and "wait" holds both)
 *   spin     re-recorded command buffer, descriptor set allocated and written per call (as the library does on
 *            discrete GPUs), tight spin on vkGetFenceStatus
 *   stamps   spin with timestamps at the top and bottom of the command buffer: the GPU's own duration
 *   reuse    the command buffer recorded once and submitted again (no reset, no recording)
 *   preset   one descriptor set written once, bound per call
 *   pause    spin with the CPU's pause instruction between polls
 *   yield    spin with sched_yield between polls
 *   block    vkWaitForFences at once (the driver's own wait)
 *   hostbar  spin, the command buffer ending with a barrier to the host
 *   busy     spin while two helper threads spin on other CPUs (are idle CPUs' wake-ups in the path?)
 *   multi    spin, the command buffer begun without ONE_TIME_SUBMIT
 *   ring8    spin, the calls going round 8 command buffers and fences, as the library's slots do
 *   nobar    spin without the op barrier at the start of the command buffer (its cost on the device)
 *   cbar     spin, the op barrier's second scope the compute stage alone (what a dispatch needs)
 *   ccbar    spin, the op barrier from compute to compute alone
 *   noreset  ring8, each fence reset after the next call's submission (while the device runs it) instead of
 *            after its own wait
 *   event    spin, the command buffer ending with a barrier to the host and vkCmdSetEvent; the wait polls
 *            vkGetEventStatus until the event is set ("wait"), then the fence ("rest", with the resets): does
 *            an event reach the host sooner than a fence?
 *   eventnb  event without the barrier to the host (as the library's synchronize records none on a GPU with
 *            staging)
 *   timeline each submission signals a timeline semaphore (the next value) instead of a fence; the wait polls
 *            vkGetSemaphoreCounterValue: does a semaphore's signal cost the interrupt's CPU what a fence's does?
 *   tlevent  eventnb with the timeline semaphore instead of the fence: the wait polls the event, then ("rest")
 *            the semaphore's value
 *   tinyseq  lib after what trr_tiny_add does before its synchronized loop: 1000 adds then one synchronize,
 *            and 1000 adds inside trr_timer_start / trr_timer_stop (does that sequence switch the mode?)
 * The dispatch is shaders/sync.comp with rows = 0 in its push constants (every workgroup exits at once), under
 * the library's operand layout (three storage buffers in one set, 64 bytes of push constants), so the figures are
 * launch and synchronization only. Per variant: per-call wall time min / p10 / median / p90 / max, the medians
 * (and p90s) of the parts, context switches of the thread, and the CPU it ran on. The raw variants record their
 * own command buffers on the library's device and queue (trr_context_native, vk_tool.h).
 * `trr_vk_sync_probe --device vulkan:0 --calls 2000 --rounds 2`. */
#define _GNU_SOURCE
#define TOOL_NAME "trr_vk_sync_probe"
#include "tool_util.h"

#define VK_TOOL_DEVICE_FNS(X)                                                                                          \
    X(vkCreateDescriptorSetLayout)                                                                                     \
    X(vkDestroyDescriptorSetLayout)                                                                                    \
    X(vkCreatePipelineLayout)                                                                                          \
    X(vkDestroyPipelineLayout)                                                                                         \
    X(vkCreateShaderModule)                                                                                            \
    X(vkDestroyShaderModule)                                                                                           \
    X(vkCreateComputePipelines)                                                                                        \
    X(vkDestroyPipeline)                                                                                               \
    X(vkCreateDescriptorPool)                                                                                          \
    X(vkDestroyDescriptorPool)                                                                                         \
    X(vkResetDescriptorPool)                                                                                           \
    X(vkAllocateDescriptorSets)                                                                                        \
    X(vkUpdateDescriptorSets)                                                                                          \
    X(vkCreateCommandPool)                                                                                             \
    X(vkDestroyCommandPool)                                                                                            \
    X(vkAllocateCommandBuffers)                                                                                        \
    X(vkResetCommandBuffer)                                                                                            \
    X(vkBeginCommandBuffer)                                                                                            \
    X(vkEndCommandBuffer)                                                                                              \
    X(vkCmdPipelineBarrier)                                                                                            \
    X(vkCmdBindDescriptorSets)                                                                                         \
    X(vkCmdBindPipeline)                                                                                               \
    X(vkCmdPushConstants)                                                                                              \
    X(vkCmdDispatch)                                                                                                   \
    X(vkCmdResetQueryPool)                                                                                             \
    X(vkCmdWriteTimestamp)                                                                                             \
    X(vkCmdSetEvent)                                                                                                   \
    X(vkCreateEvent)                                                                                                   \
    X(vkDestroyEvent)                                                                                                  \
    X(vkGetEventStatus)                                                                                                \
    X(vkResetEvent)                                                                                                    \
    X(vkQueueSubmit)                                                                                                   \
    X(vkCreateFence)                                                                                                   \
    X(vkDestroyFence)                                                                                                  \
    X(vkGetFenceStatus)                                                                                                \
    X(vkWaitForFences)                                                                                                 \
    X(vkResetFences)                                                                                                   \
    X(vkCreateQueryPool)                                                                                               \
    X(vkDestroyQueryPool)                                                                                              \
    X(vkGetQueryPoolResults)                                                                                           \
    X(vkCreateSemaphore)                                                                                               \
    X(vkDestroySemaphore)                                                                                              \
    X(vkDeviceWaitIdle)
#include "vk_tool.h"

/* shaders/sync.comp, compiled by the build */
#include "sync_spv.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 20000
#define RING 8
#define PUSH_WORDS 16 /* 64 bytes of push constants, as the library's */

enum { W_SPIN, W_PAUSE, W_YIELD, W_BLOCK };

typedef struct variant {
    const char *name;
    int lib, reuse, preset, stamps, hostbar, wait, helpers, multi, ring, prelude, nobar, lazy, event, timeline;
} variant;

static const variant VARIANTS[] = {
    /* name       lib reuse preset stamps hostbar wait helpers multi ring prelude nobar (2, 3: cbar, ccbar) lazy event timeline */
    {"lib",      1, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"spin",     0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"stamps",   0, 0, 0, 1, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"reuse",    0, 1, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"preset",   0, 0, 1, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"pause",    0, 0, 0, 0, 0, W_PAUSE, 0, 0, 0, 0, 0, 0, 0, 0},
    {"yield",    0, 0, 0, 0, 0, W_YIELD, 0, 0, 0, 0, 0, 0, 0, 0},
    {"block",    0, 0, 0, 0, 0, W_BLOCK, 0, 0, 0, 0, 0, 0, 0, 0},
    {"hostbar",  0, 0, 0, 0, 1, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 0},
    {"busy",     0, 0, 0, 0, 0, W_SPIN, 2, 0, 0, 0, 0, 0, 0, 0},
    {"multi",    0, 0, 0, 0, 0, W_SPIN, 0, 1, 0, 0, 0, 0, 0, 0},
    {"ring8",    0, 0, 0, 0, 0, W_SPIN, 0, 0, 1, 0, 0, 0, 0, 0},
    {"tinyseq",  1, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 1, 0, 0, 0, 0},
    {"nobar",    0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 1, 0, 0, 0},
    {"cbar",     0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 2, 0, 0, 0},
    {"ccbar",    0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 3, 0, 0, 0},
    {"noreset",  0, 0, 0, 0, 0, W_SPIN, 0, 0, 1, 0, 0, 1, 0, 0},
    {"event",    0, 0, 0, 0, 1, W_SPIN, 0, 0, 0, 0, 0, 0, 1, 0},
    {"eventnb",  0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 1, 0},
    {"timeline", 0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 0, 1},
    {"tlevent",  0, 0, 0, 0, 0, W_SPIN, 0, 0, 0, 0, 0, 0, 1, 1},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

typedef struct probe {
    trr_context *ctx;
    vk_tool *d;
    trr_buffer *buf;
    trr_tensor x, y, z;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipe;
    VkCommandPool pool;
    VkCommandBuffer cmd, cmds[RING]; /* cmd, fence: the current ones of the ring */
    VkFence fence, fences[RING];
    int signalled[RING]; /* noreset: fences waited for and not yet reset */
    int cur;
    VkDescriptorPool dpool, dpool_preset;
    VkDescriptorSet preset;
    VkDescriptorBufferInfo info[3];
    VkQueryPool queries;
    VkEvent event;        /* the event variant's */
    VkSemaphore timeline; /* the timeline variants' */
    uint64_t timeline_value;
    PFN_vkGetSemaphoreCounterValue counter_value;
    int64_t *t_rec, *t_sub, *t_wait, *t_rest, *t_all;
    double *gpu_us;
    long polls;
} probe;

/* The process's threads and their names: a driver thread between submit and fence would show here. */
static void print_threads(void) {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "/proc/%d/task", (int)getpid());
    DIR *dir = opendir(cmd);
    if (!dir) return;
    printf("threads:");
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)getpid(), e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)getpid(), e->d_name);
        int cpu = -1;
        f = fopen(path, "r");
        if (f) {
            char buf[1024];
            if (fgets(buf, sizeof buf, f)) {
                /* field 39 is the CPU last run on; fields after the ")" closing the name */
                char *q = strrchr(buf, ')');
                for (int k = 2; q && k < 39; k++) q = strchr(q + 1, ' ');
                if (q) cpu = atoi(q + 1);
            }
            fclose(f);
        }
        printf(" %s[%s]@%d", e->d_name, name, cpu);
    }
    printf("\n");
    fflush(stdout);
    closedir(dir);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The three storage-buffer writes of set (x, y, z: every one the whole buffer). */
static void storage_writes(const VkDescriptorBufferInfo *info, VkDescriptorSet set, VkWriteDescriptorSet *wr) {
    for (uint32_t i = 0; i < 3; i++)
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = set,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &info[i]};
}

static int record(probe *p, const variant *v) {
    vk_tool *d = p->d;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = v->reuse || v->multi ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (vk_ok(d->vkResetCommandBuffer(p->cmd, 0), "vkResetCommandBuffer") ||
        vk_ok(d->vkBeginCommandBuffer(p->cmd, &bi), "vkBeginCommandBuffer"))
        return 1;
    if (v->stamps && !p->queries) return 1; /* a queue that cannot time its work */
    if (v->stamps) {
        d->vkCmdResetQueryPool(p->cmd, p->queries, 0, 2);
        d->vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->queries, 0);
    }
    /* the library's op barrier */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags src = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst = src;
    if (v->nobar >= 2) {
        dst = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    }
    if (v->nobar == 3) {
        src = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    }
    if (v->nobar != 1) d->vkCmdPipelineBarrier(p->cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
    VkDescriptorSet set = p->preset;
    if (!v->preset) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = p->dpool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &p->set_layout};
        if (vk_ok(d->vkResetDescriptorPool(d->device, p->dpool, 0), "vkResetDescriptorPool") ||
            vk_ok(d->vkAllocateDescriptorSets(d->device, &ai, &set), "vkAllocateDescriptorSets"))
            return 1;
        VkWriteDescriptorSet wr[3];
        storage_writes(p->info, set, wr);
        d->vkUpdateDescriptorSets(d->device, 3, wr, 0, NULL);
    }
    d->vkCmdBindDescriptorSets(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline_layout, 0, 1, &set, 0, NULL);
    d->vkCmdBindPipeline(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    uint32_t push[PUSH_WORDS] = {0}; /* rows = 0 */
    d->vkCmdPushConstants(p->cmd, p->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
    d->vkCmdDispatch(p->cmd, 1, 1, 1);
    if (v->stamps) d->vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 1);
    if (v->event && !p->event) return 1;
    if (v->hostbar) {
        VkMemoryBarrier hb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
        d->vkCmdPipelineBarrier(p->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &hb,
                                   0, NULL, 0, NULL);
    }
    if (v->event) d->vkCmdSetEvent(p->cmd, p->event, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    return vk_ok(d->vkEndCommandBuffer(p->cmd), "vkEndCommandBuffer");
}

static int wait_fence(probe *p, int how) {
    vk_tool *d = p->d;
    VkResult r = VK_NOT_READY;
    if (how == W_BLOCK) return vk_ok(d->vkWaitForFences(d->device, 1, &p->fence, VK_TRUE, UINT64_MAX), "wait");
    const int64_t until = now_ns() + 1000000000;
    while ((r = d->vkGetFenceStatus(d->device, p->fence)) == VK_NOT_READY) {
        p->polls++;
        if (how == W_PAUSE) cpu_pause();
        else if (how == W_YIELD) sched_yield();
        if (now_ns() > until) break;
    }
    return vk_ok(r, "vkGetFenceStatus");
}

static int wait_timeline(probe *p, uint64_t value) {
    uint64_t now = 0;
    VkResult r;
    while ((r = p->counter_value(p->d->device, p->timeline, &now)) == VK_SUCCESS && now < value) p->polls++;
    return vk_ok(r, "vkGetSemaphoreCounterValue");
}

/* One synchronized call, its parts stored at index i. */
static int one_call(probe *p, const variant *v, int i) {
    vk_tool *d = p->d;
    p->cur = v->ring ? (p->cur + 1) % RING : 0;
    p->cmd = p->cmds[p->cur];
    p->fence = p->fences[p->cur];
    int64_t t0 = now_ns(), t1, t2, t3;
    if (v->lib) {
        if (tool_check(p->ctx, trr_add(p->ctx, &p->x, &p->y, &p->z), "add")) return 1;
        t1 = t2 = now_ns(); /* the submission is the synchronize's */
        if (tool_check(p->ctx, trr_synchronize(p->ctx), "synchronize")) return 1;
        t3 = now_ns();
    } else {
        if (!v->reuse && record(p, v)) return 1;
        t1 = now_ns();
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &p->cmd};
        const uint64_t value = p->timeline_value + 1;
        VkTimelineSemaphoreSubmitInfo tsi = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                             .signalSemaphoreValueCount = 1,
                                             .pSignalSemaphoreValues = &value};
        if (v->timeline) {
            if (!p->timeline) return 1;
            si.pNext = &tsi;
            si.signalSemaphoreCount = 1;
            si.pSignalSemaphores = &p->timeline;
        }
        if (vk_ok(d->vkQueueSubmit(d->queue, 1, &si, v->timeline ? VK_NULL_HANDLE : p->fence), "vkQueueSubmit"))
            return 1;
        if (v->timeline) p->timeline_value = value;
        t2 = now_ns();
        const int prev = (p->cur + RING - 1) % RING;
        if (v->lazy && p->signalled[prev]) {
            if (vk_ok(d->vkResetFences(d->device, 1, &p->fences[prev]), "vkResetFences")) return 1;
            p->signalled[prev] = 0;
        }
        if (v->event) {
            VkResult er;
            while ((er = d->vkGetEventStatus(d->device, p->event)) == VK_EVENT_RESET) p->polls++;
            if (er != VK_EVENT_SET) return vk_ok(er, "vkGetEventStatus");
        } else if (v->timeline) {
            if (wait_timeline(p, value)) return 1;
        } else if (wait_fence(p, v->wait)) {
            return 1;
        }
        t3 = now_ns();
        if (v->event) {
            if (vk_ok(d->vkResetEvent(d->device, p->event), "vkResetEvent") ||
                (v->timeline ? wait_timeline(p, value) : wait_fence(p, v->wait)))
                return 1;
        }
        if (v->timeline) {
            /* no fence to reset */
        } else if (v->lazy) p->signalled[p->cur] = 1;
        else if (vk_ok(d->vkResetFences(d->device, 1, &p->fence), "vkResetFences")) return 1;
    }
    int64_t t4 = now_ns();
    if (i >= 0) {
        p->t_rec[i] = t1 - t0;
        p->t_sub[i] = t2 - t1;
        p->t_wait[i] = t3 - t2;
        p->t_rest[i] = t4 - t3;
        p->t_all[i] = t4 - t0;
        p->gpu_us[i] = 0;
        if (v->stamps) {
            uint64_t t[2];
            if (vk_ok(d->vkGetQueryPoolResults(d->device, p->queries, 0, 2, sizeof t, t, sizeof t[0],
                                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                      "vkGetQueryPoolResults"))
                return 1;
            p->gpu_us[i] = (double)((t[1] - t[0]) & d->timestamp_mask) * (double)d->props.limits.timestampPeriod * 1e-3;
        }
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v; the q-quantile in us. */
static double q_us(int64_t *v, int n, double q, int sorted) {
    if (!sorted) qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int k = (int)(q * (n - 1) + 0.5);
    return (double)v[k] * 1e-3;
}

static atomic_int helpers_stop;

static void *helper(void *arg) {
    (void)arg;
    while (!atomic_load_explicit(&helpers_stop, memory_order_relaxed)) cpu_pause();
    return NULL;
}

static int run_variant(probe *p, const variant *v, int calls, int round) {
    if (v->reuse) {
        p->cur = 0;
        p->cmd = p->cmds[0];
        if (record(p, v)) return 1;
    }
    for (int i = 0; i < 200; i++)
        if (one_call(p, v, -1)) return 1;
    if (v->prelude) {
        double ms = 0;
        for (int i = 0; i < 1000; i++)
            if (tool_check(p->ctx, trr_add(p->ctx, &p->x, &p->y, &p->z), "add")) return 1;
        if (tool_check(p->ctx, trr_synchronize(p->ctx), "synchronize") ||
            tool_check(p->ctx, trr_timer_start(p->ctx), "timer_start"))
            return 1;
        for (int i = 0; i < 1000; i++)
            if (tool_check(p->ctx, trr_add(p->ctx, &p->x, &p->y, &p->z), "add")) return 1;
        if (tool_check(p->ctx, trr_timer_stop(p->ctx, &ms), "timer_stop")) return 1;
    }
    pthread_t th[4];
    int nth = 0, failed = 0;
    atomic_store(&helpers_stop, 0);
    for (; nth < v->helpers && nth < 4; nth++)
        if (pthread_create(&th[nth], NULL, helper, NULL)) break;
    for (int i = 0; !failed && nth && i < 100; i++) failed = one_call(p, v, -1);
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    int cpu0 = sched_getcpu();
    p->polls = 0;
    int64_t start = now_ns();
    for (int i = 0; !failed && i < calls; i++) failed = one_call(p, v, i);
    double mean = (double)(now_ns() - start) * 1e-3 / calls;
    atomic_store(&helpers_stop, 1);
    for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < RING; i++)
        if (p->signalled[i]) {
            failed |= vk_ok(p->d->vkResetFences(p->d->device, 1, &p->fences[i]), "vkResetFences");
            p->signalled[i] = 0;
        }
    if (failed) return 1;
    int cpu1 = sched_getcpu();
    getrusage(RUSAGE_THREAD, &r1);
    /* the first and second half's medians, before the sort: a mode that changes within the run shows */
    int h = calls / 2;
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)calls);
    if (!tmp) return 1;
    memcpy(tmp, p->t_all, sizeof(int64_t) * (size_t)calls);
    double half1 = q_us(tmp, h, 0.5, 0);
    double half2 = q_us(tmp + h, calls - h, 0.5, 0);
    free(tmp);
    double mn = q_us(p->t_all, calls, 0, 0), p10 = q_us(p->t_all, calls, 0.1, 1), med = q_us(p->t_all, calls, 0.5, 1),
           p90 = q_us(p->t_all, calls, 0.9, 1), mx = q_us(p->t_all, calls, 1, 1);
    double rec = q_us(p->t_rec, calls, 0.5, 0), sub = q_us(p->t_sub, calls, 0.5, 0),
           sub90 = q_us(p->t_sub, calls, 0.9, 1), wt = q_us(p->t_wait, calls, 0.5, 0),
           wt10 = q_us(p->t_wait, calls, 0.1, 1), wt90 = q_us(p->t_wait, calls, 0.9, 1),
           rest = q_us(p->t_rest, calls, 0.5, 0);
    printf("r%d %-8s all us: mean %6.2f min %6.2f p10 %6.2f med %6.2f p90 %6.2f max %7.1f (halves %.2f / %.2f) | "
           "rec %5.2f submit %5.2f (p90 %5.2f) wait %6.2f (p10 %6.2f p90 %6.2f) rest %5.2f | polls/call %.0f",
           round, v->name, mean, mn, p10, med, p90, mx, half1, half2, rec, sub, sub90, wt, wt10, wt90, rest,
           (double)p->polls / calls);
    if (v->stamps) {
        double g = tool_median(p->gpu_us, calls);
        printf(" gpu med %.2f p90 %.2f", g, p->gpu_us[(int)(0.9 * (calls - 1))]);
    }
    double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1e6 + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec);
    double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    printf(" | csw vol %ld invol %ld | user %.1f sys %.1f us/call | cpu %d->%d\n", r1.ru_nvcsw - r0.ru_nvcsw,
           r1.ru_nivcsw - r0.ru_nivcsw, user / calls, sys / calls, cpu0, cpu1);
    fflush(stdout);
    return 0;
}

/* Whether the device offers timeline semaphores, which the library then enables (a Vulkan 1.2 feature). */
static int has_timeline(const vk_tool *d) {
    if (d->props.apiVersion < VK_API_VERSION_1_2) return 0;
    VkPhysicalDeviceTimelineSemaphoreFeatures tls = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &tls};
    d->vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    return tls.timelineSemaphore == VK_TRUE;
}

/* The dispatch's pipeline: sync.comp under the library's operand layout. */
static int make_pipeline(probe *p) {
    vk_tool *d = p->d;
    VkDescriptorSetLayoutBinding b[3];
    for (uint32_t i = 0; i < 3; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 3, .pBindings = b};
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = PUSH_WORDS * 4};
    if (vk_ok(d->vkCreateDescriptorSetLayout(d->device, &sli, NULL, &p->set_layout), "vkCreateDescriptorSetLayout"))
        return 1;
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &p->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    if (vk_ok(d->vkCreatePipelineLayout(d->device, &pli, NULL, &p->pipeline_layout), "vkCreatePipelineLayout"))
        return 1;
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = sizeof trr_probe_sync_spv,
                                   .pCode = trr_probe_sync_spv};
    VkShaderModule module;
    if (vk_ok(d->vkCreateShaderModule(d->device, &mi, NULL, &module), "vkCreateShaderModule")) return 1;
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                .module = module,
                                                .pName = "main"},
                                      .layout = p->pipeline_layout};
    VkResult r = d->vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe);
    d->vkDestroyShaderModule(d->device, module, NULL);
    return vk_ok(r, "vkCreateComputePipelines");
}

static int setup(probe *p, int calls) {
    vk_tool *d = p->d;
    const float in[3] = {1.5f, 2.25f, -7.0f};
    uint64_t handle = 0;
    if (tool_check(p->ctx, trr_buffer_create(p->ctx, 4096, &p->buf), "buffer") ||
        tool_check(p->ctx, trr_buffer_write(p->ctx, p->buf, 0, in, sizeof in), "write") ||
        tool_check(p->ctx, trr_tensor_1d(p->buf, 0, TRR_F32, 1, &p->x), "tensor") ||
        tool_check(p->ctx, trr_tensor_1d(p->buf, 4, TRR_F32, 1, &p->y), "tensor") ||
        tool_check(p->ctx, trr_tensor_1d(p->buf, 8, TRR_F32, 1, &p->z), "tensor") ||
        tool_check(p->ctx, trr_buffer_native(p->buf, &handle), "native buffer") ||
        tool_check(p->ctx, trr_synchronize(p->ctx), "synchronize"))
        return 1;
    for (int i = 0; i < 3; i++)
        p->info[i] = (VkDescriptorBufferInfo){.buffer = (VkBuffer)(uintptr_t)handle, .offset = 0, .range = 4096};
    if (make_pipeline(p)) return 1;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = RING};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = 2};
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3};
    VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    if (vk_ok(d->vkCreateCommandPool(d->device, &pci, NULL, &p->pool), "vkCreateCommandPool")) return 1;
    ai.commandPool = p->pool;
    if (vk_ok(d->vkAllocateCommandBuffers(d->device, &ai, p->cmds), "vkAllocateCommandBuffers")) return 1;
    for (int i = 0; i < RING; i++)
        if (vk_ok(d->vkCreateFence(d->device, &fci, NULL, &p->fences[i]), "vkCreateFence")) return 1;
    if (d->timestamp_mask && vk_ok(d->vkCreateQueryPool(d->device, &qci, NULL, &p->queries), "vkCreateQueryPool"))
        return 1;
    VkEventCreateInfo eci = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
    if (vk_ok(d->vkCreateEvent(d->device, &eci, NULL, &p->event), "vkCreateEvent")) return 1;
    /* the timeline variants' semaphore, where the device has timeline semaphores */
    PFN_vkVoidFunction counter = has_timeline(d) ? d->vkGetDeviceProcAddr(d->device, "vkGetSemaphoreCounterValue") : NULL;
    if (counter) {
        memcpy(&p->counter_value, &counter, sizeof counter);
        VkSemaphoreTypeCreateInfo sti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                         .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
        VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &sti};
        if (vk_ok(d->vkCreateSemaphore(d->device, &sci, NULL, &p->timeline), "vkCreateSemaphore")) return 1;
    }
    /* sets: one per call from dpool, and one written once (preset) */
    if (vk_ok(d->vkCreateDescriptorPool(d->device, &dci, NULL, &p->dpool), "vkCreateDescriptorPool") ||
        vk_ok(d->vkCreateDescriptorPool(d->device, &dci, NULL, &p->dpool_preset), "vkCreateDescriptorPool"))
        return 1;
    VkDescriptorSetAllocateInfo sai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = p->dpool_preset,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &p->set_layout};
    if (vk_ok(d->vkAllocateDescriptorSets(d->device, &sai, &p->preset), "vkAllocateDescriptorSets")) return 1;
    VkWriteDescriptorSet wr[3];
    storage_writes(p->info, p->preset, wr);
    d->vkUpdateDescriptorSets(d->device, 3, wr, 0, NULL);
    size_t n = (size_t)calls;
    p->t_rec = calloc(n, sizeof(int64_t));
    p->t_sub = calloc(n, sizeof(int64_t));
    p->t_wait = calloc(n, sizeof(int64_t));
    p->t_rest = calloc(n, sizeof(int64_t));
    p->t_all = calloc(n, sizeof(int64_t));
    p->gpu_us = calloc(n, sizeof(double));
    return !p->t_rec || !p->t_sub || !p->t_wait || !p->t_rest || !p->t_all || !p->gpu_us;
}

static void teardown(probe *p) {
    vk_tool *d = p->d;
    if (d && d->device) {
        d->vkDeviceWaitIdle(d->device);
        if (p->queries) d->vkDestroyQueryPool(d->device, p->queries, NULL);
        if (p->event) d->vkDestroyEvent(d->device, p->event, NULL);
        if (p->timeline) d->vkDestroySemaphore(d->device, p->timeline, NULL);
        if (p->dpool) d->vkDestroyDescriptorPool(d->device, p->dpool, NULL);
        if (p->dpool_preset) d->vkDestroyDescriptorPool(d->device, p->dpool_preset, NULL);
        for (int i = 0; i < RING; i++)
            if (p->fences[i]) d->vkDestroyFence(d->device, p->fences[i], NULL);
        if (p->pool) d->vkDestroyCommandPool(d->device, p->pool, NULL);
        if (p->pipe) d->vkDestroyPipeline(d->device, p->pipe, NULL);
        if (p->pipeline_layout) d->vkDestroyPipelineLayout(d->device, p->pipeline_layout, NULL);
        if (p->set_layout) d->vkDestroyDescriptorSetLayout(d->device, p->set_layout, NULL);
    }
    free(p->t_rec);
    free(p->t_sub);
    free(p->t_wait);
    free(p->t_rest);
    free(p->t_all);
    free(p->gpu_us);
    trr_buffer_destroy(p->buf);
    trr_context_destroy(p->ctx);
}

int main(int argc, char **argv) {
    const char *device = "vulkan:0", *only = NULL;
    int calls = 2000, rounds = 2, pin = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--calls")) calls = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
        else if (!strcmp(argv[i], "--pin")) pin = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: trr_vk_sync_probe [--device vulkan:N] [--calls N] [--rounds R] [--only a,b] "
                            "[--pin CPU]\n");
            return 2;
        }
    }
    if (calls < 10 || calls > MAX_CALLS || rounds < 1 || rounds > 10 || strncmp(device, "vulkan", 6)) {
        fprintf(stderr, "trr_vk_sync_probe: a Vulkan device, --calls 10..%d, --rounds 1..10\n", MAX_CALLS);
        return 2;
    }
    probe p;
    vk_tool vt;
    memset(&p, 0, sizeof p);
    int bad = vk_tool_open(&vt, device);
    p.ctx = vt.ctx;
    p.d = &vt;
    if (!bad) bad = setup(&p, calls);
    if (!bad && pin >= 0) { /* this thread only, after the driver's threads started */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(pin, &set);
        if (sched_setaffinity(0, sizeof set, &set)) {
            fprintf(stderr, "%s: cannot pin to CPU %d\n", TOOL_NAME, pin);
            bad = 1;
        }
    }
    if (!bad) {
        trr_device_info info;
        if (trr_context_device(p.ctx, &info) == TRR_OK)
            printf("device: %s (%s), queue family %u, timeline semaphores %s, pid %d, cpu %d\n", info.spec, info.name,
                   vt.queue_family, p.timeline ? "yes" : "no", (int)getpid(), sched_getcpu());
    }
    int lib_ran = 0;
    for (int r = 0; !bad && r < rounds; r++)
        for (int v = 0; !bad && v < NVARIANTS; v++) {
            if (only && !strstr(only, VARIANTS[v].name)) continue;
            bad = run_variant(&p, &VARIANTS[v], calls, r);
            lib_ran |= VARIANTS[v].lib;
        }
    if (!bad) print_threads();
    float out = 0;
    if (!bad) bad = tool_check(p.ctx, trr_buffer_read(p.ctx, p.buf, 8, &out, sizeof out), "read");
    if (!bad && lib_ran && out != 1.5f + 2.25f) {
        fprintf(stderr, "%s: the add gave %g, not 3.75\n", TOOL_NAME, (double)out);
        bad = 1;
    }
    teardown(&p);
    return bad;
}
