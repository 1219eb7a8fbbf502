/* What a physical device offers, and how it is described to people (trr_device_info). */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int has_extension(const VkExtensionProperties *ext, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ext[i].extensionName, name) == 0) return 1;
    return 0;
}

/* 16 bytes as 8-4-4-4-12 lower-case hex; an all-zero UUID (drivers that do not fill it) stays "". */
static void uuid_text(const uint8_t b[VK_UUID_SIZE], char out[37]) {
    int any = 0, o = 0;
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) any |= b[i];
    out[0] = '\0';
    if (!any) return;
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        o += snprintf(out + o, 3, "%02x", b[i]);
    }
}

static void query_coop(const trr_vk_fns *fn, trr_vk_phys *out) {
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .pNext = &vmm};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &coop};
    fn->vkGetPhysicalDeviceFeatures2(out->handle, &f2);
    if (!coop.cooperativeMatrix || !vmm.vulkanMemoryModel || !fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
        return;
    uint32_t n = 0;
    if (fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(out->handle, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    if (fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(out->handle, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 16 && p[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                p[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV && p[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                p[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV && p[i].scope == VK_SCOPE_SUBGROUP_NV)
                out->coop_f16 = 1;
    free(p);
}

/* VK_KHR_cooperative_matrix on its own (AMD and Intel offer no NV extension): the f16 -> f32 subgroup shape
 * the kernel runs (trr_vk_coop_pick_shape), with shaderFloat16, 16-bit storage and the Vulkan memory model; and
 * with VK_KHR_shader_bfloat16 (bf16_ext) the bf16 -> f32 one, which the bf16 build of the kernel needs along
 * with the extension's bf16 type and cooperative-matrix features. */
static void query_coop_khr(const trr_vk_fns *fn, trr_vk_phys *out, int bf16_ext) {
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR,
                                                    .pNext = &vmm};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .pNext = bf16_ext ? (void *)&bf : (void *)&vmm};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &coop};
    fn->vkGetPhysicalDeviceFeatures2(out->handle, &f2);
    uint32_t n = 0;
    if (!coop.cooperativeMatrix || !vmm.vulkanMemoryModel || !fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR ||
        fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(out->handle, &n, NULL) != VK_SUCCESS || n == 0)
        return;
    VkCooperativeMatrixPropertiesKHR *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    if (fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(out->handle, &n, p) == VK_SUCCESS) {
        if (out->float16 && out->storage16) trr_vk_coop_pick_shape(p, n, VK_COMPONENT_TYPE_FLOAT16_KHR, &out->coop_f16_shape);
        if (bf16_ext) {
            /* a bf16 component type in any shape: `trireme devices` says so */
            for (uint32_t i = 0; i < n; i++)
                if (p[i].AType == VK_COMPONENT_TYPE_BFLOAT16_KHR && p[i].BType == VK_COMPONENT_TYPE_BFLOAT16_KHR)
                    out->coop_bf16_any = 1;
            if (bf.shaderBFloat16Type && bf.shaderBFloat16CooperativeMatrix && out->storage16)
                trr_vk_coop_pick_shape(p, n, VK_COMPONENT_TYPE_BFLOAT16_KHR, &out->coop_bf16_shape);
        }
    }
    out->coop_f16_khr = out->coop_f16_shape.m != 0;
    out->coop_bf16_khr = out->coop_bf16_shape.m != 0;
    free(p);
}

/* What matmul_cm2.comp needs of VK_NV_cooperative_matrix2 (Vulkan 1.3, and so maintenance4, is checked by the
 * caller; a KHR f16 -> f32 shape the coop kernel runs stands for its f16 support). */
static void query_coop2(const trr_vk_fns *fn, trr_vk_phys *out) {
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV c2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &c2};
    fn->vkGetPhysicalDeviceFeatures2(out->handle, &f2);
    out->coop2 = c2.cooperativeMatrixWorkgroupScope && c2.cooperativeMatrixFlexibleDimensions &&
                 c2.cooperativeMatrixTensorAddressing && c2.cooperativeMatrixPerElementOperations;
}

void trr_vk_phys_query_coop2_limits(const trr_vk_fns *fn, trr_vk_phys *phys) {
    VkPhysicalDeviceCooperativeMatrix2PropertiesNV c2p = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &c2p};
    fn->vkGetPhysicalDeviceProperties2(phys->handle, &p2);
    phys->coop2_max_threads = c2p.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    phys->coop2_max_dim = c2p.cooperativeMatrixFlexibleDimensionsMaxDimension;
}

/* The device's compute units where its driver says (NVIDIA: SMs, VK_NV_shader_sm_builtins; AMD: active compute
 * units, VK_AMD_shader_core_properties2), else 0: Vulkan itself does not. Heuristics size grids by them. */
static void query_compute_units(const trr_vk_fns *fn, trr_vk_phys *out, int sm_builtins, int amd_cores) {
    if (sm_builtins) {
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
        VkPhysicalDeviceProperties2 pp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sm};
        fn->vkGetPhysicalDeviceProperties2(out->handle, &pp);
        out->compute_units = sm.shaderSMCount;
    } else if (amd_cores) {
        VkPhysicalDeviceShaderCoreProperties2AMD cu = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
        VkPhysicalDeviceProperties2 pp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &cu};
        fn->vkGetPhysicalDeviceProperties2(out->handle, &pp);
        out->compute_units = cu.activeComputeUnitCount;
    }
}

