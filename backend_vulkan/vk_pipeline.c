/* Shader modules, compute pipelines and the on-disk pipeline cache. Pipelines are created on first use, keyed
 * by shader name and specialization constants, and kept for the life of the context. The VkPipelineCache is
 * reloaded from trr_cache_dir() at open (after its header is checked against this device) and saved at close. */
#include "vk_internal.h"

#include "cache.h"
#include "log.h"
#include "user_op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VkPipelineCacheHeaderVersionOne, read field by field: the file may come from another device or be torn. */
static int cache_header_ok(const trr_vk_device *d, const unsigned char *data, size_t size) {
    if (size < 32) return 0;
    uint32_t header_size, version, vendor, device;
    memcpy(&header_size, data, 4);
    memcpy(&version, data + 4, 4);
    memcpy(&vendor, data + 8, 4);
    memcpy(&device, data + 12, 4);
    return header_size >= 32 && header_size <= size && version == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
           vendor == d->phys.props.vendorID && device == d->phys.props.deviceID &&
           memcmp(data + 16, d->phys.props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

static void cache_path(trr_context *ctx, trr_vk_device *d) {
    char dir[900];
    if (trr_cache_dir(ctx, dir, sizeof dir) != TRR_OK) return; /* no cache: pipelines are still built */
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", d->phys.props.pipelineCacheUUID[i]);
    snprintf(d->cache_path, sizeof d->cache_path, "%s/vulkan-%04x-%04x-%08x-%s.pipelines", dir,
             d->phys.props.vendorID, d->phys.props.deviceID, d->phys.props.driverVersion, uuid);
}

trr_status trr_vk_pipelines_init(trr_context *ctx, trr_vk_device *d) {
    VkDescriptorSetLayoutBinding b[3];
    for (uint32_t i = 0; i < 3; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = d->push_set ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = 3,
        .pBindings = b};
    TRR_VK_CHECK(ctx, d->fn.vkCreateDescriptorSetLayout(d->device, &lci, NULL, &d->set_layout),
                 "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(trr_vk_push)};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &d->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    TRR_VK_CHECK(ctx, d->fn.vkCreatePipelineLayout(d->device, &pci, NULL, &d->pipeline_layout),
                 "vkCreatePipelineLayout");

    cache_path(ctx, d);
    void *data = NULL;
    size_t size = 0;
    if (d->cache_path[0] && trr_file_read(d->cache_path, &data, &size) == TRR_OK && !cache_header_ok(d, data, size)) {
        free(data); /* corrupt or from another driver: start empty, and overwrite it at close */
        data = NULL;
        size = 0;
        d->cache_dirty = 1;
    }
    VkPipelineCacheCreateInfo cci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = size, .pInitialData = data};
    VkResult r = d->fn.vkCreatePipelineCache(d->device, &cci, NULL, &d->pipeline_cache);
    if (r != VK_SUCCESS && data) { /* a driver may still refuse the data; an empty cache always works */
        cci.initialDataSize = 0;
        cci.pInitialData = NULL;
        r = d->fn.vkCreatePipelineCache(d->device, &cci, NULL, &d->pipeline_cache);
    }
    free(data);
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, "vkCreatePipelineCache", r);
    return TRR_OK;
}

static void save_cache(trr_vk_device *d) {
    if (!d->cache_dirty || !d->cache_path[0]) return;
    size_t size = 0;
    if (d->fn.vkGetPipelineCacheData(d->device, d->pipeline_cache, &size, NULL) != VK_SUCCESS || size == 0) return;
    void *data = malloc(size);
    if (!data) return;
    /* No context is left at close, so a failed save is recorded on this thread and otherwise ignored: the
     * cache only saves time. */
    if (d->fn.vkGetPipelineCacheData(d->device, d->pipeline_cache, &size, data) == VK_SUCCESS)
        (void)trr_file_write_atomic(NULL, d->cache_path, data, size);
    free(data);
}

void trr_vk_pipelines_destroy(trr_vk_device *d) {
    for (trr_vk_pipeline *p = d->pipelines, *next; p; p = next) {
        next = p->next;
        d->fn.vkDestroyPipeline(d->device, p->handle, NULL);
        free(p);
    }
    for (trr_vk_module *m = d->modules, *next; m; m = next) {
        next = m->next;
        d->fn.vkDestroyShaderModule(d->device, m->handle, NULL);
        free(m);
    }
    if (d->pipeline_cache) {
        save_cache(d);
        d->fn.vkDestroyPipelineCache(d->device, d->pipeline_cache, NULL);
    }
    if (d->pipeline_layout) d->fn.vkDestroyPipelineLayout(d->device, d->pipeline_layout, NULL);
    if (d->set_layout) d->fn.vkDestroyDescriptorSetLayout(d->device, d->set_layout, NULL);
}

