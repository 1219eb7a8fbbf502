/* The VK_KHR_cooperative_matrix shape the f16 and bf16 matmul kernels run on a device, picked from the list the
 * driver reports (backend_vulkan/vk_coop_shape.h): lists of the kinds NVIDIA, AMD RDNA3 and Intel Arc drivers
 * report, and shapes, types and scopes the kernel cannot take. No device is needed: the picker is what decides
 * whether a KHR-only GPU gets the cooperative kernel at all. */
#include "../backend_vulkan/vk_coop_shape.h"

#include <criterion/criterion.h>

#define F16 VK_COMPONENT_TYPE_FLOAT16_KHR
#define F32 VK_COMPONENT_TYPE_FLOAT32_KHR
#define BF16 VK_COMPONENT_TYPE_BFLOAT16_KHR
#define S8 ((VkComponentTypeKHR)3)  /* VK_COMPONENT_TYPE_SINT8_KHR */
#define S32 ((VkComponentTypeKHR)6) /* VK_COMPONENT_TYPE_SINT32_KHR */
#define WORKGROUP ((VkScopeKHR)2)   /* VK_SCOPE_WORKGROUP_KHR */

static VkCooperativeMatrixPropertiesKHR shape(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeKHR ab,
                                              VkComponentTypeKHR cr) {
    VkCooperativeMatrixPropertiesKHR p = {.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR,
                                          .MSize = m, .NSize = n, .KSize = k, .AType = ab, .BType = ab,
                                          .CType = cr, .ResultType = cr, .scope = VK_SCOPE_SUBGROUP_KHR};
    return p;
}

static trr_vk_coop_shape pick(const VkCooperativeMatrixPropertiesKHR *p, uint32_t n, VkComponentTypeKHR ab) {
    trr_vk_coop_shape s = {99, 99, 99};
    const int found = trr_vk_coop_pick_shape(p, n, ab, &s);
    cr_expect_eq(found, s.m != 0, "the return value and the shape disagree");
    return s;
}

#define EXPECT_SHAPE(s, M, N, K)                                                                               \
    cr_expect((s).m == (M) && (s).n == (N) && (s).k == (K), "picked %ux%ux%u, want %ux%ux%u", (s).m, (s).n,    \
              (s).k, (unsigned)(M), (unsigned)(N), (unsigned)(K))

Test(coop_shape, nvidia_kind_list_keeps_16x16x16) {
    const VkCooperativeMatrixPropertiesKHR list[] = {
        shape(16, 8, 16, F16, F16), shape(16, 8, 8, F16, F16),   shape(16, 16, 16, F16, F16),
        shape(16, 8, 16, F16, F32), shape(16, 8, 8, F16, F32),   shape(16, 16, 16, F16, F32),
        shape(16, 8, 32, S8, S32),  shape(16, 16, 32, S8, S32),  shape(16, 16, 16, BF16, F32),
        shape(16, 8, 16, BF16, F32)};
    EXPECT_SHAPE(pick(list, 10, F16), 16, 16, 16);
    EXPECT_SHAPE(pick(list, 10, BF16), 16, 16, 16);
}

Test(coop_shape, amd_kind_list) {
    const VkCooperativeMatrixPropertiesKHR list[] = {shape(16, 16, 16, F16, F16), shape(16, 16, 16, F16, F32),
                                                     shape(16, 16, 16, BF16, BF16), shape(16, 16, 16, S8, S32)};
    EXPECT_SHAPE(pick(list, 4, F16), 16, 16, 16);
    /* bf16 with bf16 accumulation only: the kernel accumulates in f32 */
    EXPECT_SHAPE(pick(list, 4, BF16), 0, 0, 0);
}

Test(coop_shape, intel_kind_list_takes_the_most_work_per_instruction) {
    const VkCooperativeMatrixPropertiesKHR list[] = {shape(8, 8, 16, F16, F32), shape(8, 16, 16, F16, F32),
                                                     shape(8, 8, 32, S8, S32), shape(8, 16, 16, BF16, F32)};
    EXPECT_SHAPE(pick(list, 4, F16), 8, 16, 16);
    EXPECT_SHAPE(pick(list, 4, BF16), 8, 16, 16);
}

Test(coop_shape, equal_work_prefers_the_larger_output_tile) {
    const VkCooperativeMatrixPropertiesKHR list[] = {shape(16, 8, 32, F16, F32), shape(32, 16, 8, F16, F32)};
    EXPECT_SHAPE(pick(list, 2, F16), 32, 16, 8);
}

Test(coop_shape, shapes_the_kernel_cannot_take_are_passed_over) {
    VkCooperativeMatrixPropertiesKHR list[] = {
        shape(4, 16, 16, F16, F32),  /* M not a whole 16-byte word of halves */
        shape(16, 16, 12, F16, F32), /* K likewise */
        shape(64, 64, 16, F16, F32), /* 64: not 8, 16 or 32 */
        shape(16, 16, 16, F16, F16), /* f16 accumulation */
        shape(16, 16, 16, F16, F32), /* saturating (below) */
        shape(16, 16, 16, F16, F32), /* workgroup scope (below) */
        shape(0, 16, 16, F16, F32),
        shape(24, 8, 8, F16, F32), /* 24: not 8, 16 or 32 */
    };
    list[4].saturatingAccumulation = VK_TRUE;
    list[5].scope = WORKGROUP;
    const uint32_t n = sizeof list / sizeof list[0];
    EXPECT_SHAPE(pick(list, n, F16), 0, 0, 0);
    list[n - 1] = shape(8, 8, 8, F16, F32);
    EXPECT_SHAPE(pick(list, n, F16), 8, 8, 8);
    /* mixed A and B types */
    VkCooperativeMatrixPropertiesKHR mixed = shape(16, 16, 16, F16, F32);
    mixed.BType = BF16;
    EXPECT_SHAPE(pick(&mixed, 1, F16), 0, 0, 0);
    EXPECT_SHAPE(pick(NULL, 0, F16), 0, 0, 0);
}
