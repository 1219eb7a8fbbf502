/*
 * Device buffers are host memory. 64-byte alignment puts every buffer on a cache line, so a view at offset 0
 * is as aligned as a vector load can want. Large transfers are split across the pool: one core cannot
 * saturate the memory bus, and the copy bandwidth measured here is the ceiling the benchmarks are judged by.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#define TRR_CPU_ALIGN 64
#define TRR_CPU_PARALLEL_BYTES ((size_t)4 << 20) /* below this a second core costs more than it gives */
#define TRR_CPU_CHUNK_BYTES ((int64_t)1 << 20)

trr_status trr_cpu_alloc(trr_context *ctx, size_t bytes, void **out_mem) {
    size_t rounded = bytes ? bytes : 1;
    if (rounded > SIZE_MAX - (TRR_CPU_ALIGN - 1))
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu: %zu bytes cannot be allocated", bytes);
    rounded = (rounded + TRR_CPU_ALIGN - 1) / TRR_CPU_ALIGN * TRR_CPU_ALIGN;
    void *mem = NULL;
    if (posix_memalign(&mem, TRR_CPU_ALIGN, rounded) != 0 || !mem)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu: posix_memalign of %zu bytes failed", bytes);
    *out_mem = mem;
    return TRR_OK;
}

void trr_cpu_free(void *dev, void *mem) {
    (void)dev;
    free(mem);
}

/* A wrapped buffer is the caller's host address; ops run to completion before they return, so forgetting it
 * needs nothing (no unwrap). */
trr_status trr_cpu_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem) {
    if (native > UINTPTR_MAX || bytes > UINTPTR_MAX - (uintptr_t)native)
        return trr_error(ctx, TRR_ERR_OVERFLOW, "cpu: host range 0x%llx + %zu bytes wraps the address space",
                         (unsigned long long)native, bytes);
    /* Views are checked for whole elements relative to the buffer's start, so the start itself must suit the
     * widest element. */
    if (native % 4 != 0)
        return trr_error(ctx, TRR_ERR_MISALIGNED, "cpu: host address 0x%llx is not 4-byte aligned",
                         (unsigned long long)native);
    *out_mem = (void *)(uintptr_t)native;
    return TRR_OK;
}

typedef struct move_job {
    unsigned char *dst;
    const unsigned char *src; /* NULL: fill with value */
    uint8_t value;
} move_job;

static void move_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const move_job *job = arg;
    size_t from = (size_t)begin, len = (size_t)(end - begin);
    if (job->src) memcpy(job->dst + from, job->src + from, len);
    else memset(job->dst + from, job->value, len);
}

/* memcpy, or memset when src is NULL, on the pool when large. Overlapping ranges go to memmove on one thread
 * since chunks could then read what another chunk already wrote. */
static void transfer(trr_context *ctx, void *dst, const void *src, uint8_t value, size_t bytes) {
    if (bytes == 0 || dst == src) return;
    const unsigned char *d = dst, *s = src;
    int overlap = s && d < s + bytes && s < d + bytes;
    if (overlap) {
        memmove(dst, src, bytes);
        return;
    }
    move_job job = {dst, src, value};
    trr_cpu_pool *pool = ctx && ctx->dev && bytes >= TRR_CPU_PARALLEL_BYTES ? trr_cpu_ctx_pool(ctx) : NULL;
    trr_cpu_parallel_for(pool, (int64_t)bytes, TRR_CPU_CHUNK_BYTES, move_task, &job);
}

trr_status trr_cpu_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes) {
    transfer(ctx, (unsigned char *)mem + offset, src, 0, bytes);
    return TRR_OK;
}

trr_status trr_cpu_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes) {
    transfer(ctx, dst, (const unsigned char *)mem + offset, 0, bytes);
    return TRR_OK;
}

trr_status trr_cpu_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                        size_t bytes) {
    transfer(ctx, (unsigned char *)dst + dst_offset, (const unsigned char *)src + src_offset, 0, bytes);
    return TRR_OK;
}

trr_status trr_cpu_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value) {
    if (bytes == 0) return TRR_OK;
    unsigned char *d = (unsigned char *)mem + offset;
    move_job job = {d, NULL, value};
    trr_cpu_pool *pool = ctx && ctx->dev && bytes >= TRR_CPU_PARALLEL_BYTES ? trr_cpu_ctx_pool(ctx) : NULL;
    trr_cpu_parallel_for(pool, (int64_t)bytes, TRR_CPU_CHUNK_BYTES, move_task, &job);
    return TRR_OK;
}
