/* Internal to the Vulkan backend: the function table loaded at run time, the per-context device state, and the
 * helpers the backend's files share. Nothing here is visible outside backend_vulkan/. */
#ifndef TRR_VK_INTERNAL_H
#define TRR_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "vk_coop_khr.h"
#include "vk_coop_shape.h"

#include "backend.h"
#include "embedded.h"

#include <stddef.h>
#include <stdint.h>

/* SPIR-V kernels embedded by backend_vulkan/CMakeLists.txt (kernels/embed.cmake). */
extern const trr_embedded_file trr_vulkan_kernels[];
extern const size_t trr_vulkan_kernels_count;

/* Functions reached through vkGetInstanceProcAddr(NULL, ...). */
#define TRR_VK_GLOBAL_FNS(X)                                                                                   \
    X(vkCreateInstance)                                                                                        \
    X(vkEnumerateInstanceLayerProperties)                                                                      \
    X(vkEnumerateInstanceExtensionProperties)

#define TRR_VK_INSTANCE_FNS(X)                                                                                 \
    X(vkDestroyInstance)                                                                                       \
    X(vkEnumeratePhysicalDevices)                                                                              \
    X(vkGetPhysicalDeviceProperties)                                                                           \
    X(vkGetPhysicalDeviceProperties2)                                                                          \
    X(vkGetPhysicalDeviceFeatures2)                                                                            \
    X(vkGetPhysicalDeviceMemoryProperties)                                                                     \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                                \
    X(vkEnumerateDeviceExtensionProperties)                                                                    \
    X(vkCreateDevice)                                                                                          \
    X(vkGetDeviceProcAddr)

/* Instance functions that may be missing (extensions); NULL when absent. */
#define TRR_VK_OPTIONAL_INSTANCE_FNS(X)                                                                        \
    X(vkCreateDebugUtilsMessengerEXT)                                                                          \
    X(vkDestroyDebugUtilsMessengerEXT)                                                                         \
    X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)                                                        \
    X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)

#define TRR_VK_DEVICE_FNS(X)                                                                                   \
    X(vkDestroyDevice)                                                                                         \
    X(vkGetDeviceQueue)                                                                                        \
    X(vkDeviceWaitIdle)                                                                                        \
    X(vkCreateBuffer)                                                                                          \
    X(vkDestroyBuffer)                                                                                         \
    X(vkGetBufferMemoryRequirements)                                                                           \
    X(vkAllocateMemory)                                                                                        \
    X(vkFreeMemory)                                                                                            \
    X(vkBindBufferMemory)                                                                                      \
    X(vkMapMemory)                                                                                             \
    X(vkUnmapMemory)                                                                                           \
    X(vkCreateCommandPool)                                                                                     \
    X(vkDestroyCommandPool)                                                                                    \
    X(vkAllocateCommandBuffers)                                                                                \
    X(vkResetCommandBuffer)                                                                                    \
    X(vkBeginCommandBuffer)                                                                                    \
    X(vkEndCommandBuffer)                                                                                      \
    X(vkQueueSubmit)                                                                                           \
    X(vkCreateFence)                                                                                           \
    X(vkDestroyFence)                                                                                          \
    X(vkWaitForFences)                                                                                         \
    X(vkGetFenceStatus)                                                                                        \
    X(vkResetFences)                                                                                           \
    X(vkCreateEvent)                                                                                           \
    X(vkDestroyEvent)                                                                                          \
    X(vkCmdSetEvent)                                                                                           \
    X(vkGetEventStatus)                                                                                        \
    X(vkResetEvent)                                                                                            \
    X(vkCmdCopyBuffer)                                                                                         \
    X(vkCmdFillBuffer)                                                                                         \
    X(vkCmdPipelineBarrier)                                                                                    \
    X(vkCmdBindPipeline)                                                                                       \
    X(vkCmdBindDescriptorSets)                                                                                 \
    X(vkCmdPushConstants)                                                                                      \
    X(vkCmdDispatch)                                                                                           \
    X(vkCmdWriteTimestamp)                                                                                     \
    X(vkCmdResetQueryPool)                                                                                     \
    X(vkCreateQueryPool)                                                                                       \
    X(vkDestroyQueryPool)                                                                                      \
    X(vkGetQueryPoolResults)                                                                                   \
    X(vkCreateShaderModule)                                                                                    \
    X(vkDestroyShaderModule)                                                                                   \
    X(vkCreatePipelineCache)                                                                                   \
    X(vkDestroyPipelineCache)                                                                                  \
    X(vkGetPipelineCacheData)                                                                                  \
    X(vkCreateComputePipelines)                                                                                \
    X(vkDestroyPipeline)                                                                                       \
    X(vkCreatePipelineLayout)                                                                                  \
    X(vkDestroyPipelineLayout)                                                                                 \
    X(vkCreateDescriptorSetLayout)                                                                             \
    X(vkDestroyDescriptorSetLayout)                                                                            \
    X(vkCreateDescriptorPool)                                                                                  \
    X(vkDestroyDescriptorPool)                                                                                 \
    X(vkResetDescriptorPool)                                                                                   \
    X(vkAllocateDescriptorSets)                                                                                \
    X(vkUpdateDescriptorSets)

