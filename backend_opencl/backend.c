/* The OpenCL backend's entry table: open/close a device; each normalised call goes to its shape rule (rules.c). */
#include "opencl.h"

#include <stdlib.h>
#include <string.h>

static trr_status cl_open(trr_context *ctx, int index, void **out_dev) {
    const trr_cl_device_ref *ref = trr_cl_device_ref_get(index);
    if (!ref) return trr_error(ctx, TRR_ERR_NO_DEVICE, "opencl:%d: no such device", index);
    trr_cl_dev *dev = calloc(1, sizeof *dev);
    if (!dev) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "opencl: no host memory for a device");
    trr_status status = trr_cl_device_info(index, &dev->info);
    if (status != TRR_OK) {
        free(dev);
        return trr_error(ctx, status, "opencl:%d: device query failed: %s", index, trr_last_error(NULL));
    }
    dev->device = ref->device;
    /* device_info ran the probe: this is a copy of its verdict */
    trr_cl_mma_probe(index, dev->info.name, dev->info.driver, &dev->mma);
    cl_ulong local = 0, max_alloc = 0;
    cl_int err = trr_cl.GetDeviceInfo(ref->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev->max_work_group,
                                      &dev->max_work_group, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetDeviceInfo(ref->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    if (err == CL_SUCCESS)
        err = trr_cl.GetDeviceInfo(ref->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    if (err == CL_SUCCESS)
        err = trr_cl.GetDeviceInfo(ref->device, CL_DRIVER_VERSION, sizeof dev->driver_version - 1,
                                   dev->driver_version, NULL);
    if (err != CL_SUCCESS) {
        free(dev);
        return trr_cl_fail(ctx, "clGetDeviceInfo", err);
    }
    dev->local_memory = local;
    dev->max_alloc = (size_t)max_alloc;
    dev->loop_budget = trr_cl_loop_budget(&dev->info);

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ref->platform, 0};
    dev->context = trr_cl.CreateContext(props, 1, &ref->device, NULL, NULL, &err);
    if (!dev->context || err != CL_SUCCESS) {
        free(dev);
        return trr_cl_fail(ctx, "clCreateContext", err);
    }
    dev->queue = trr_cl.CreateCommandQueue(dev->context, ref->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!dev->queue || err != CL_SUCCESS) {
        trr_cl.ReleaseContext(dev->context);
        free(dev);
        return trr_cl_fail(ctx, "clCreateCommandQueue", err);
    }
    *out_dev = dev;
    return TRR_OK;
}

static void cl_close(void *handle) {
    trr_cl_dev *dev = handle;
    if (!dev) return;
    trr_cl.Finish(dev->queue);
    trr_cl_timer_reset(dev);
    trr_cl_programs_release(dev);
    trr_cl_scratch_release(dev, &dev->partials);
    trr_cl_scratch_release(dev, &dev->partial_sums);
    trr_cl_scratch_release(dev, &dev->tensor_maps);
    trr_cl_scratch_release(dev, &dev->matmul_pack);
    trr_cl_scratch_release(dev, &dev->matmul_partials);
    trr_cl_tma_release(&dev->tma);
    trr_cl.ReleaseCommandQueue(dev->queue);
    trr_cl.ReleaseContext(dev->context);
    free(dev);
}

static trr_status cl_native_context(trr_context *ctx, trr_native *out) {
    const trr_cl_dev *dev = ctx->dev;
    out->device = dev->device;
    out->context = dev->context;
    out->queue = dev->queue;
    return TRR_OK;
}

/* a buffer handle is the cl_mem itself (queue.c) */
static trr_status cl_native_buffer(trr_context *ctx, void *mem, uint64_t *out_handle) {
    (void)ctx;
    *out_handle = (uint64_t)(uintptr_t)mem;
    return TRR_OK;
}

const trr_backend trr_backend_opencl = {
    .name = "opencl",
    .api_version = TRR_BACKEND_API_VERSION,
    .probe = trr_cl_probe,
    .device_info = trr_cl_device_info,
    .open = cl_open,
    .close = cl_close,
    .alloc = trr_cl_alloc,
    .free = trr_cl_free,
    .write = trr_cl_write,
    .read = trr_cl_read,
    .copy = trr_cl_copy,
    .fill = trr_cl_fill,
    .synchronize = trr_cl_synchronize,
    .timer_start = trr_cl_timer_start,
    .timer_stop = trr_cl_timer_stop,
    .supports = trr_cl_supports,
    .choose_config = trr_cl_choose_config,
    .check_config = trr_cl_check_config,
    .run = trr_cl_run,
    .native_context = cl_native_context,
    .native_buffer = cl_native_buffer,
    /* memory allocated elsewhere */
    .wrap = trr_cl_wrap,
    .unwrap = trr_cl_free, /* releases the reference wrap took */
};
