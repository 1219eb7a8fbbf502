/*
 * The CPU device: what it reports about the host, opening it (a thread pool per context), timing, and the
 * backend table that wires every slot to this directory's files (the ops: kernels.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int trr_cpu_core_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double trr_cpu_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The value of the first "key : value" line of /proc/cpuinfo whose key is key, or 0 if there is none (other
 * systems, or architectures that name things differently). */
static int cpuinfo_field(const char *key, char *out, size_t cap) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int found = 0;
    size_t klen = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        char *colon = strchr(line + klen, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        size_t len = strcspn(v, "\n");
        while (len > 0 && v[len - 1] == ' ') len--;
        if (len == 0) continue;
        if (len >= cap) len = cap - 1;
        memcpy(out, v, len);
        out[len] = '\0';
        found = 1;
    }
    fclose(f);
    return found;
}

/* Size in bytes of one cache level from sysfs ("1024K"), or fallback. */
static uint64_t cache_bytes(int index, uint64_t fallback) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f) return fallback;
    unsigned long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (got < 1 || v == 0) return fallback;
    if (got == 2 && (unit == 'K' || unit == 'k')) v <<= 10;
    if (got == 2 && (unit == 'M' || unit == 'm')) v <<= 20;
    return v;
}

/* f32 lanes of the widest vector unit GCC may use in the kernels (a fact for people and tuners; the kernels
 * themselves are compiled for the baseline ISA). */
static int simd_lanes(char *isa, size_t cap) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        snprintf(isa, cap, "avx512f");
        return 16;
    }
    if (__builtin_cpu_supports("avx2")) {
        snprintf(isa, cap, "avx2");
        return 8;
    }
    snprintf(isa, cap, "sse2");
    return 4;
#elif defined(__aarch64__)
    snprintf(isa, cap, "neon");
    return 4;
#else
    snprintf(isa, cap, "scalar");
    return 1;
#endif
}

static trr_status cpu_probe(int *out_device_count, char *reason, size_t reason_cap) {
    if (reason && reason_cap) reason[0] = '\0';
    *out_device_count = 1; /* the host is always there */
    return TRR_OK;
}

static trr_status cpu_device_info(int index, trr_device_info *out_info) {
    if (index != 0) return trr_error(NULL, TRR_ERR_NO_DEVICE, "cpu:%d: the CPU backend has one device, cpu:0", index);
    trr_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "cpu");
    info.index = 0;
    snprintf(info.spec, sizeof info.spec, "cpu:0");
    if (!cpuinfo_field("model name", info.name, sizeof info.name) &&
        !cpuinfo_field("Model", info.name, sizeof info.name))
        snprintf(info.name, sizeof info.name, "host CPU");
    char vendor_id[64] = "";
    if (cpuinfo_field("vendor_id", vendor_id, sizeof vendor_id)) {
        if (strcmp(vendor_id, "AuthenticAMD") == 0) snprintf(info.vendor, sizeof info.vendor, "AMD");
        else if (strcmp(vendor_id, "GenuineIntel") == 0) snprintf(info.vendor, sizeof info.vendor, "Intel");
        else snprintf(info.vendor, sizeof info.vendor, "%s", vendor_id);
    } else {
        snprintf(info.vendor, sizeof info.vendor, "unknown");
    }
    snprintf(info.driver, sizeof info.driver, "trireme-cpu %s", TRR_VERSION_STRING);
    info.is_gpu = 0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info.global_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    /* A matmul block's packed panels live in L2, the nearest thing to a GPU block's shared memory. */
    uint64_t l2 = cache_bytes(2, 1u << 20);
    info.shared_memory_per_block = l2;
    info.max_threads_per_block = 1; /* one core runs one block */
    char isa[16];
    info.subgroup_width = simd_lanes(isa, sizeof isa);
    info.compute_units = trr_cpu_core_count();
    info.native_f16 = 0; /* f16 is a storage format here: loaded to f32, rounded on store */
    info.matrix_units = 0;
    snprintf(info.capabilities, sizeof info.capabilities,
             "%d cores, %s (%d f32 lanes), L1d %llu KiB, L2 %llu KiB, f16/bf16 storage only, f32 accumulation",
             info.compute_units, isa, info.subgroup_width, (unsigned long long)(cache_bytes(0, 32768) >> 10),
             (unsigned long long)(l2 >> 10));
    *out_info = info;
    return TRR_OK;
}

static trr_status cpu_open(trr_context *ctx, int index, void **out_dev) {
    if (index != 0) return trr_error(ctx, TRR_ERR_NO_DEVICE, "cpu:%d: the CPU backend has one device, cpu:0", index);
    trr_cpu_device *dev = calloc(1, sizeof *dev);
    if (!dev) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu: no memory for the device handle");
    dev->pool = trr_cpu_pool_create(trr_cpu_core_count());
    if (!dev->pool) {
        free(dev);
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu: no memory for the thread pool");
    }
    *out_dev = dev;
    return TRR_OK;
}

static void cpu_close(void *p) {
    trr_cpu_device *dev = p;
    if (!dev) return;
    trr_cpu_pool_destroy(dev->pool);
    free(dev->matmul_partials);
    free(dev);
}

static trr_status cpu_synchronize(trr_context *ctx) {
    (void)ctx; /* every op has finished when it returns */
    return TRR_OK;
}

static trr_status cpu_timer_start(trr_context *ctx) {
    trr_cpu_device *dev = ctx->dev;
    dev->timer_start_ms = trr_cpu_now_ms();
    dev->timer_running = 1;
    return TRR_OK;
}

/* A stop without a start is an error, as on the other backends: there is no interval to report. */
static trr_status cpu_timer_stop(trr_context *ctx, double *out_ms) {
    trr_cpu_device *dev = ctx->dev;
    if (!dev->timer_running) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "cpu: timer_stop without timer_start");
    dev->timer_running = 0;
    *out_ms = trr_cpu_now_ms() - dev->timer_start_ms;
    return TRR_OK;
}

/* No device objects: the native handles are NULL, a buffer is its host address. */
static trr_status cpu_native_context(trr_context *ctx, trr_native *out) {
    (void)ctx, (void)out;
    return TRR_OK;
}

static trr_status cpu_native_buffer(trr_context *ctx, void *mem, uint64_t *out_handle) {
    (void)ctx;
    *out_handle = (uint64_t)(uintptr_t)mem;
    return TRR_OK;
}

const trr_backend trr_backend_cpu = {
    .name = "cpu",
    .api_version = TRR_BACKEND_API_VERSION,
    .probe = cpu_probe,
    .device_info = cpu_device_info,
    .open = cpu_open,
    .close = cpu_close,
    .alloc = trr_cpu_alloc,
    .free = trr_cpu_free,
    .write = trr_cpu_write,
    .read = trr_cpu_read,
    .copy = trr_cpu_copy,
    .fill = trr_cpu_fill,
    .synchronize = cpu_synchronize,
    .timer_start = cpu_timer_start,
    .timer_stop = cpu_timer_stop,
    .supports = trr_cpu_supports,
    .choose_config = trr_cpu_choose_config,
    .check_config = trr_cpu_check_config,
    .config_fields_used = trr_cpu_config_fields_used,
    .run = trr_cpu_run,
    .native_context = cpu_native_context,
    .native_buffer = cpu_native_buffer,
    /* memory allocated elsewhere */
    .wrap = trr_cpu_wrap,
};