#define TRR_VK_DECLARE_FN(name) PFN_##name name;
typedef struct trr_vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    TRR_VK_GLOBAL_FNS(TRR_VK_DECLARE_FN)
    TRR_VK_INSTANCE_FNS(TRR_VK_DECLARE_FN)
    TRR_VK_OPTIONAL_INSTANCE_FNS(TRR_VK_DECLARE_FN)
    TRR_VK_DEVICE_FNS(TRR_VK_DECLARE_FN)
} trr_vk_fns;

/* PCI vendor id of NVIDIA devices (VkPhysicalDeviceProperties.vendorID) */
#define TRR_VK_VENDOR_NVIDIA 0x10DEu

/* What a physical device offers, gathered once (vk_physical.c). */
typedef struct trr_vk_phys {
    VkPhysicalDevice handle;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t subgroup_size;
    int storage16, storage8, float16, coop_khr, coop_nv;
    int exec_props; /* VK_KHR_pipeline_executable_properties (TRIREME_VK_PIPELINE_STATS=1 prints them) */
    int subgroup_arith; /* subgroup arithmetic operations in compute shaders */
    int subgroup_shuffle; /* subgroup shuffles in compute shaders (attention_coop.comp's softmax) */
    int push_descriptor; /* VK_KHR_push_descriptor */
    int pipeline_robustness; /* VK_EXT_pipeline_robustness with its pipelineRobustness feature */
    int host_query_reset; /* Vulkan 1.2's hostQueryReset: queries reset by the host, outside command buffers */
    int timeline;         /* Vulkan 1.2's timelineSemaphore */
    /* the f16 cooperative-matrix kernel can run: VK_NV_cooperative_matrix with 16x16x16 f16 -> f32 at subgroup
     * scope, the Vulkan memory model, shaderFloat16 and 32-wide subgroups */
    int coop_f16;
    /* the same kernel on VK_KHR_cooperative_matrix (no NV extension needed): the f16 -> f32 subgroup shape it
     * runs there (vk_coop_shape.h), with shaderFloat16, 16-bit storage and the Vulkan memory model */
    int coop_f16_khr;
    trr_vk_coop_shape coop_f16_shape;
    /* VK_KHR_shader_bfloat16 and a KHR cooperative-matrix shape with bf16 A and B (any shape; `trireme devices`
     * reports it); coop_bf16_khr: a bf16 -> f32 subgroup shape the bf16 kernel runs (coop_bf16_shape), with the
     * extension's shaderBFloat16Type and shaderBFloat16CooperativeMatrix features and the Vulkan memory model */
    int coop_bf16_any, coop_bf16_khr;
    trr_vk_coop_shape coop_bf16_shape;
    /* matmul_cm2.comp can run: VK_NV_cooperative_matrix2 with workgroup scope, flexible dimensions, tensor
     * addressing and per-element operations, on a Vulkan 1.3 device with maintenance4 (SPIR-V 1.6) */
    int coop2;
    /* its limits: the largest workgroup at workgroup scope, and the largest flexible matrix dimension (0 until
     * trr_vk_phys_query_coop2_limits) */
    uint32_t coop2_max_threads, coop2_max_dim;
    char uuid[37], pci_bus_id[16]; /* identity for trr_device_info; "" when the driver does not say */
    uint32_t compute_units;        /* SMs or compute units where the driver says (vk_physical.c), else 0 */
} trr_vk_phys;

