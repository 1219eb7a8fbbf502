/* Device discovery and opening: attributes through cuDeviceGetAttribute, the primary context, one stream. */
#include "trr_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_count;

trr_status trr_cuda_probe(int *out_device_count, char *reason, size_t reason_cap) {
    TRR_TRY(trr_cuda_load_driver(reason, reason_cap));
    int n = 0;
    CUresult r = trr_cu.DeviceGetCount(&n);
    if (r != TRR_CUDA_SUCCESS) {
        snprintf(reason, reason_cap, "cuDeviceGetCount: %s", trr_cuda_result_name(r));
        return TRR_ERR_UNAVAILABLE;
    }
    if (n <= 0) {
        snprintf(reason, reason_cap, "the NVIDIA driver reports no CUDA devices");
        return TRR_ERR_UNAVAILABLE;
    }
    /* Kernels are compiled at run time, so a driver without NVRTC cannot run any op: say so now. */
    TRR_TRY(trr_cuda_load_nvrtc(reason, reason_cap));
    device_count = n;
    *out_device_count = n;
    return TRR_OK;
}

void trr_cuda_arch_for(int major, int minor, char *out, size_t cap) {
    /* sm_90a unlocks Hopper's arch-specific instructions; a cubin for it runs only on 9.0 itself. */
    snprintf(out, cap, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
}

static trr_status attr(trr_context *ctx, int which, CUdevice d, int *out) {
    TRR_CU_CHECK(ctx, trr_cu.DeviceGetAttribute(out, which, d), "cuDeviceGetAttribute");
    return TRR_OK;
}

/* 16 bytes as 8-4-4-4-12 lower-case hex (37 bytes with the terminator). */
static void uuid_text(const unsigned char b[16], char out[37]) {
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        o += snprintf(out + o, 3, "%02x", b[i]);
    }
    out[36] = '\0';
}

trr_status trr_cuda_device_info(int index, trr_device_info *out_info) {
    if (index < 0 || index >= device_count) return trr_error(NULL, TRR_ERR_NO_DEVICE, "cuda:%d does not exist", index);
    CUdevice d;
    TRR_CU_CHECK(NULL, trr_cu.DeviceGet(&d, index), "cuDeviceGet");
    trr_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "cuda");
    info.index = index;
    snprintf(info.spec, sizeof info.spec, "cuda:%d", index);
    TRR_CU_CHECK(NULL, trr_cu.DeviceGetName(info.name, (int)sizeof info.name, d), "cuDeviceGetName");
    snprintf(info.vendor, sizeof info.vendor, "NVIDIA");
    int driver = 0;
    TRR_CU_CHECK(NULL, trr_cu.DriverGetVersion(&driver), "cuDriverGetVersion");
    snprintf(info.driver, sizeof info.driver, "CUDA %d.%d", driver / 1000, (driver % 1000) / 10);
    info.is_gpu = 1;
    size_t mem = 0;
    TRR_CU_CHECK(NULL, trr_cu.DeviceTotalMem(&mem, d), "cuDeviceTotalMem");
    info.global_memory = mem;
    int smem = 0, threads = 0, warp = 0, sms = 0, major = 0, minor = 0;
    TRR_TRY(attr(NULL, TRR_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d, &smem));
    TRR_TRY(attr(NULL, TRR_CU_ATTR_MAX_THREADS_PER_BLOCK, d, &threads));
    TRR_TRY(attr(NULL, TRR_CU_ATTR_WARP_SIZE, d, &warp));
    TRR_TRY(attr(NULL, TRR_CU_ATTR_MULTIPROCESSOR_COUNT, d, &sms));
    TRR_TRY(attr(NULL, TRR_CU_ATTR_CC_MAJOR, d, &major));
    TRR_TRY(attr(NULL, TRR_CU_ATTR_CC_MINOR, d, &minor));
    info.shared_memory_per_block = (uint64_t)smem;
    info.max_threads_per_block = threads;
    info.subgroup_width = warp;
    info.compute_units = sms;
    info.native_f16 = 1;
    info.matrix_units = major >= 7;
    /* Identity is optional: an old driver without these calls leaves the fields empty. */
    unsigned char uuid[16];
    if (trr_cu.DeviceGetUuid && trr_cu.DeviceGetUuid(uuid, d) == TRR_CUDA_SUCCESS) uuid_text(uuid, info.uuid);
    char bus[32] = "";
    if (trr_cu.DeviceGetPCIBusId && trr_cu.DeviceGetPCIBusId(bus, (int)sizeof bus, d) == TRR_CUDA_SUCCESS) {
        /* the driver writes "0000:3B:00.0"; lower case matches the other backends' spelling */
        for (char *p = bus; *p; p++)
            if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
        snprintf(info.pci_bus_id, sizeof info.pci_bus_id, "%s", bus);
    }
    char arch[16];
    trr_cuda_arch_for(major, minor, arch, sizeof arch);
    /* What f16 matmul runs on by default (config_matmul.c: trr_cuda_matmul_auto_variant), so `trireme devices` tells the
     * user. */
    const char *tc = !strcmp(arch, "sm_90a") ? "tensor cores (f16 matmul: wgmma + TMA)"
                     : major >= 8           ? "tensor cores (f16 matmul: mma.sync)"
                     : major >= 7           ? "tensor cores (unused: f16 matmul on CUDA cores below sm_80)"
                                            : "no tensor cores";
    snprintf(info.capabilities, sizeof info.capabilities,
             "compute capability %d.%d, %d SMs, %d KB shared memory per block (opt-in), %s, NVRTC target %s", major,
             minor, sms, smem / 1024, tc, arch);
    *out_info = info;
    return TRR_OK;
}

