/* Vulkan's batched submission (backend_vulkan/vk_submit.c): ops recorded into one command buffer and submitted
 * later must still run in order and see each other's writes, across the batch limit (128 ops); host reads,
 * writes and frees of buffers with work still recorded or in flight must wait for that work. Each case runs
 * twice: with push descriptors (lavapipe offers VK_KHR_push_descriptor) and with per-batch descriptor pools
 * (TRIREME_VK_PUSH_DESCRIPTORS=0). Results are compared bit for bit with the same f32 arithmetic on the host
 * (an f32 add is exact IEEE arithmetic on every device). Runs on vulkan:0 under TRIREME_VK_VALIDATION=1 as
 * every test does, so a missing barrier or a buffer destroyed while in use also fails through the layer. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_host_check.h"
#include "queued_ops_cases.h"

static trr_context *open_vulkan(int push) {
    if (push) unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    else setenv("TRIREME_VK_PUSH_DESCRIPTORS", "0", 1);
    return open_device_or_skip("vulkan:0", "vulkan");
}

Test(vulkan_batch, chained_adds_push_descriptors) { queued_chained_adds(open_vulkan(1)); }
Test(vulkan_batch, chained_adds_descriptor_pools) { queued_chained_adds(open_vulkan(0)); }
Test(vulkan_batch, mixed_chain_push_descriptors) { queued_mixed_chain(open_vulkan(1)); }
Test(vulkan_batch, mixed_chain_descriptor_pools) { queued_mixed_chain(open_vulkan(0)); }
Test(vulkan_batch, pending_host_access_push_descriptors) { queued_pending_host_access(open_vulkan(1)); }
Test(vulkan_batch, pending_host_access_descriptor_pools) { queued_pending_host_access(open_vulkan(0)); }