/* Ops are recorded one after another into a batch, one command buffer, which is submitted when it holds
 * TRR_VK_BATCH_OPS ops or when something must wait for it (synchronize, a host read or write of a buffer it
 * uses, a free, timer_stop). Batches are recorded into a ring of slots; a slot is reused once a fence of its
 * batch or of a later one has signalled, so its command buffer and descriptor sets stay alive while the device
 * reads them. Every batch gets
 * a number (seq); a buffer remembers the last batch that used it, so a host access waits for that one only. */
#define TRR_VK_SLOTS 32
#define TRR_VK_BATCH_OPS 128
/* On GPUs only every TRR_VK_FENCE_EVERY-th batch carries its fence (and any batch the host reads from): a batch
 * is known complete once a fence of it or of a later batch has signalled. Each fence's signal is an interrupt,
 * which on NVIDIA holds the CPU that takes it for tens of microseconds: a synchronized loop of small ops slows
 * several-fold with a fence on every batch, and stops gaining past one in 16 over 32 slots (the tuning data).
 * A slot is reused TRR_VK_SLOTS batches later, by when a fenced batch at least 17 back has long completed. */
#define TRR_VK_FENCE_EVERY 16
typedef struct trr_vk_slot {
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool pool; /* TRR_VK_BATCH_OPS sets; none with push descriptors */
    uint64_t seq;          /* the batch in this slot */
    uint32_t ops;          /* ops recorded into it */
    VkPipeline bound;      /* the pipeline its last dispatch bound, which the next one need not bind again */
    int fenced;            /* a global barrier is the last command recorded: the next op need not record its own */
    int host_reads;        /* the host may read what it writes (a host access waits for it, or it uses a wrapped
                              buffer): it ends with a barrier to the host (always on direct_map devices) */
    int in_flight;         /* submitted, and not yet known complete through a fence */
    /* Where waits poll (spin_wait), the batch ends by setting done_event, which a synchronize also polls: a
     * fence's signal reaches the host through the GPU's interrupt, and a thread polling on the CPU that takes it
     * waits far longer for the fence than for the event (vk_submit.c). done: the event was seen, so the work has
     * completed; a fence is waited for when the slot is reused or the host touches what the batch used. */
    VkEvent done_event;
    int done;
    int armed; /* submitted with its fence (on GPUs one batch in TRR_VK_FENCE_EVERY, and any the host reads from) */
    int ahead;             /* holds, after its op barrier, the dispatch a synchronize recorded ahead (vk_submit.c)
                              and no op has claimed it yet: not submitted as it is */
} trr_vk_slot;


/* The most specialization constants a pipeline takes (the cooperative-matrix matmul has 15). */
#define TRR_VK_MAX_SPEC 18

typedef struct trr_vk_pipeline {
    struct trr_vk_pipeline *next;
    char shader[48];
    uint32_t spec[TRR_VK_MAX_SPEC];
    int nspec;
    VkPipeline handle;
} trr_vk_pipeline;

typedef struct trr_vk_module {
    struct trr_vk_module *next;
    char shader[48];
    VkShaderModule handle;
} trr_vk_module;

typedef struct trr_vk_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map; /* non-NULL when host-visible memory is mapped directly (unified-memory devices) */
    size_t size;
    uint64_t seq; /* the last batch that used it (0: none) */
} trr_vk_buffer;

/* A device buffer an op keeps between calls for its intermediate results (attention's key splits, matmul's
 * split-K partial products), grown as a call needs more. */
typedef struct trr_vk_scratch {
    trr_vk_buffer *buf; /* NULL until a call needs it */
    size_t bytes;
} trr_vk_scratch;

