/* The Vulkan backend's queue family choice (backend_vulkan/vk_queue_family.h) on the family lists of the kinds
 * NVIDIA, AMD, Intel and lavapipe drivers report, and on lists where the compute-only family cannot time its work
 * or no family computes. No device is needed. */
#include "../backend_vulkan/vk_queue_family.h"

#include <criterion/criterion.h>

#define G VK_QUEUE_GRAPHICS_BIT
#define C VK_QUEUE_COMPUTE_BIT
#define T VK_QUEUE_TRANSFER_BIT
#define S VK_QUEUE_SPARSE_BINDING_BIT

static VkQueueFamilyProperties family(VkQueueFlags flags, uint32_t timestamp_bits) {
    VkQueueFamilyProperties f = {.queueFlags = flags, .queueCount = 1, .timestampValidBits = timestamp_bits};
    return f;
}

Test(vulkan_queue_family, nvidia_takes_the_compute_only_family) {
    /* graphics, transfer only, compute only, video (a driver-specific flag), another compute only */
    const VkQueueFamilyProperties q[] = {family(G | C | T | S, 64), family(T | S, 64), family(C | T | S, 64),
                                         family(0x20, 64), family(C | T | S, 64)};
    cr_expect_eq(trr_vk_pick_queue_family(q, 5), 2);
}

Test(vulkan_queue_family, amd_and_intel_take_the_compute_only_family) {
    const VkQueueFamilyProperties amd[] = {family(G | C | T | S, 64), family(C | T | S, 64), family(T | S, 64)};
    cr_expect_eq(trr_vk_pick_queue_family(amd, 3), 1);
    const VkQueueFamilyProperties intel[] = {family(G | C | T, 36), family(T, 36), family(C | T, 36)};
    cr_expect_eq(trr_vk_pick_queue_family(intel, 3), 2);
}

Test(vulkan_queue_family, a_single_family_is_taken) {
    const VkQueueFamilyProperties lavapipe[] = {family(G | C | T | S, 64)};
    cr_expect_eq(trr_vk_pick_queue_family(lavapipe, 1), 0);
}

Test(vulkan_queue_family, timestamps_come_before_leaving_graphics_out) {
    /* the compute-only family cannot time its work: the graphics one, which can, is kept */
    const VkQueueFamilyProperties q[] = {family(G | C | T, 64), family(C | T, 0)};
    cr_expect_eq(trr_vk_pick_queue_family(q, 2), 0);
    /* and a timed compute-only family listed after an untimed graphics one wins on both counts */
    const VkQueueFamilyProperties r[] = {family(G | C | T, 0), family(C | T, 0), family(C | T, 64)};
    cr_expect_eq(trr_vk_pick_queue_family(r, 3), 2);
    /* nothing timed: still the compute-only family */
    const VkQueueFamilyProperties u[] = {family(G | C | T, 0), family(C | T, 0)};
    cr_expect_eq(trr_vk_pick_queue_family(u, 2), 1);
}

Test(vulkan_queue_family, none_computes) {
    const VkQueueFamilyProperties q[] = {family(G | T, 64), family(T, 64)};
    cr_expect_eq(trr_vk_pick_queue_family(q, 2), -1);
    cr_expect_eq(trr_vk_pick_queue_family(q, 0), -1);
}
