/* The Vulkan loader, opened at run time so the library never links it, and the process-wide view of the
 * devices used by probe and device_info (one instance, created once, kept for the life of the process). */
#include "vk_internal.h"

#include "dynlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *trr_vk_result_name(VkResult r) {
    switch (r) {
#define NAME(x) case x: return #x;
        NAME(VK_SUCCESS) NAME(VK_NOT_READY) NAME(VK_TIMEOUT) NAME(VK_EVENT_SET) NAME(VK_EVENT_RESET)
        NAME(VK_INCOMPLETE) NAME(VK_ERROR_OUT_OF_HOST_MEMORY) NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(VK_ERROR_INITIALIZATION_FAILED) NAME(VK_ERROR_DEVICE_LOST) NAME(VK_ERROR_MEMORY_MAP_FAILED)
        NAME(VK_ERROR_LAYER_NOT_PRESENT) NAME(VK_ERROR_EXTENSION_NOT_PRESENT) NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        NAME(VK_ERROR_INCOMPATIBLE_DRIVER) NAME(VK_ERROR_TOO_MANY_OBJECTS) NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        NAME(VK_ERROR_FRAGMENTED_POOL) NAME(VK_ERROR_UNKNOWN) NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE) NAME(VK_ERROR_FRAGMENTATION)
        NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) NAME(VK_PIPELINE_COMPILE_REQUIRED)
        NAME(VK_ERROR_VALIDATION_FAILED_EXT) NAME(VK_ERROR_INVALID_SHADER_NV)
#undef NAME
    default: return "VkResult(unknown)";
    }
}

trr_status trr_vk_fail(trr_context *ctx, const char *fn, VkResult r) {
    trr_status s = TRR_ERR_DEVICE;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) s = TRR_ERR_OUT_OF_MEMORY;
    return trr_error(ctx, s, "%s: %s (%d)", fn, trr_vk_result_name(r), (int)r);
}

static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_lib;
static PFN_vkGetInstanceProcAddr g_gipa;

trr_status trr_vk_load(char *reason, size_t cap, PFN_vkGetInstanceProcAddr *out_gipa) {
    pthread_mutex_lock(&g_load_lock);
    if (!g_lib) {
        static const char *const names[] = {"libvulkan.so.1", "libvulkan.so", NULL};
        void *lib = trr_dynlib_open(names, reason, cap);
        if (lib) {
            void *sym = trr_dynlib_sym(lib, "vkGetInstanceProcAddr", reason, cap);
            /* ISO C has no object-to-function pointer cast; POSIX guarantees the representations agree. */
            if (sym) memcpy(&g_gipa, &sym, sizeof g_gipa);
            if (g_gipa) g_lib = lib; /* kept open for the life of the process: pointers into it are handed out */
        }
    }
    PFN_vkGetInstanceProcAddr gipa = g_gipa;
    pthread_mutex_unlock(&g_load_lock);
    if (!gipa) return TRR_ERR_UNAVAILABLE;
    *out_gipa = gipa;
    return TRR_OK;
}

trr_status trr_vk_load_instance_fns(trr_vk_fns *fn, VkInstance instance, char *reason, size_t cap) {
#define LOAD(name)                                                                                             \
    fn->name = (PFN_##name)fn->vkGetInstanceProcAddr(instance, #name);                                        \
    if (!fn->name) {                                                                                           \
        snprintf(reason, cap, "the Vulkan loader lacks %s", #name);                                            \
        return TRR_ERR_UNAVAILABLE;                                                                            \
    }
#define LOAD_OPTIONAL(name) fn->name = (PFN_##name)fn->vkGetInstanceProcAddr(instance, #name);
    if (instance == VK_NULL_HANDLE) {
        TRR_VK_GLOBAL_FNS(LOAD)
    } else {
        TRR_VK_INSTANCE_FNS(LOAD)
        TRR_VK_OPTIONAL_INSTANCE_FNS(LOAD_OPTIONAL)
    }
#undef LOAD
#undef LOAD_OPTIONAL
    return TRR_OK;
}

/* ---- the probe's instance ---- */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_probed;
static trr_status g_probe_status;
static char g_reason[256];
static trr_vk_fns g_fn;
static VkInstance g_instance;
static trr_vk_phys *g_phys;
static int g_count;

static trr_status probe_locked(void) {
    char *reason = g_reason;
    size_t cap = sizeof g_reason;
    TRR_TRY(trr_vk_load(reason, cap, &g_fn.vkGetInstanceProcAddr));
    TRR_TRY(trr_vk_load_instance_fns(&g_fn, VK_NULL_HANDLE, reason, cap));
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "trireme-probe",
                             .pEngineName = "trireme",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = g_fn.vkCreateInstance(&ci, NULL, &g_instance);
    if (r != VK_SUCCESS) {
        snprintf(reason, cap, "vkCreateInstance: %s%s", trr_vk_result_name(r),
                 r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver accepted the instance; VK_LOADER_DEBUG=error "
                                                    "shows why)"
                                                  : "");
        return TRR_ERR_UNAVAILABLE;
    }
    TRR_TRY(trr_vk_load_instance_fns(&g_fn, g_instance, reason, cap));
    uint32_t n = 0;
    r = g_fn.vkEnumeratePhysicalDevices(g_instance, &n, NULL);
    if (r != VK_SUCCESS || n == 0) {
        snprintf(reason, cap, "vkEnumeratePhysicalDevices: %s",
                 r != VK_SUCCESS ? trr_vk_result_name(r) : "no physical device (no Vulkan driver installed?)");
        return TRR_ERR_UNAVAILABLE;
    }
    VkPhysicalDevice *handles = calloc(n, sizeof *handles);
    g_phys = calloc(n, sizeof *g_phys);
    if (!handles || !g_phys) {
        free(handles);
        snprintf(reason, cap, "out of host memory");
        return TRR_ERR_UNAVAILABLE;
    }
    r = g_fn.vkEnumeratePhysicalDevices(g_instance, &n, handles);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(handles);
        snprintf(reason, cap, "vkEnumeratePhysicalDevices: %s", trr_vk_result_name(r));
        return TRR_ERR_UNAVAILABLE;
    }
    for (uint32_t i = 0; i < n; i++) trr_vk_phys_query(&g_fn, handles[i], &g_phys[i]);
    free(handles);
    g_count = (int)n;
    return TRR_OK;
}

trr_status trr_vk_probe(int *out_count, char *reason, size_t cap) {
    pthread_mutex_lock(&g_lock);
    if (!g_probed) {
        g_probe_status = probe_locked();
        g_probed = 1;
    }
    trr_status s = g_probe_status;
    int count = g_count;
    if (s != TRR_OK && reason && cap) snprintf(reason, cap, "%s", g_reason);
    pthread_mutex_unlock(&g_lock);
    if (s == TRR_OK) *out_count = count;
    return s;
}

trr_status trr_vk_device_info(int index, trr_device_info *out) {
    int count = 0;
    char reason[256];
    trr_status s = trr_vk_probe(&count, reason, sizeof reason);
    if (s != TRR_OK) return trr_error(NULL, s, "vulkan: %s", reason);
    if (index < 0 || index >= count)
        return trr_error(NULL, TRR_ERR_NO_DEVICE, "vulkan:%d: there are %d Vulkan devices", index, count);
    trr_vk_phys_describe(&g_phys[index], index, out);
    return TRR_OK;
}