/* The push constants of every kernel (kernels/vulkan/common.glsl). */
typedef struct trr_vk_push {
    uint32_t rows, cols, k;
    uint32_t xo, yo, zo;
    uint32_t xs0, xs1, ys0, zs0;
    float alpha;
    uint32_t pad;
    uint32_t xb, yb, zb; /* matmul batch strides (elements); the batch is the grid's z */
    uint32_t aux;        /* matmul of 8-bit floats: scale_a * scale_b as f32 bits; a user op's sixth word */
} trr_vk_push; /* 64 bytes: inside the 128 bytes of push constants every device offers */

/* A dispatch as recorded: its pipeline, bindings (x, y, z and their buffers), push constants and grid. */
typedef struct trr_vk_dispatch_rec {
    VkPipeline pipeline;
    VkDescriptorBufferInfo info[3];
    trr_vk_buffer *bufs[3];
    trr_vk_push push;
    uint32_t gx, gy, gz;
} trr_vk_dispatch_rec;

typedef struct trr_vk_device {
    trr_vk_fns fn;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    trr_vk_phys phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    uint32_t timestamp_bits;
    uint32_t mem_device;  /* memory type for buffers */
    uint32_t mem_staging; /* host-visible, coherent */
    int direct_map;       /* buffers are host-visible: read and write through a mapping, no staging */
    int spin_wait;        /* waits poll before they block (GPUs; TRIREME_VK_SPIN_WAIT=1 anywhere, for tests) */
    uint64_t submitted_seq; /* the last batch submitted */
    uint64_t retired_seq;   /* every batch up to this one is known complete through a fence */
    VkFence sync_fence;     /* an empty submission's, where no fenced batch covers a wait */
    uint64_t sync_seq;      /* what sync_fence covers while submitted (0: not submitted) */
    /* The f16 matmul's cooperative-matrix variants this device can run (its extension enabled and the kernel
     * built), each with the reason it cannot when 0 (check_config reports it): coop_khr, the
     * VK_KHR_cooperative_matrix build of matmul_coop.comp; coop_nv, its VK_NV_cooperative_matrix build; coop2,
     * matmul_cm2.comp on VK_NV_cooperative_matrix2; coop_bf16, the bf16 matmul's variant coop_khr (the KHR build
     * of matmul_coop.comp with bf16 matrices, VK_KHR_shader_bfloat16). */
    int coop_khr, coop_nv, coop2, coop_bf16;
    char coop_khr_why[192], coop_nv_why[192], coop2_why[192], coop_bf16_why[192];

    VkCommandPool cmd_pool;
    trr_vk_slot slots[TRR_VK_SLOTS];
    int next_slot;
    trr_vk_slot *recording; /* the open batch, not yet submitted; NULL when none */
    uint64_t next_seq;      /* the number the next batch gets (from 1) */
    /* VK_KHR_push_descriptor: operands are pushed into the command buffer (vkCmdPushDescriptorSetKHR) instead of
     * sets allocated from each slot's pool; NULL where the device lacks it or TRIREME_VK_PUSH_DESCRIPTORS=0 */
    PFN_vkCmdPushDescriptorSetKHR push_set;
    /* VK_EXT_pipeline_robustness enabled: the matmul_coop pipelines are created without bounds checks on their
     * storage buffers (vk_pipeline.c) */
    int unchecked_coop;
    /* The last dispatch that was the only op of its batch when recorded (last_valid): a synchronize records it
     * ahead into the next batch, which the same dispatch then claims without recording (vk_submit.c). */
    trr_vk_dispatch_rec last;
    int last_valid;

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipelineCache pipeline_cache;
    int cache_dirty;
    char cache_path[1024];
    trr_vk_pipeline *pipelines;
    trr_vk_module *modules;
    struct trr_vk_norm_state *norm; /* the row norms' four-binding layout (vk_norm.c); NULL until first used */
    struct trr_vk_attn_state *attn; /* attention's seven-binding layout and scratch (vk_attention.c); likewise */
    trr_vk_scratch matmul_partials; /* split-K's partial products (vk_ops.c) */

    VkBuffer staging;
    VkDeviceMemory staging_mem;
    void *staging_map;
    size_t staging_size;

    VkQueryPool queries;
    int timer_running; /* between timer_start and timer_stop: every submitted batch ends with the stop stamp */
    int timer_stamped; /* a batch has written the stop stamp since timer_start: the next one resets it first */
    /* vkResetQueryPool where the device offers hostQueryReset (enabled); queries_reset: the host has reset both
     * queries since they were last written, so timer_start records no reset */
    PFN_vkResetQueryPool host_reset;
    int queries_reset;
    /* TRIREME_VK_PIPELINE_STATS=1 and the device has VK_KHR_pipeline_executable_properties: each new pipeline's
     * compiler statistics (registers, shared memory, ...) go to stderr, a diagnostic for tuning kernels. */
    PFN_vkGetPipelineExecutablePropertiesKHR get_exec_props;
    PFN_vkGetPipelineExecutableStatisticsKHR get_exec_stats;
    PFN_vkGetPipelineExecutableInternalRepresentationsKHR get_exec_irs; /* optional, for TRIREME_DUMP_DIR */

    /* TRIREME_VK_VALIDATION=1: messages of warning severity or worse, counted by the messenger. */
    int validation;
    /* TRIREME_VK_VALIDATION=gpu-av: the layer's GPU-assisted validation as well (with the synchronization check),
     * and descriptor sets instead of push descriptors, which GPU-AV in layer 1.3.239 reads as uninitialized */
    int gpu_av;
    unsigned validation_count;
    unsigned validation_reported;
    char validation_text[1024];
} trr_vk_device;


