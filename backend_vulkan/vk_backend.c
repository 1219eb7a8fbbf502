/* The Vulkan backend's entry in the registry (core/backend.h documents each slot). */
#include "vk_internal.h"

static trr_status vk_probe(int *out_count, char *reason, size_t cap) {
    return trr_vk_probe(out_count, reason, cap);
}

static trr_status vk_native_context(trr_context *ctx, trr_native *out) {
    const trr_vk_device *d = trr_vk_dev(ctx);
    out->device = d->phys.handle;
    out->context = d->device;
    out->queue = d->queue;
    return TRR_OK;
}

static trr_status vk_native_buffer(trr_context *ctx, void *mem, uint64_t *out_handle) {
    (void)ctx;
    *out_handle = (uint64_t)((const trr_vk_buffer *)mem)->buf; /* a pointer or a uint64_t, per platform */
    return TRR_OK;
}

const trr_backend trr_backend_vulkan = {
    .name = "vulkan",
    .api_version = TRR_BACKEND_API_VERSION,
    .probe = vk_probe,
    .device_info = trr_vk_device_info,
    .open = trr_vk_open,
    .close = trr_vk_close,
    .alloc = trr_vk_alloc,
    .free = trr_vk_free,
    .write = trr_vk_write,
    .read = trr_vk_read,
    .copy = trr_vk_copy,
    .fill = trr_vk_fill,
    .synchronize = trr_vk_synchronize,
    .timer_start = trr_vk_timer_start,
    .timer_stop = trr_vk_timer_stop,
    .supports = trr_vk_supports,
    .choose_config = trr_vk_choose_config,
    .check_config = trr_vk_check_config,
    .run = trr_vk_run,
    .native_context = vk_native_context,
    .native_buffer = vk_native_buffer,
    /* memory allocated elsewhere */
    .wrap = trr_vk_wrap,
    .unwrap = trr_vk_unwrap,
};