void trr_vk_phys_query(const trr_vk_fns *fn, VkPhysicalDevice handle, trr_vk_phys *out) {
    memset(out, 0, sizeof *out);
    out->handle = handle;
    fn->vkGetPhysicalDeviceProperties(handle, &out->props);
    fn->vkGetPhysicalDeviceMemoryProperties(handle, &out->mem);
    out->subgroup_size = 1;
    if (out->props.apiVersion < VK_API_VERSION_1_1) return; /* the backend needs 1.1; open says so */

    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = &id};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    fn->vkGetPhysicalDeviceProperties2(handle, &p2);
    uuid_text(id.deviceUUID, out->uuid);
    out->subgroup_size = sub.subgroupSize ? sub.subgroupSize : 1;
    out->subgroup_arith = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    out->subgroup_shuffle = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);

    /* 8-bit storage and float16 are core features only from 1.2; older devices are treated as lacking them. */
    int v12 = out->props.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceTimelineSemaphoreFeatures tls = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceHostQueryResetFeatures hqr = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
                                                  .pNext = &tls};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = v12 ? &hqr : NULL};
    VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                              .pNext = v12 ? &f16 : NULL};
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                .pNext = v12 ? &s8 : NULL};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    fn->vkGetPhysicalDeviceFeatures2(handle, &f2);
    out->storage16 = s16.storageBuffer16BitAccess == VK_TRUE;
    out->storage8 = v12 && s8.storageBuffer8BitAccess == VK_TRUE;
    out->float16 = v12 && f16.shaderFloat16 == VK_TRUE;
    out->host_query_reset = v12 && hqr.hostQueryReset == VK_TRUE;
    out->timeline = v12 && tls.timelineSemaphore == VK_TRUE;

    uint32_t n = 0;
    int coop2_ext = 0, pci_bus_info = 0, bf16_ext = 0, robust_ext = 0, sm_builtins = 0, amd_cores = 0;
    if (fn->vkEnumerateDeviceExtensionProperties(handle, NULL, &n, NULL) == VK_SUCCESS && n > 0) {
        VkExtensionProperties *ext = calloc(n, sizeof *ext);
        if (ext && fn->vkEnumerateDeviceExtensionProperties(handle, NULL, &n, ext) == VK_SUCCESS) {
            out->coop_khr = has_extension(ext, n, "VK_KHR_cooperative_matrix");
            out->coop_nv = has_extension(ext, n, "VK_NV_cooperative_matrix");
            coop2_ext = has_extension(ext, n, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
            out->exec_props = has_extension(ext, n, "VK_KHR_pipeline_executable_properties");
            out->push_descriptor = has_extension(ext, n, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
            robust_ext = has_extension(ext, n, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME);
            pci_bus_info = has_extension(ext, n, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
            bf16_ext = has_extension(ext, n, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
            sm_builtins = has_extension(ext, n, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
            amd_cores = has_extension(ext, n, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
        }
        free(ext);
    }
    if (robust_ext) {
        VkPhysicalDevicePipelineRobustnessFeaturesEXT pr = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
        VkPhysicalDeviceFeatures2 pf = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &pr};
        fn->vkGetPhysicalDeviceFeatures2(handle, &pf);
        out->pipeline_robustness = pr.pipelineRobustness == VK_TRUE;
    }
    if (pci_bus_info) {
        VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 pp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &pci};
        fn->vkGetPhysicalDeviceProperties2(handle, &pp);
        snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%04x:%02x:%02x.%x", pci.pciDomain & 0xffffu,
                 pci.pciBus & 0xffu, pci.pciDevice & 0x1fu, pci.pciFunction & 0x7u);
    }
    query_compute_units(fn, out, sm_builtins, amd_cores);
    if (out->coop_nv && v12 && out->float16 && out->storage16 && out->subgroup_size == 32) query_coop(fn, out);
    if (out->coop_khr && v12) query_coop_khr(fn, out, bf16_ext);
    if (out->coop_f16_khr && coop2_ext && out->props.apiVersion >= VK_API_VERSION_1_3) query_coop2(fn, out);
}

static uint64_t device_local_bytes(const VkPhysicalDeviceMemoryProperties *m) {
    uint64_t best = 0;
    for (uint32_t i = 0; i < m->memoryHeapCount; i++)
        if ((m->memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && m->memoryHeaps[i].size > best)
            best = m->memoryHeaps[i].size;
    return best;
}

static const char *vendor_name(uint32_t id) {
    switch (id) {
    case TRR_VK_VENDOR_NVIDIA: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";
    default: return NULL;
    }
}

/* Driver versions are vendor-encoded; NVIDIA packs 10.8.8.6 bits, the rest follow VK_MAKE_VERSION. */
static void driver_text(uint32_t vendor, uint32_t v, char *out, size_t cap) {
    if (vendor == 0x10DE)
        snprintf(out, cap, "%u.%u.%u", (v >> 22) & 0x3ff, (v >> 14) & 0xff, (v >> 6) & 0xff);
    else
        snprintf(out, cap, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

void trr_vk_phys_describe(const trr_vk_phys *p, int index, trr_device_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "vulkan");
    out->index = index;
    snprintf(out->spec, sizeof out->spec, "vulkan:%d", index);
    snprintf(out->name, sizeof out->name, "%.127s", p->props.deviceName);
    const char *vn = vendor_name(p->props.vendorID);
    if (vn)
        snprintf(out->vendor, sizeof out->vendor, "%s", vn);
    else
        snprintf(out->vendor, sizeof out->vendor, "0x%04x", p->props.vendorID);
    char drv[32];
    driver_text(p->props.vendorID, p->props.driverVersion, drv, sizeof drv);
    snprintf(out->driver, sizeof out->driver, "%s (Vulkan %u.%u.%u)", drv, VK_API_VERSION_MAJOR(p->props.apiVersion),
             VK_API_VERSION_MINOR(p->props.apiVersion), VK_API_VERSION_PATCH(p->props.apiVersion));
    out->is_gpu = p->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                  p->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    out->global_memory = device_local_bytes(&p->mem);
    out->shared_memory_per_block = p->props.limits.maxComputeSharedMemorySize;
    out->max_threads_per_block = (int)p->props.limits.maxComputeWorkGroupInvocations;
    out->subgroup_width = (int)p->subgroup_size;
    out->compute_units = (int)p->compute_units; /* 0: the driver does not say */
    out->native_f16 = p->float16;
    snprintf(out->uuid, sizeof out->uuid, "%s", p->uuid);
    snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%s", p->pci_bus_id);
    out->matrix_units = p->coop_f16 || p->coop_f16_khr; /* used by the f16 matmul (coop_khr, coop_nv, cm2) */
    /* compact, to fit the 160-byte field: the KHR shape the f16 matmul runs, and whether the bf16 matmul runs on
     * cooperative matrices (variant coop_khr, with its shape) or, and why, on the SIMT kernel; the bf16 kernel
     * needs GL_EXT_bfloat16, which only Slang's glslang of the ones the build can find knows
     * (backend_vulkan/CMakeLists.txt) */
    char khr[24], bf16[48];
    const trr_vk_coop_shape *fs = &p->coop_f16_shape, *bs = &p->coop_bf16_shape;
    if (p->coop_f16_khr) snprintf(khr, sizeof khr, "%ux%ux%u", fs->m, fs->n, fs->k);
    else snprintf(khr, sizeof khr, "%s", p->coop_khr ? "yes, no f16 shape" : "no");
    if (!p->coop_bf16_any) snprintf(bf16, sizeof bf16, "no");
    else if (!p->coop_bf16_khr) snprintf(bf16, sizeof bf16, "yes, no shape of the kernel (simt)");
    else if (TRR_VK_COOP_BF16) snprintf(bf16, sizeof bf16, "%ux%ux%u (coop_khr)", bs->m, bs->n, bs->k);
    else snprintf(bf16, sizeof bf16, "yes (simt: built without Slang's glslang)");
    snprintf(out->capabilities, sizeof out->capabilities,
             "storage 16/8-bit: %s/%s; shaderFloat16: %s; coop matrix KHR %s, NV %s, NV2 %s; bf16 coop matrix: %s",
             p->storage16 ? "yes" : "no", p->storage8 ? "yes" : "no", p->float16 ? "yes" : "no",
             khr, p->coop_nv ? "yes" : "no", p->coop2 ? "yes" : "no", bf16);
}
