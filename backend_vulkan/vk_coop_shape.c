/* The cooperative-matrix shape of the KHR matmul kernel (vk_coop_shape.h). */
#include "vk_coop_shape.h"

#include <string.h>

static int kernel_takes(const VkCooperativeMatrixPropertiesKHR *p, VkComponentTypeKHR ab) {
    const uint32_t dims[3] = {p->MSize, p->NSize, p->KSize};
    for (int i = 0; i < 3; i++)
        if (dims[i] != 8 && dims[i] != 16 && dims[i] != 32) return 0;
    return p->AType == ab && p->BType == ab && p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
           p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR && p->scope == VK_SCOPE_SUBGROUP_KHR &&
           !p->saturatingAccumulation;
}

/* Larger is better: 16x16x16 above all, then M·N·K, then M·N. */
static uint64_t score(const VkCooperativeMatrixPropertiesKHR *p) {
    const int tuned = p->MSize == 16 && p->NSize == 16 && p->KSize == 16;
    const uint64_t mn = (uint64_t)p->MSize * p->NSize;
    return ((uint64_t)tuned << 40) | ((mn * p->KSize) << 12) | mn;
}

int trr_vk_coop_pick_shape(const VkCooperativeMatrixPropertiesKHR *props, uint32_t n, VkComponentTypeKHR ab,
                           trr_vk_coop_shape *out) {
    memset(out, 0, sizeof *out);
    uint64_t best = 0;
    for (uint32_t i = 0; props && i < n; i++) {
        if (!kernel_takes(&props[i], ab)) continue;
        const uint64_t s = score(&props[i]);
        if (s <= best) continue;
        best = s;
        out->m = props[i].MSize, out->n = props[i].NSize, out->k = props[i].KSize;
    }
    return best != 0;
}
