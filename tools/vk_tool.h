/* What the Vulkan tools share: the library's VkPhysicalDevice, VkDevice and VkQueue through the public native
 * handles (trr_context_native), the queue's family found again by the backend's rule, and the Vulkan entry points
 * the tool calls, taken from the same loader the library opens (libvulkan.so.1). No backend header: a tool here
 * records its own command buffers on the library's device and queue, as another library sharing them would.
 * A tool defines TOOL_NAME, includes tool_util.h, lists the device-level entry points it calls in
 * VK_TOOL_DEVICE_FNS(X) and then includes this. */
#ifndef TRR_VK_TOOL_H
#define TRR_VK_TOOL_H

#include "tool_util.h"

#include <dlfcn.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define VK_TOOL_INSTANCE_FNS(X)                                                                                       \
    X(vkGetDeviceProcAddr)                                                                                             \
    X(vkGetPhysicalDeviceProperties)                                                                                   \
    X(vkGetPhysicalDeviceFeatures2)                                                                                    \
    X(vkGetPhysicalDeviceMemoryProperties)                                                                             \
    X(vkGetPhysicalDeviceQueueFamilyProperties)

typedef struct vk_tool {
    trr_context *ctx;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    uint64_t timestamp_mask; /* the queue family's valid timestamp bits */
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
#define VK_TOOL_FIELD(name) PFN_##name name;
    VK_TOOL_INSTANCE_FNS(VK_TOOL_FIELD)
    VK_TOOL_DEVICE_FNS(VK_TOOL_FIELD)
#undef VK_TOOL_FIELD
} vk_tool;

static int vk_ok(VkResult r, const char *what) {
    if (r == VK_SUCCESS) return 0;
    fprintf(stderr, "%s: %s: VkResult %d\n", TOOL_NAME, what, (int)r);
    return 1;
}

/* The entry point name: from vkGetDeviceProcAddr where device is given and knows it, else the loader's export. */
static int vk_tool_sym(void *lib, VkDevice device, PFN_vkGetDeviceProcAddr gdpa, const char *name, void *out_fn) {
    PFN_vkVoidFunction f = device && gdpa ? gdpa(device, name) : NULL;
    if (f) {
        memcpy(out_fn, &f, sizeof f);
        return 0;
    }
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "%s: the Vulkan loader has no %s\n", TOOL_NAME, name);
        return 1;
    }
    memcpy(out_fn, &sym, sizeof sym);
    return 0;
}

/* The family the backend submits to (backend_vulkan's rule): one with compute, preferring one that can time its
 * work, then one without graphics; among equals the first listed. -1 when none has compute. */
static int vk_tool_pick_family(const VkQueueFamilyProperties *f, uint32_t n) {
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!(f[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        int score = (f[i].timestampValidBits > 0) * 2 + !(f[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
        if (score > best_score) best = (int)i, best_score = score;
    }
    return best;
}

/* A context on device (a Vulkan one) and its handles; 0 on success, else says why and returns 1. */
static int vk_tool_open(vk_tool *t, const char *device) {
    memset(t, 0, sizeof *t);
    if (tool_check(NULL, trr_context_create(device, &t->ctx), "context")) return 1;
    trr_native nat;
    if (tool_check(t->ctx, trr_context_native(t->ctx, &nat), "native") || strcmp(nat.backend, "vulkan") != 0) {
        fprintf(stderr, "%s: %s is not a Vulkan device\n", TOOL_NAME, device);
        return 1;
    }
    t->phys = (VkPhysicalDevice)nat.device;
    t->device = (VkDevice)nat.context;
    t->queue = (VkQueue)nat.queue;
    /* the library has opened the loader already: this finds the same one */
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        fprintf(stderr, "%s: the Vulkan loader is not loaded: %s\n", TOOL_NAME, dlerror());
        return 1;
    }
#define VK_TOOL_LOAD(name) || vk_tool_sym(lib, VK_NULL_HANDLE, NULL, #name, &t->name)
    if (0 VK_TOOL_INSTANCE_FNS(VK_TOOL_LOAD)) return 1;
#undef VK_TOOL_LOAD
#define VK_TOOL_LOAD(name) || vk_tool_sym(lib, t->device, t->vkGetDeviceProcAddr, #name, &t->name)
    if (0 VK_TOOL_DEVICE_FNS(VK_TOOL_LOAD)) return 1;
#undef VK_TOOL_LOAD
    t->vkGetPhysicalDeviceProperties(t->phys, &t->props);
    t->vkGetPhysicalDeviceMemoryProperties(t->phys, &t->mem);
    VkQueueFamilyProperties fam[16];
    uint32_t n = 16;
    t->vkGetPhysicalDeviceQueueFamilyProperties(t->phys, &n, fam);
    int f = vk_tool_pick_family(fam, n);
    if (f < 0) {
        fprintf(stderr, "%s: no queue family with compute\n", TOOL_NAME);
        return 1;
    }
    t->queue_family = (uint32_t)f;
    uint32_t bits = fam[f].timestampValidBits;
    t->timestamp_mask = bits >= 64 ? ~0ull : bits ? (1ull << bits) - 1 : 0;
    return 0;
}

#endif