/* vk_loader.c: the process-wide loader and the probe's view of the devices. */
const char *trr_vk_result_name(VkResult r);
trr_status trr_vk_load(char *reason, size_t cap, PFN_vkGetInstanceProcAddr *out_gipa);
trr_status trr_vk_load_instance_fns(trr_vk_fns *fn, VkInstance instance, char *reason, size_t cap);
trr_status trr_vk_probe(int *out_count, char *reason, size_t cap);
trr_status trr_vk_device_info(int index, trr_device_info *out);

/* vk_physical.c */
void trr_vk_phys_query(const trr_vk_fns *fn, VkPhysicalDevice handle, trr_vk_phys *out);
/* Fills phys->coop2_max_threads and coop2_max_dim. Only where the cooperative_matrix2 kernel is asked for: the
 * validation layer we carry (1.3.239) predates the extension and fails any query that names its structs. */
void trr_vk_phys_query_coop2_limits(const trr_vk_fns *fn, trr_vk_phys *phys);
void trr_vk_phys_describe(const trr_vk_phys *p, int index, trr_device_info *out);

/* vk_device.c */
trr_status trr_vk_open(trr_context *ctx, int index, void **out_dev);
void trr_vk_close(void *dev);
/* TRR_ERR_DEVICE with the first validation message when the layer reported something new. */
trr_status trr_vk_check_validation(trr_context *ctx);

/* vk_submit.c: batches. An op records its commands between trr_vk_begin, which opens a batch where none is open
 * and orders the op after everything before it, and trr_vk_end, which submits the batch once it is full. */
trr_status trr_vk_begin(trr_context *ctx, VkCommandBuffer *out_cmd);
trr_status trr_vk_end(trr_context *ctx);
/* The open batch (between trr_vk_begin and trr_vk_end) uses b: host access and frees wait for it. */
void trr_vk_use(trr_vk_device *d, trr_vk_buffer *b);
/* Records a dispatch into cmd (descriptors, pipeline unless bound, push constants, grid); the caller marks its
 * buffers used. trr_vk_dispatch: the same as an op of the open batch, between trr_vk_begin and trr_vk_end, or
 * claimed from the batch where a synchronize recorded the same dispatch ahead. */