/* The user op a shader name "user#<op>" names (vk_ops.c's user path), else NULL. */
static const trr_user_op *user_of(const char *shader) {
    return strncmp(shader, "user#", 5) ? NULL : trr_user_op_get((trr_op)atoi(shader + 5));
}

static trr_status get_module(trr_context *ctx, trr_vk_device *d, const char *shader, VkShaderModule *out) {
    for (trr_vk_module *m = d->modules; m; m = m->next)
        if (strcmp(m->shader, shader) == 0) {
            *out = m->handle;
            return TRR_OK;
        }
    char file[64];
    snprintf(file, sizeof file, "%s.spv", shader);
    const trr_embedded_file *f = trr_embedded_find(trr_vulkan_kernels, trr_vulkan_kernels_count, file);
    /* a user op's SPIR-V (core/user_op.h), by its shader name user#<op> */
    const trr_user_op *u = user_of(shader);
    const trr_embedded_file user_file = {file, u ? (const unsigned char *)u->spirv : NULL, u ? u->spirv_words * 4 : 0};
    if (u && u->spirv) f = &user_file;
    if (!f) return trr_error(ctx, TRR_ERR_INTERNAL, "vulkan: kernel %s is not embedded", file);
    char dump[80];
    snprintf(dump, sizeof dump, "vulkan-%s", file);
    (void)trr_dump_file(ctx, dump, f->data, f->size); /* a failed dump is recorded but does not stop the op */
    trr_vk_module *m = calloc(1, sizeof *m);
    if (!m) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    /* The embedded bytes are not guaranteed 4-byte aligned, as pCode requires: copy them. */
    uint32_t *code = malloc(f->size + 4);
    if (!code) {
        free(m);
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    }
    memcpy(code, f->data, f->size);
    VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = f->size, .pCode = code};
    VkResult r = d->fn.vkCreateShaderModule(d->device, &ci, NULL, &m->handle);
    free(code);
    if (r != VK_SUCCESS) {
        free(m);
        return trr_vk_fail(ctx, "vkCreateShaderModule", r);
    }
    snprintf(m->shader, sizeof m->shader, "%s", shader);
    m->next = d->modules;
    d->modules = m;
    *out = m->handle;
    return TRR_OK;
}

/* With TRIREME_DUMP_DIR set too, the driver's internal representations of the executable (whatever it offers:
 * on some drivers the machine code) go to files there, to see what the compiler made of a kernel. */
static void dump_representations(trr_context *ctx, trr_vk_device *d, const VkPipelineExecutableInfoKHR *ei,
                                 const char *shader, const uint32_t *spec, int nspec) {
    if (!d->get_exec_irs) return;
    VkPipelineExecutableInternalRepresentationKHR ir[8];
    uint32_t n = 8;
    for (uint32_t i = 0; i < n; i++)
        ir[i] = (VkPipelineExecutableInternalRepresentationKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR};
    VkResult r = d->get_exec_irs(d->device, ei, &n, ir);
    trr_log(TRR_LOG_INFO, "vk-ir %s: %u representation(s) (%s)", shader, n, trr_vk_result_name(r));
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return;
    int ok = 1;
    uint32_t allocated = n; /* the second call may report fewer */
    for (uint32_t i = 0; i < n; i++) {
        ir[i].pData = ir[i].dataSize ? malloc(ir[i].dataSize) : NULL;
        ok = ok && (!ir[i].dataSize || ir[i].pData);
    }
    r = ok ? d->get_exec_irs(d->device, ei, &n, ir) : VK_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        char name[256];
        int len = snprintf(name, sizeof name, "vk-ir-%s", shader);
        for (int k = 0; k < nspec && len > 0 && (size_t)len < sizeof name; k++)
            len += snprintf(name + len, sizeof name - (size_t)len, "-%u", spec[k]);
        if (len > 0 && (size_t)len < sizeof name)
            snprintf(name + len, sizeof name - (size_t)len, "-%u.%s", i, ir[i].isText ? "txt" : "bin");
        trr_log(TRR_LOG_INFO, "vk-ir   [%s] %s, %zu bytes -> %s", ir[i].name, ir[i].description, ir[i].dataSize, name);
        size_t size = ir[i].isText && ir[i].dataSize ? ir[i].dataSize - 1 : ir[i].dataSize; /* no trailing NUL */
        if ((r == VK_SUCCESS || r == VK_INCOMPLETE) && ir[i].pData) (void)trr_dump_file(ctx, name, ir[i].pData, size);
    }
    for (uint32_t i = 0; i < allocated; i++) free(ir[i].pData);
}

/* TRIREME_VK_PIPELINE_STATS=1: the compiler's statistics of a new pipeline to the log handler, one line (a diagnostic
 * for kernel tuning: registers and shared memory decide how many workgroups share a multiprocessor). */
