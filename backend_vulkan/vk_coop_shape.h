/* Which VK_KHR_cooperative_matrix shape kernels/vulkan/matmul_coop.comp runs on a device: chosen among the
 * shapes the driver lists, not assumed (NVIDIA lists 16x16x16 f16 -> f32 among others, AMD RDNA3 16x16x16 on
 * 32- or 64-wide subgroups, Intel Arc 8x8x16 or 8x16x16 on 8- or 16-wide ones). */
#ifndef TRR_VK_COOP_SHAPE_H
#define TRR_VK_COOP_SHAPE_H

#include "vk_coop_khr.h"

#include <stdint.h>

typedef struct trr_vk_coop_shape {
    uint32_t m, n, k; /* 0 when the device lists none the kernel takes */
} trr_vk_coop_shape;

/* The shape for A and B of component type ab with f32 accumulation and result at subgroup scope, without
 * saturation. The kernel stages operands as 16-byte words of 8 halves and its epilogue scratch as 4-float
 * words, and its default slices are 16 or 32 deep, so M, N and K must each be 8, 16 or 32.
 * Preferred: 16x16x16 (the shape the kernel's tiles were tuned on), then the most multiply-adds per
 * instruction (M·N·K), then the larger output tile (M·N). Returns 1 with *out set, else 0 and *out zeroed. */
/* 16-byte words matmul_coop.comp leaves unused ahead of its tiles (its SOFF): with the 16 bytes NVIDIA's
 * drivers keep at the start of a workgroup's shared memory (seen in OpenCL), 7 put the tiles on a 128-byte line.
 * On NVIDIA H200 any skip of one word or more measured alike and ahead of none, so what helps is not the
 * 128-byte line itself (the padded rows keep the matrix loads free of bank conflicts at any base); 7 it is, as
 * measured (the tuning data). */
#define TRR_VK_COOP_SMEM_SKIP 7

int trr_vk_coop_pick_shape(const VkCooperativeMatrixPropertiesKHR *props, uint32_t n, VkComponentTypeKHR ab,
                           trr_vk_coop_shape *out);

#endif
