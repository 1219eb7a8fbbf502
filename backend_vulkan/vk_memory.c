/* Buffers: device memory, host transfers (a direct mapping on unified-memory devices, a staging buffer
 * elsewhere), device-side copies and fills. Host transfers are synchronous: through a mapping they wait for the
 * queued work that uses the buffer; through staging, for the copy, queued after everything before it. */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

#define STAGING_BYTES ((size_t)32 << 20)

static int find_type(const trr_vk_device *d, uint32_t bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < d->phys.mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (d->phys.mem.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

/* mem_type here is a wish: 0 device memory (mapped when direct_map), 1 staging. */
trr_status trr_vk_create_buffer(trr_context *ctx, trr_vk_device *d, size_t bytes, uint32_t mem_type,
                                VkBuffer *out_buf, VkDeviceMemory *out_mem) {
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkBuffer buf;
    TRR_VK_CHECK(ctx, d->fn.vkCreateBuffer(d->device, &bci, NULL, &buf), "vkCreateBuffer");
    VkMemoryRequirements req;
    d->fn.vkGetBufferMemoryRequirements(d->device, buf, &req);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type;
    if (mem_type == 1) {
        type = find_type(d, req.memoryTypeBits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (type < 0) type = find_type(d, req.memoryTypeBits, host);
    } else if (d->direct_map) {
        type = find_type(d, req.memoryTypeBits, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    } else {
        type = find_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (type < 0) type = find_type(d, req.memoryTypeBits, 0);
    }
    if (type < 0) {
        d->fn.vkDestroyBuffer(d->device, buf, NULL);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: no suitable memory type for a %s buffer",
                         mem_type == 1 ? "staging" : "device");
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type};
    VkDeviceMemory mem;
    VkResult r = d->fn.vkAllocateMemory(d->device, &ai, NULL, &mem);
    if (r == VK_SUCCESS) r = d->fn.vkBindBufferMemory(d->device, buf, mem, 0);
    else mem = VK_NULL_HANDLE;
    if (r != VK_SUCCESS) {
        if (mem) d->fn.vkFreeMemory(d->device, mem, NULL);
        d->fn.vkDestroyBuffer(d->device, buf, NULL);
        return trr_vk_fail(ctx, mem ? "vkBindBufferMemory" : "vkAllocateMemory", r);
    }
    *out_buf = buf;
    *out_mem = mem;
    return TRR_OK;
}

trr_status trr_vk_alloc(trr_context *ctx, size_t bytes, void **out_mem) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *b = calloc(1, sizeof *b);
    if (!b) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    /* Rounded up to whole words so fills and word-wide kernel accesses never reach past the end. */
    size_t size = bytes ? (bytes + 3) & ~(size_t)3 : 4;
    trr_status s = trr_vk_create_buffer(ctx, d, size, 0, &b->buf, &b->mem);
    if (s == TRR_OK && d->direct_map) {
        VkResult r = d->fn.vkMapMemory(d->device, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
        if (r != VK_SUCCESS) {
            d->fn.vkDestroyBuffer(d->device, b->buf, NULL);
            d->fn.vkFreeMemory(d->device, b->mem, NULL);
            s = trr_vk_fail(ctx, "vkMapMemory", r);
        }
    }
    if (s != TRR_OK) {
        free(b);
        return s;
    }
    b->size = bytes;
    *out_mem = b;
    return TRR_OK;
}

trr_status trr_vk_scratch_get(trr_context *ctx, trr_vk_scratch *s, size_t bytes, trr_vk_buffer **out) {
    if (s->buf && s->bytes >= bytes) {
        *out = s->buf;
        return TRR_OK;
    }
    trr_vk_scratch_free(trr_vk_dev(ctx), s); /* waits for the work that uses it */
    void *mem = NULL;
    TRR_TRY(trr_vk_alloc(ctx, bytes, &mem));
    s->buf = mem;
    s->bytes = bytes;
    *out = s->buf;
    return TRR_OK;
}

void trr_vk_scratch_free(trr_vk_device *d, trr_vk_scratch *s) {
    if (s->buf) trr_vk_free(d, s->buf);
    s->buf = NULL;
    s->bytes = 0;
}

/* A wrapped VkBuffer has no mapping of ours (mem and map stay null), so host transfers go through staging.
 * Vulkan handles cannot be checked against a device, so the caller's promise (trireme.h) is taken as given;
 * the validation layer catches a broken one. Word-wide kernel accesses need a whole number of words. */
trr_status trr_vk_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem) {
    if (bytes % 4 != 0)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: a wrapped VkBuffer must be a multiple of 4 bytes, not %zu",
                         bytes);
    trr_vk_buffer *b = calloc(1, sizeof *b);
    if (!b) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    b->buf = (VkBuffer)(uintptr_t)native;
    b->size = bytes;
    *out_mem = b;
    return TRR_OK;
}

/* No context to report a failed wait into: the buffer is forgotten or freed all the same, as the caller asked
 * (a failed wait means a lost device, where nothing runs any more). */
void trr_vk_unwrap(void *dev, void *mem) {
    const char *what;
    (void)trr_vk_wait_buffer_quiet(dev, mem, &what); /* the owner may destroy the VkBuffer once we forget it */
    free(mem);
}

void trr_vk_free(void *dev, void *mem) {
    trr_vk_device *d = dev;
    trr_vk_buffer *b = mem;
    if (!b) return;
    /* The buffer may still be in use by queued work; destroying it then is undefined, so wait. */
    const char *what;
    (void)trr_vk_wait_buffer_quiet(d, b, &what);
    if (b->map) d->fn.vkUnmapMemory(d->device, b->mem);
    d->fn.vkDestroyBuffer(d->device, b->buf, NULL);
    d->fn.vkFreeMemory(d->device, b->mem, NULL);
    free(b);
}

static trr_status ensure_staging(trr_context *ctx, trr_vk_device *d) {
    if (d->staging) return TRR_OK;
    TRR_TRY(trr_vk_create_buffer(ctx, d, STAGING_BYTES, 1, &d->staging, &d->staging_mem));
    TRR_VK_CHECK(ctx, d->fn.vkMapMemory(d->device, d->staging_mem, 0, VK_WHOLE_SIZE, 0, &d->staging_map),
                 "vkMapMemory");
    d->staging_size = STAGING_BYTES;
    return TRR_OK;
}

/* A copy between b and the staging buffer (to_b: into b), queued after everything before it and waited for. */
static trr_status staging_copy(trr_context *ctx, trr_vk_buffer *b, size_t offset, size_t bytes, int to_b) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    trr_vk_use(d, b);
    VkBufferCopy region = {.srcOffset = to_b ? 0 : offset, .dstOffset = to_b ? offset : 0, .size = bytes};
    d->fn.vkCmdCopyBuffer(cmd, to_b ? d->staging : b->buf, to_b ? b->buf : d->staging, 1, &region);
    TRR_TRY(trr_vk_end(ctx));
    return trr_vk_wait_buffer(ctx, b);
}

