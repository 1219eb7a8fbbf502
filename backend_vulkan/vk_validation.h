/* The Vulkan backend's validation mode on an open context, for tests (no Vulkan headers needed). */
#ifndef TRR_VK_VALIDATION_H
#define TRR_VK_VALIDATION_H

#include "backend.h"

/* -1 when ctx is not a Vulkan context; else 0 (TRIREME_VK_VALIDATION off) or 1 (the validation layer), with
 * *out_gpu_av 1 under TRIREME_VK_VALIDATION=gpu-av and *out_push_descriptors 1 when operands are pushed
 * (VK_KHR_push_descriptor) rather than written to descriptor sets. Either out pointer may be NULL. */
int trr_vk_validation_state(trr_context *ctx, int *out_gpu_av, int *out_push_descriptors);

#endif
