/* The OpenCL backend's entry table: open/close a device and route each normalised call to its op file. */
#include "opencl.h"

#include "op_table.h"

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
    trr_cl.ReleaseCommandQueue(dev->queue);
    trr_cl.ReleaseContext(dev->context);
    free(dev);
}

static trr_status cl_supports(trr_context *ctx, const trr_call *call) {
    if (call->op == TRR_OP_ATTENTION) return TRR_OK; /* f32, f16 and bf16 (storage only) everywhere */
    if (trr_op_desc_get(call->op)->kernel) return trr_cl_kernel_supports(ctx, call);
    if (call->op == TRR_OP_COPY) return TRR_OK; /* copies bits of any element size */
    int n_inputs = call->op == TRR_OP_ADD || call->op == TRR_OP_MATMUL ? 2 : 1;
    trr_dtype dts[3] = {call->x.dtype, call->y.dtype, call->z.dtype};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && n_inputs == 1) continue;
        if (dts[i] == TRR_U8 && call->op != TRR_OP_RGB_TO_GREY)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: u8 is only for copy and rgb_to_grey");
    }
    if (call->op == TRR_OP_ROW_SUM && call->z.dtype != TRR_F32)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: row_sum writes f32");
    return TRR_OK;
}

static trr_status cl_run(trr_context *ctx, const trr_call *call) {
    if (trr_op_desc_get(call->op)->kernel) return trr_cl_run_kernel(ctx, call);
    switch (call->op) {
    case TRR_OP_COPY:
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU: return trr_cl_run_elementwise(ctx, call);
    case TRR_OP_RGB_TO_GREY: return trr_cl_run_rgb_to_grey(ctx, call);
    case TRR_OP_SOFTMAX: return trr_cl_run_softmax(ctx, call);
    case TRR_OP_ROW_SUM: return trr_cl_run_row_sum(ctx, call);
    case TRR_OP_MATMUL: return trr_cl_run_matmul(ctx, call);
    case TRR_OP_ATTENTION: return trr_cl_run_attention(ctx, call);
    default: return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: op %d is not implemented", (int)call->op);
    }
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
    .supports = cl_supports,
    .choose_config = trr_cl_choose_config,
    .check_config = trr_cl_check_config,
    .run = cl_run,
    .native_context = cl_native_context,
    .native_buffer = cl_native_buffer,
    /* memory allocated elsewhere */
    .wrap = trr_cl_wrap,
    .unwrap = trr_cl_free, /* releases the reference wrap took */
};
