/* Opening a device for a context: its own instance (so a validation messenger can report into this context),
 * the logical device with the storage features the kernels need, and the objects every op shares. */
#include "vk_internal.h"
#include "vk_norm.h"
#include "vk_attention.h"
#include "vk_queue_family.h"
#include "vk_validation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_validation_layer = "VK_LAYER_KHRONOS_validation";

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types;
    trr_vk_device *d = user;
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    /* The first message is the one that explains the rest; later ones only raise the count. */
    if (d->validation_count == d->validation_reported)
        snprintf(d->validation_text, sizeof d->validation_text, "%s",
                 data && data->pMessage ? data->pMessage : "(no message)");
    d->validation_count++;
    return VK_FALSE;
}

trr_status trr_vk_check_validation(trr_context *ctx) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (!d || d->validation_count == d->validation_reported) return TRR_OK;
    unsigned n = d->validation_count - d->validation_reported;
    d->validation_reported = d->validation_count;
    return trr_error(ctx, TRR_ERR_DEVICE, "Vulkan validation reported %u message(s); first: %s", n,
                     d->validation_text);
}

/* TRIREME_VK_VALIDATION: unset, empty or 0: off; gpu-av: the layer with GPU-assisted validation and the
 * synchronization check (*gpu_av = 1); anything else (1): the layer with the synchronization check. */
static int validation_requested(int *gpu_av) {
    const char *v = getenv("TRIREME_VK_VALIDATION");
    *gpu_av = v && strcmp(v, "gpu-av") == 0;
    return v && *v && strcmp(v, "0") != 0;
}

int trr_vk_validation_state(trr_context *ctx, int *out_gpu_av, int *out_push_descriptors) {
    if (!ctx || !ctx->backend || strcmp(ctx->backend->name, "vulkan") != 0 || !ctx->dev) return -1;
    const trr_vk_device *d = trr_vk_dev(ctx);
    if (out_gpu_av) *out_gpu_av = d->gpu_av;
    if (out_push_descriptors) *out_push_descriptors = d->push_set != NULL;
    return d->validation;
}

static trr_status layer_present(trr_context *ctx, trr_vk_device *d) {
    uint32_t n = 0;
    TRR_VK_CHECK(ctx, d->fn.vkEnumerateInstanceLayerProperties(&n, NULL), "vkEnumerateInstanceLayerProperties");
    VkLayerProperties *layers = calloc(n ? n : 1, sizeof *layers);
    if (!layers) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    VkResult r = d->fn.vkEnumerateInstanceLayerProperties(&n, layers);
    int found = 0;
    for (uint32_t i = 0; r == VK_SUCCESS && i < n; i++)
        if (strcmp(layers[i].layerName, k_validation_layer) == 0) found = 1;
    free(layers);
    if (r != VK_SUCCESS) return trr_vk_fail(ctx, "vkEnumerateInstanceLayerProperties", r);
    if (!found)
        return trr_error(ctx, TRR_ERR_UNAVAILABLE, "TRIREME_VK_VALIDATION is set but %s is not installed",
                         k_validation_layer);
    return TRR_OK;
}

