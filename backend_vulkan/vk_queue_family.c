/* The queue family choice (vk_queue_family.h). */
#include "vk_queue_family.h"

int trr_vk_pick_queue_family(const VkQueueFamilyProperties *q, uint32_t count) {
    int best = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (best < 0) {
            best = (int)i;
            continue;
        }
        const int timed = q[i].timestampValidBits > 0, best_timed = q[best].timestampValidBits > 0;
        const int graphics = (q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0;
        const int best_graphics = (q[best].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0;
        if ((timed && !best_timed) || (timed == best_timed && !graphics && best_graphics)) best = (int)i;
    }
    return best;
}