trr_status trr_vk_record(trr_context *ctx, VkCommandBuffer cmd, const trr_vk_dispatch_rec *rec);
trr_status trr_vk_dispatch(trr_context *ctx, const trr_vk_dispatch_rec *rec);
/* Submits the open batch, if any, without waiting. */
trr_status trr_vk_flush(trr_context *ctx);
/* Waits for the work that uses b (submitting it first where it is still being recorded). */
trr_status trr_vk_wait_buffer(trr_context *ctx, const trr_vk_buffer *b);
/* The same where no context is at hand (frees): the failing call's name in *what. */
VkResult trr_vk_wait_buffer_quiet(trr_vk_device *d, const trr_vk_buffer *b, const char **what);
/* Submits the open batch and waits for everything (closing the device). */
VkResult trr_vk_finish_quiet(trr_vk_device *d, const char **what);
trr_status trr_vk_synchronize(trr_context *ctx);
trr_status trr_vk_timer_start(trr_context *ctx);
trr_status trr_vk_timer_stop(trr_context *ctx, double *out_ms);
void trr_vk_slots_destroy(trr_vk_device *d);
trr_status trr_vk_slots_create(trr_context *ctx, trr_vk_device *d);

/* vk_memory.c */
/* s's buffer of at least `bytes`, replaced by a larger one (once the work that used it is done) where it is
 * smaller. */
trr_status trr_vk_scratch_get(trr_context *ctx, trr_vk_scratch *s, size_t bytes, trr_vk_buffer **out);
void trr_vk_scratch_free(trr_vk_device *d, trr_vk_scratch *s);
trr_status trr_vk_alloc(trr_context *ctx, size_t bytes, void **out_mem);
void trr_vk_free(void *dev, void *mem);
trr_status trr_vk_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem);
void trr_vk_unwrap(void *dev, void *mem);
trr_status trr_vk_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes);
trr_status trr_vk_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes);
trr_status trr_vk_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes);
trr_status trr_vk_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value);
trr_status trr_vk_create_buffer(trr_context *ctx, trr_vk_device *d, size_t bytes, uint32_t mem_type,
                                VkBuffer *out_buf, VkDeviceMemory *out_mem);

/* vk_pipeline.c */
trr_status trr_vk_pipelines_init(trr_context *ctx, trr_vk_device *d);
void trr_vk_pipelines_destroy(trr_vk_device *d);
trr_status trr_vk_pipeline_get(trr_context *ctx, const char *shader, const uint32_t *spec, int nspec,
                               VkPipeline *out);
/* The same in another pipeline layout (a kernel of more bindings: vk_norm.c); a shader name keeps one layout. */
trr_status trr_vk_pipeline_get_in(trr_context *ctx, const char *shader, const uint32_t *spec, int nspec,
                                  VkPipelineLayout layout, VkPipeline *out);

/* vk_rules.c: the ops by shape rule, and the one place that decides whether the backend runs an op */
trr_status trr_vk_run(trr_context *ctx, const trr_call *call);
trr_status trr_vk_supports(trr_context *ctx, const trr_call *call);
void trr_vk_choose_config(trr_context *ctx, trr_call *call);
trr_status trr_vk_check_config(trr_context *ctx, const trr_call *call);
/* vk_ops.c */
/* The three storage-buffer writes of a dispatch's bindings 0..2 (x, y, z), for push descriptors or a set. */
void trr_vk_storage_writes(const VkDescriptorBufferInfo info[3], VkWriteDescriptorSet wr[3]);
/* A device-to-device byte copy (trr_vk_copy): the copy kernel on GPUs, vkCmdCopyBuffer on CPU drivers; the ranges
 * must not overlap. */
trr_status trr_vk_copy_bytes(trr_context *ctx, trr_vk_buffer *dst, size_t dst_offset, trr_vk_buffer *src,
                             size_t src_offset, size_t bytes);

/* Checks a VkResult; on failure records "fn: VK_ERROR_..." on ctx and returns from the caller. */
trr_status trr_vk_fail(trr_context *ctx, const char *fn, VkResult r);
#define TRR_VK_CHECK(ctx, call, fnname)                                                                        \
    do {                                                                                                       \
        VkResult trr_vk_r_ = (call);                                                                           \
        if (trr_vk_r_ != VK_SUCCESS) return trr_vk_fail((ctx), (fnname), trr_vk_r_);                          \
    } while (0)

static inline trr_vk_device *trr_vk_dev(trr_context *ctx) {
    return (trr_vk_device *)ctx->dev;
}

#endif