trr_status trr_vk_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *b = mem;
    if (b->map) {
        TRR_TRY(trr_vk_wait_buffer(ctx, b)); /* queued work may still read or write these bytes */
        memcpy((char *)b->map + offset, src, bytes);
        return TRR_OK;
    }
    TRR_TRY(ensure_staging(ctx, d)); /* idle: every staging copy is waited for */
    for (size_t done = 0; done < bytes; done += d->staging_size) {
        size_t n = bytes - done < d->staging_size ? bytes - done : d->staging_size;
        memcpy(d->staging_map, (const char *)src + done, n);
        TRR_TRY(staging_copy(ctx, b, offset + done, n, 1));
    }
    return TRR_OK;
}

trr_status trr_vk_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *b = mem;
    if (b->map) {
        TRR_TRY(trr_vk_wait_buffer(ctx, b));
        memcpy(dst, (const char *)b->map + offset, bytes);
        return TRR_OK;
    }
    TRR_TRY(ensure_staging(ctx, d));
    for (size_t done = 0; done < bytes; done += d->staging_size) {
        size_t n = bytes - done < d->staging_size ? bytes - done : d->staging_size;
        TRR_TRY(staging_copy(ctx, b, offset + done, n, 0));
        memcpy((char *)dst + done, d->staging_map, n);
    }
    return TRR_OK;
}

trr_status trr_vk_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes) {
    if (bytes == 0) return TRR_OK;
    trr_vk_buffer *bd = dst, *bs = src;
    if (bd == bs && dst_offset == src_offset) return TRR_OK; /* nothing to move */
    /* Neither vkCmdCopyBuffer nor the copy kernel, whose invocations run in no set order, can take overlap. */
    if (bd == bs && (dst_offset < src_offset + bytes && src_offset < dst_offset + bytes))
        return trr_error(ctx, TRR_ERR_OVERLAP, "vulkan: overlapping copy within one buffer");
    return trr_vk_copy_bytes(ctx, bd, dst_offset, bs, src_offset, bytes);
}

trr_status trr_vk_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *b = mem;
    if (bytes == 0) return TRR_OK;
    /* vkCmdFillBuffer works on whole aligned words; the up to 3 bytes at either end go through the host. */
    size_t first = (offset + 3) & ~(size_t)3;
    size_t last = (offset + bytes) & ~(size_t)3;
    if (first >= last) {
        uint8_t tmp[8];
        memset(tmp, value, sizeof tmp);
        return trr_vk_write(ctx, mem, offset, tmp, bytes);
    }
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    trr_vk_use(d, b);
    d->fn.vkCmdFillBuffer(cmd, b->buf, first, last - first, 0x01010101u * value);
    TRR_TRY(trr_vk_end(ctx));
    uint8_t edge[4];
    memset(edge, value, sizeof edge);
    if (first > offset) TRR_TRY(trr_vk_write(ctx, mem, offset, edge, first - offset));
    if (offset + bytes > last) TRR_TRY(trr_vk_write(ctx, mem, last, edge, offset + bytes - last));
    return TRR_OK;
}