trr_status trr_cuda_bind(trr_context *ctx) {
    trr_cuda_dev *dev = ctx->dev;
    TRR_CU_CHECK(ctx, trr_cu.CtxSetCurrent(dev->context), "cuCtxSetCurrent");
    return TRR_OK;
}

static trr_status open_dev(trr_context *ctx, trr_cuda_dev *dev, int index) {
    TRR_CU_CHECK(ctx, trr_cu.DeviceGet(&dev->device, index), "cuDeviceGet");
    TRR_CU_CHECK(ctx, trr_cu.DevicePrimaryCtxRetain(&dev->context, dev->device), "cuDevicePrimaryCtxRetain");
    TRR_CU_CHECK(ctx, trr_cu.CtxSetCurrent(dev->context), "cuCtxSetCurrent");
    /* Non-blocking: never serialised against the legacy default stream other libraries may use. */
    TRR_CU_CHECK(ctx, trr_cu.StreamCreate(&dev->stream, TRR_CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    TRR_CU_CHECK(ctx, trr_cu.EventCreate(&dev->timer_begin, TRR_CU_EVENT_DEFAULT), "cuEventCreate");
    TRR_CU_CHECK(ctx, trr_cu.EventCreate(&dev->timer_end, TRR_CU_EVENT_DEFAULT), "cuEventCreate");
    TRR_TRY(attr(ctx, TRR_CU_ATTR_CC_MAJOR, dev->device, &dev->cc_major));
    TRR_TRY(attr(ctx, TRR_CU_ATTR_CC_MINOR, dev->device, &dev->cc_minor));
    TRR_TRY(attr(ctx, TRR_CU_ATTR_MULTIPROCESSOR_COUNT, dev->device, &dev->sm_count));
    TRR_TRY(attr(ctx, TRR_CU_ATTR_MAX_THREADS_PER_BLOCK, dev->device, &dev->max_threads));
    TRR_TRY(attr(ctx, TRR_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev->device, &dev->smem_optin));
    TRR_CU_CHECK(ctx, trr_cu.DriverGetVersion(&dev->driver_version), "cuDriverGetVersion");
    trr_cuda_arch_for(dev->cc_major, dev->cc_minor, dev->arch, sizeof dev->arch);
    trr_cuda_flag_open(dev);
    return TRR_OK;
}

trr_status trr_cuda_open(trr_context *ctx, int index, void **out_dev) {
    trr_cuda_dev *dev = calloc(1, sizeof *dev);
    if (!dev) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "no host memory for the CUDA device state");
    trr_status st = open_dev(ctx, dev, index);
    if (st != TRR_OK) {
        trr_cuda_close(dev);
        return st;
    }
    *out_dev = dev;
    return TRR_OK;
}

/* Teardown ignores errors: nothing useful can be done with them, and close has no status to return. */
void trr_cuda_close(void *handle) {
    trr_cuda_dev *dev = handle;
    if (!dev) return;
    if (dev->context) {
        trr_cu.CtxSetCurrent(dev->context);
        if (dev->stream) {
            trr_cuda_batch_flush_dev(dev);
            trr_cu.StreamSynchronize(dev->stream);
        }
        trr_cuda_batch_release(dev);
        trr_cuda_modules_release(dev);
        if (dev->attn_scratch.ptr) trr_cu.MemFree(dev->attn_scratch.ptr);
        if (dev->matmul_scratch.ptr) trr_cu.MemFree(dev->matmul_scratch.ptr);
        if (dev->matmul_flags.ptr) trr_cu.MemFree(dev->matmul_flags.ptr);
        if (dev->matmul_pack.ptr) trr_cu.MemFree(dev->matmul_pack.ptr);
        if (dev->timer_begin) trr_cu.EventDestroy(dev->timer_begin);
        if (dev->timer_end) trr_cu.EventDestroy(dev->timer_end);
        if (dev->interop_event) trr_cu.EventDestroy(dev->interop_event);
        if (dev->stream) trr_cu.StreamDestroy(dev->stream);
        trr_cuda_flag_close(dev);
        trr_cu.DevicePrimaryCtxRelease(dev->device);
    }
    free(dev);
}