/* Whether the validation layer offers instance extension `name` (0 where it cannot be asked). */
static int layer_offers(const trr_vk_device *d, const char *name) {
    uint32_t n = 0;
    if (d->fn.vkEnumerateInstanceExtensionProperties(k_validation_layer, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *exts = calloc(n, sizeof *exts);
    if (!exts) return 0;
    int found = 0;
    if (d->fn.vkEnumerateInstanceExtensionProperties(k_validation_layer, &n, exts) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(exts[i].extensionName, name) == 0;
    free(exts);
    return found;
}

static trr_status create_instance(trr_context *ctx, trr_vk_device *d) {
    char reason[256];
    if (trr_vk_load(reason, sizeof reason, &d->fn.vkGetInstanceProcAddr) != TRR_OK ||
        trr_vk_load_instance_fns(&d->fn, VK_NULL_HANDLE, reason, sizeof reason) != TRR_OK)
        return trr_error(ctx, TRR_ERR_UNAVAILABLE, "vulkan: %s", reason);
    d->validation = validation_requested(&d->gpu_av);
    if (d->validation) TRR_TRY(layer_present(ctx, d));

    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
        .pUserData = d};
    /* Under the layer, its synchronization check too where it offers one: a missing barrier between ops (or
     * inside one) is a wrong answer on some device some day, and lavapipe, which runs dispatches one after
     * another, would never show it. */
    const char *ext[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    const int sync_check = d->validation && layer_offers(d, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    if (d->gpu_av && !sync_check)
        return trr_error(ctx, TRR_ERR_UNAVAILABLE,
                         "TRIREME_VK_VALIDATION=gpu-av: %s does not offer %s, through which GPU-AV is enabled",
                         k_validation_layer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
                                                    VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT};
    VkValidationFeaturesEXT vf = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                  .pNext = &mci,
                                  .enabledValidationFeatureCount = d->gpu_av ? 2u : 1u,
                                  .pEnabledValidationFeatures = enables};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "trireme",
                             .pEngineName = "trireme",
                             /* 1.3 only for the cooperative_matrix2 kernel (SPIR-V 1.6), which the validation
                              * layer cannot take (create_device) */
                             .apiVersion = TRR_VK_COOP2 && !d->validation ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = sync_check ? (const void *)&vf : d->validation ? (const void *)&mci : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = d->validation ? 1u : 0u,
                               .ppEnabledLayerNames = d->validation ? &k_validation_layer : NULL,
                               .enabledExtensionCount = d->validation ? (sync_check ? 2u : 1u) : 0u,
                               .ppEnabledExtensionNames = d->validation ? ext : NULL};
    TRR_VK_CHECK(ctx, d->fn.vkCreateInstance(&ci, NULL, &d->instance), "vkCreateInstance");
    if (trr_vk_load_instance_fns(&d->fn, d->instance, reason, sizeof reason) != TRR_OK)
        return trr_error(ctx, TRR_ERR_UNAVAILABLE, "vulkan: %s", reason);
    if (d->validation) {
        if (!d->fn.vkCreateDebugUtilsMessengerEXT)
            return trr_error(ctx, TRR_ERR_UNAVAILABLE, "vulkan: vkCreateDebugUtilsMessengerEXT is missing");
        TRR_VK_CHECK(ctx, d->fn.vkCreateDebugUtilsMessengerEXT(d->instance, &mci, NULL, &d->messenger),
                     "vkCreateDebugUtilsMessengerEXT");
    }
    return TRR_OK;
}

static trr_status pick_physical(trr_context *ctx, trr_vk_device *d, int index) {
    uint32_t n = 0;
    TRR_VK_CHECK(ctx, d->fn.vkEnumeratePhysicalDevices(d->instance, &n, NULL), "vkEnumeratePhysicalDevices");
    if (index < 0 || (uint32_t)index >= n)
        return trr_error(ctx, TRR_ERR_NO_DEVICE, "vulkan:%d: there are %u Vulkan devices", index, n);
    VkPhysicalDevice *all = calloc(n, sizeof *all);
    if (!all) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    VkResult r = d->fn.vkEnumeratePhysicalDevices(d->instance, &n, all);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) trr_vk_phys_query(&d->fn, all[index], &d->phys);
    free(all);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return trr_vk_fail(ctx, "vkEnumeratePhysicalDevices", r);
    if (d->phys.props.apiVersion < VK_API_VERSION_1_1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan:%d (%s) supports only Vulkan %u.%u; 1.1 is needed",
                         index, d->phys.props.deviceName, VK_API_VERSION_MAJOR(d->phys.props.apiVersion),
                         VK_API_VERSION_MINOR(d->phys.props.apiVersion));
    return TRR_OK;
}

static trr_status pick_queue(trr_context *ctx, trr_vk_device *d) {
    uint32_t n = 0;
    d->fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys.handle, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    d->fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys.handle, &n, q);
    const int best = trr_vk_pick_queue_family(q, n);
    if (best >= 0) {
        d->queue_family = (uint32_t)best;
        d->timestamp_bits = q[best].timestampValidBits;
    }
    free(q);
    if (best < 0) return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s has no compute queue", d->phys.props.deviceName);
    return TRR_OK;
}