static void print_stats(trr_context *ctx, trr_vk_device *d, VkPipeline pipeline, const char *shader,
                        const uint32_t *spec, int nspec) {
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
    uint32_t ne = 0;
    if (d->get_exec_props(d->device, &pi, &ne, NULL) != VK_SUCCESS) return;
    for (uint32_t e = 0; e < ne; e++) {
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                          .pipeline = pipeline, .executableIndex = e};
        VkPipelineExecutableStatisticKHR st[32];
        uint32_t ns = 32;
        for (uint32_t i = 0; i < ns; i++)
            st[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkResult r = d->get_exec_stats(d->device, &ei, &ns, st);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) continue;
        char line[2048];
        size_t len = 0;
#define APPEND(...)                                                                                            \
    do {                                                                                                       \
        const int k = snprintf(line + len, sizeof line - len, __VA_ARGS__);                                    \
        if (k > 0) len = len + (size_t)k < sizeof line ? len + (size_t)k : sizeof line - 1;                     \
    } while (0)
        APPEND("vk-stats %s spec", shader);
        for (int i = 0; i < nspec; i++) APPEND("%s%u", i ? "," : " ", spec[i]);
        APPEND(":");
        for (uint32_t i = 0; i < ns; i++) {
            switch (st[i].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                APPEND(" [%s]=%u", st[i].name, (unsigned)st[i].value.b32);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                APPEND(" [%s]=%lld", st[i].name, (long long)st[i].value.i64);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                APPEND(" [%s]=%llu", st[i].name, (unsigned long long)st[i].value.u64);
                break;
            default: APPEND(" [%s]=%g", st[i].name, st[i].value.f64); break;
            }
        }
#undef APPEND
        trr_log(TRR_LOG_INFO, "%s", line);
        dump_representations(ctx, d, &ei, shader, spec, nspec);
    }
}

trr_status trr_vk_pipeline_get(trr_context *ctx, const char *shader, const uint32_t *spec, int nspec,
                               VkPipeline *out) {
    return trr_vk_pipeline_get_in(ctx, shader, spec, nspec, trr_vk_dev(ctx)->pipeline_layout, out);
}

trr_status trr_vk_pipeline_get_in(trr_context *ctx, const char *shader, const uint32_t *spec, int nspec,
                                  VkPipelineLayout layout, VkPipeline *out) {
    trr_vk_device *d = trr_vk_dev(ctx);
    for (trr_vk_pipeline *p = d->pipelines; p; p = p->next)
        if (p->nspec == nspec && strcmp(p->shader, shader) == 0 && memcmp(p->spec, spec, sizeof *spec * (size_t)nspec) == 0) {
            *out = p->handle;
            return TRR_OK;
        }
    if (nspec > TRR_VK_MAX_SPEC)
        return trr_error(ctx, TRR_ERR_INTERNAL, "vulkan: %s: %d specialization constants, at most %d", shader, nspec,
                         TRR_VK_MAX_SPEC);
    VkShaderModule module = VK_NULL_HANDLE;
    TRR_TRY(get_module(ctx, d, shader, &module));
    VkSpecializationMapEntry entries[TRR_VK_MAX_SPEC];
    for (int i = 0; i < nspec; i++)
        entries[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i, .offset = 4u * (uint32_t)i, .size = 4};
    VkSpecializationInfo si = {
        .mapEntryCount = (uint32_t)nspec, .pMapEntries = entries, .dataSize = 4u * (size_t)nspec, .pData = spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = user_of(shader) ? user_of(shader)->entry[TRR_USER_VULKAN] : "main",
                  .pSpecializationInfo = &si},
        .layout = layout};
    VkPipelineRobustnessCreateInfoEXT unchecked = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
        .storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
        .uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
        .vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
        .images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT};
    if (d->unchecked_coop && (!strncmp(shader, "matmul_coop", 11) || !strncmp(shader, "matmul_cm2", 10)))
        ci.pNext = &unchecked;
    if (d->get_exec_props)
        ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                    (d->get_exec_irs ? VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR : 0);
    trr_vk_pipeline *p = calloc(1, sizeof *p);
    if (!p) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    VkResult r = d->fn.vkCreateComputePipelines(d->device, d->pipeline_cache, 1, &ci, NULL, &p->handle);
    if (r != VK_SUCCESS) {
        free(p);
        trr_status s = trr_vk_fail(ctx, "vkCreateComputePipelines", r);
        return s == TRR_ERR_DEVICE ? trr_error(ctx, TRR_ERR_COMPILE, "vkCreateComputePipelines (%s): %s", shader,
                                               trr_vk_result_name(r))
                                   : s;
    }
    if (d->get_exec_props) print_stats(ctx, d, p->handle, shader, spec, nspec);
    snprintf(p->shader, sizeof p->shader, "%s", shader);
    memcpy(p->spec, spec, sizeof *spec * (size_t)nspec);
    p->nspec = nspec;
    p->next = d->pipelines;
    d->pipelines = p;
    d->cache_dirty = 1;
    *out = p->handle;
    return trr_vk_check_validation(ctx);
}
