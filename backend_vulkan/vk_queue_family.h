/* Which queue family the Vulkan backend submits to, chosen among the families the driver lists. */
#ifndef TRR_VK_QUEUE_FAMILY_H
#define TRR_VK_QUEUE_FAMILY_H

#include <vulkan/vulkan.h>

#include <stdint.h>

/* The index of a family with compute, preferring one that can time its work (timestampValidBits > 0), then one
 * without graphics: NVIDIA's compute-only family submits faster per synchronized op than the graphics one.
 * Among equals the first listed. -1 when
 * no family has compute. */
int trr_vk_pick_queue_family(const VkQueueFamilyProperties *families, uint32_t count);

#endif