static trr_status create_device(trr_context *ctx, trr_vk_device *d) {
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = d->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                              .storageBuffer8BitAccess = d->phys.storage8 ? VK_TRUE : VK_FALSE};
    /* The timer's queries reset by the host where offered (vk_submit.c's timer_start says why);
     * TRIREME_VK_HOST_QUERY_RESET=0 records the resets instead, as on devices without it (tests run both). */
    const char *hqr_env = getenv("TRIREME_VK_HOST_QUERY_RESET");
    const int host_reset = d->phys.host_query_reset && !(hqr_env && strcmp(hqr_env, "0") == 0);
    VkPhysicalDeviceHostQueryResetFeatures hqr = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
                                                  .hostQueryReset = VK_TRUE};
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = d->phys.props.apiVersion >= VK_API_VERSION_1_2 ? &s8 : NULL,
        .storageBuffer16BitAccess = d->phys.storage16 ? VK_TRUE : VK_FALSE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    /* The cooperative-matrix kernel also needs float16 arithmetic types and the Vulkan memory model. */
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .vulkanMemoryModel = VK_TRUE};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &vmm,
        .shaderFloat16 = d->phys.float16 ? VK_TRUE : VK_FALSE};
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR, .shaderBFloat16Type = VK_TRUE,
        .shaderBFloat16CooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_khr = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
        .cooperativeMatrixWorkgroupScope = VK_TRUE, .cooperativeMatrixFlexibleDimensions = VK_TRUE,
        .cooperativeMatrixTensorAddressing = VK_TRUE, .cooperativeMatrixPerElementOperations = VK_TRUE};
    /* SPIR-V 1.6 declares workgroup sizes with LocalSizeId, which needs maintenance4 */
    VkPhysicalDeviceMaintenance4Features m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
                                               .maintenance4 = VK_TRUE};
    /* Every cooperative-matrix variant of the f16 matmul the device and this build can run is enabled, so each
     * call's config picks among them (vk_ops.c). On NVIDIA H100 the VK_KHR_cooperative_matrix build runs ahead
     * of the same source on the NV extension, and both ahead of matmul_cm2.comp at its best tile
     * (docs/performance.md): the heuristic's order. Under the validation layer the KHR and cooperative_matrix2
     * variants are off, with the reason: Debian 12's layer (1.3.239) predates both extensions and rejects a
     * device that enables them (or any query naming their structs). */
    const char *name = d->phys.props.deviceName;
    d->coop_nv = d->phys.coop_f16;
    if (!d->coop_nv)
        snprintf(d->coop_nv_why, sizeof d->coop_nv_why,
                 "%s lacks VK_NV_cooperative_matrix with 16x16x16 f16 -> f32 subgroup matrices, 32-wide subgroups, "
                 "shaderFloat16 and the Vulkan memory model", name);
    d->coop_khr = TRR_VK_COOP_KHR && d->phys.coop_f16_khr && !d->validation;
    if (!TRR_VK_COOP_KHR)
        snprintf(d->coop_khr_why, sizeof d->coop_khr_why,
                 "this build has no VK_KHR_cooperative_matrix kernel (it needs glslang 13 or later)");
    else if (!d->phys.coop_f16_khr)
        snprintf(d->coop_khr_why, sizeof d->coop_khr_why,
                 "%s lacks VK_KHR_cooperative_matrix with 16x16x16 f16 -> f32 subgroup matrices", name);
    else if (d->validation)
        snprintf(d->coop_khr_why, sizeof d->coop_khr_why,
                 "the validation layer (TRIREME_VK_VALIDATION) predates VK_KHR_cooperative_matrix");
    d->coop2 = TRR_VK_COOP2 && d->phys.coop2 && !d->validation;
    if (!TRR_VK_COOP2)
        snprintf(d->coop2_why, sizeof d->coop2_why,
                 "this build has no VK_NV_cooperative_matrix2 kernel (it needs Slang's glslang, 15 or later)");
    else if (!d->phys.coop2)
        snprintf(d->coop2_why, sizeof d->coop2_why,
                 "%s lacks VK_NV_cooperative_matrix2 with workgroup scope, flexible dimensions, tensor addressing "
                 "and per-element operations (Vulkan 1.3)", name);
    else if (d->validation)
        snprintf(d->coop2_why, sizeof d->coop2_why,
                 "the validation layer (TRIREME_VK_VALIDATION) predates VK_NV_cooperative_matrix2");
    if (d->coop2) trr_vk_phys_query_coop2_limits(&d->fn, &d->phys);
    /* The bf16 matmul's variant coop_khr: the KHR build of matmul_coop.comp with bf16 matrices. */
    d->coop_bf16 = TRR_VK_COOP_BF16 && d->phys.coop_bf16_khr && !d->validation;
    if (!TRR_VK_COOP_BF16)
        snprintf(d->coop_bf16_why, sizeof d->coop_bf16_why,
                 "this build has no bf16 cooperative-matrix kernel: it needs GL_EXT_bfloat16, which glslang 13 lacks "
                 "and Slang's glslang (slangpy) has");
    else if (!d->phys.coop_bf16_khr)
        snprintf(d->coop_bf16_why, sizeof d->coop_bf16_why,
                 "%.40s lacks VK_KHR_shader_bfloat16 cooperative matrices of 16x16x16 bf16 -> f32 at subgroup scope",
                 name);
    else if (d->validation)
        snprintf(d->coop_bf16_why, sizeof d->coop_bf16_why,
                 "the validation layer (TRIREME_VK_VALIDATION) predates VK_KHR_shader_bfloat16");
    const char *exts[8];
    uint32_t n_ext = 0;
    /* The cooperative-matrix kernels also need float16 arithmetic types and the Vulkan memory model. */
    void *chain = NULL;
    if (d->coop_nv || d->coop_khr || d->coop2 || d->coop_bf16) chain = &f16;
    if (d->coop_nv) {
        coop.pNext = chain;
        chain = &coop;
        exts[n_ext++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (d->coop_khr || d->coop2 || d->coop_bf16) {
        coop_khr.pNext = chain;
        chain = &coop_khr;
        exts[n_ext++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (d->coop_bf16) {
        bf16.pNext = chain;
        chain = &bf16;
        exts[n_ext++] = VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME;
    }
    if (d->coop2) {
        coop2.pNext = chain;
        m4.pNext = &coop2;
        chain = &m4;
        exts[n_ext++] = VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME;
    }
    if (host_reset) {
        hqr.pNext = chain;
        chain = &hqr;
    }
    /* Timeline semaphores where offered: trr_vk_sync_probe's timeline variants use them. The library waits on
     * fences and events: on NVIDIA a semaphore's signal raises the GPU's interrupt as a fence's does, one per
     * submission. */
    VkPhysicalDeviceTimelineSemaphoreFeatures tls = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES, .pNext = chain, .timelineSemaphore = VK_TRUE};
    if (d->phys.timeline) chain = &tls;
    s8.pNext = chain;
    /* VK_KHR_push_descriptor where offered, except on discrete GPUs: an op's operands go into the command buffer,
     * not into a descriptor set allocated and written for it. On NVIDIA H200 the sets measured faster on the
     * device and the host alike (docs/performance.md). TRIREME_VK_PUSH_DESCRIPTORS
     * =0 keeps the sets everywhere, =1 pushes on discrete GPUs too (tests run both paths). */
    const char *push_env = getenv("TRIREME_VK_PUSH_DESCRIPTORS");
    const int discrete = d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    /* Under GPU-AV (TRIREME_VK_VALIDATION=gpu-av) never: layer 1.3.239 reports "Descriptor index 0 is
     * uninitialized" for pushed descriptors and skips the dispatch (a layer bug). */
    int push = d->phys.push_descriptor && !d->gpu_av && !(push_env && strcmp(push_env, "0") == 0) &&
               (!discrete || (push_env && strcmp(push_env, "1") == 0));
    if (push) exts[n_ext++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    /* TRIREME_VK_PIPELINE_STATS=1: the compiler's statistics of each pipeline (a diagnostic, off by default). */
    const char *stats_env = getenv("TRIREME_VK_PIPELINE_STATS");
    int stats = stats_env && strcmp(stats_env, "1") == 0 && d->phys.exec_props;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pep = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = f2.pNext,
        .pipelineExecutableInfo = VK_TRUE};
    if (stats) {
        f2.pNext = &pep;
        exts[n_ext++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    /* VK_EXT_pipeline_robustness: NVIDIA's driver bounds-checks every storage-buffer access by default (a compare
     * and a predicate per load in the machine code); the cooperative matmul checks its own bounds, so its
     * pipelines turn the driver's off (not under the validation layer, which predates the extension); so do
     * matmul_cm2.comp's, whose edge tiles read through clamped tensor layouts and interior tiles read only inside
     * the matrix. */
    VkPhysicalDevicePipelineRobustnessFeaturesEXT robust = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT, .pipelineRobustness = VK_TRUE};
    if (d->phys.pipeline_robustness && !d->validation && (d->coop_khr || d->coop_nv || d->coop_bf16 || d->coop2)) {
        robust.pNext = f2.pNext;
        f2.pNext = &robust;
        exts[n_ext++] = VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME;
        d->unchecked_coop = 1;
    }
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qci,
                             .enabledExtensionCount = n_ext,
                             .ppEnabledExtensionNames = n_ext ? exts : NULL};
    TRR_VK_CHECK(ctx, d->fn.vkCreateDevice(d->phys.handle, &ci, NULL, &d->device), "vkCreateDevice");
#define LOAD(name)                                                                                             \
    d->fn.name = (PFN_##name)d->fn.vkGetDeviceProcAddr(d->device, #name);                                     \
    if (!d->fn.name) return trr_error(ctx, TRR_ERR_UNAVAILABLE, "vulkan: the driver lacks %s", #name);
    TRR_VK_DEVICE_FNS(LOAD)
#undef LOAD
    if (host_reset) d->host_reset = (PFN_vkResetQueryPool)d->fn.vkGetDeviceProcAddr(d->device, "vkResetQueryPool");
    if (push) {
        d->push_set = (PFN_vkCmdPushDescriptorSetKHR)d->fn.vkGetDeviceProcAddr(d->device, "vkCmdPushDescriptorSetKHR");
        if (!d->push_set) return trr_error(ctx, TRR_ERR_UNAVAILABLE, "vulkan: the driver lacks vkCmdPushDescriptorSetKHR");
    }
    if (stats) {
        d->get_exec_props = (PFN_vkGetPipelineExecutablePropertiesKHR)d->fn.vkGetDeviceProcAddr(
            d->device, "vkGetPipelineExecutablePropertiesKHR");
        d->get_exec_stats = (PFN_vkGetPipelineExecutableStatisticsKHR)d->fn.vkGetDeviceProcAddr(
            d->device, "vkGetPipelineExecutableStatisticsKHR");
        if (!d->get_exec_props || !d->get_exec_stats) d->get_exec_props = NULL, d->get_exec_stats = NULL;
        d->get_exec_irs = (PFN_vkGetPipelineExecutableInternalRepresentationsKHR)d->fn.vkGetDeviceProcAddr(
            d->device, "vkGetPipelineExecutableInternalRepresentationsKHR");
        if (!d->get_exec_props || !getenv("TRIREME_DUMP_DIR")) d->get_exec_irs = NULL;
    }
    d->fn.vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);
    return TRR_OK;
}

/* Unified-memory devices (CPU drivers, integrated GPUs) get buffers the host maps directly; discrete GPUs get
 * device-local buffers and a staging buffer, since host access to their memory over the bus is slow.
 * TRIREME_VK_STAGING=1 takes the discrete GPUs' path on any device, so CI's lavapipe tests it too. */
static void pick_memory_mode(trr_vk_device *d) {
    VkPhysicalDeviceType t = d->phys.props.deviceType;
    const char *staging_env = getenv("TRIREME_VK_STAGING");
    if (t == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU || (staging_env && strcmp(staging_env, "1") == 0)) return;
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < d->phys.mem.memoryTypeCount; i++)
        if ((d->phys.mem.memoryTypes[i].propertyFlags & want) == want) d->direct_map = 1;
}

static trr_status create_queries(trr_context *ctx, trr_vk_device *d) {
    if (d->timestamp_bits == 0) return TRR_OK; /* timer_stop reports it */
    VkQueryPoolCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    TRR_VK_CHECK(ctx, d->fn.vkCreateQueryPool(d->device, &ci, NULL, &d->queries), "vkCreateQueryPool");
    if (d->host_reset) {
        d->host_reset(d->device, d->queries, 0, 2);
        d->queries_reset = 1;
    }
    return TRR_OK;
}

static trr_status open_all(trr_context *ctx, trr_vk_device *d, int index) {
    TRR_TRY(create_instance(ctx, d));
    TRR_TRY(pick_physical(ctx, d, index));
    TRR_TRY(pick_queue(ctx, d));
    TRR_TRY(create_device(ctx, d));
    pick_memory_mode(d);
    TRR_TRY(trr_vk_slots_create(ctx, d));
    TRR_TRY(trr_vk_pipelines_init(ctx, d));
    TRR_TRY(create_queries(ctx, d));
    if (d->validation_count != d->validation_reported) {
        d->validation_reported = d->validation_count;
        return trr_error(ctx, TRR_ERR_DEVICE, "Vulkan validation while opening the device: %s", d->validation_text);
    }
    return TRR_OK;
}

trr_status trr_vk_open(trr_context *ctx, int index, void **out_dev) {
    trr_vk_device *d = calloc(1, sizeof *d);
    if (!d) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    trr_status s = open_all(ctx, d, index);
    if (s != TRR_OK) {
        trr_vk_close(d);
        return s;
    }
    *out_dev = d;
    return TRR_OK;
}

void trr_vk_close(void *dev) {
    trr_vk_device *d = dev;
    if (!d) return;
    if (d->device && !d->fn.vkUpdateDescriptorSets) {
        /* open failed while loading device functions: nothing else was created */
        if (d->fn.vkDestroyDevice) d->fn.vkDestroyDevice(d->device, NULL);
    } else if (d->device) {
        const char *what;
        (void)trr_vk_finish_quiet(d, &what); /* ops recorded and never waited for still run, as they would have */
        d->fn.vkDeviceWaitIdle(d->device);
        trr_vk_norm_destroy(d);
        trr_vk_attention_destroy(d);
        trr_vk_scratch_free(d, &d->matmul_partials);
        trr_vk_pipelines_destroy(d); /* saves the pipeline cache */
        trr_vk_slots_destroy(d);
        if (d->queries) d->fn.vkDestroyQueryPool(d->device, d->queries, NULL);
        if (d->staging) d->fn.vkDestroyBuffer(d->device, d->staging, NULL);
        if (d->staging_mem) d->fn.vkFreeMemory(d->device, d->staging_mem, NULL);
        d->fn.vkDestroyDevice(d->device, NULL);
    }
    if (d->messenger) d->fn.vkDestroyDebugUtilsMessengerEXT(d->instance, d->messenger, NULL);
    if (d->instance) d->fn.vkDestroyInstance(d->instance, NULL);
    free(d);
}
