/* Buffers, launches and device timing on the context's one in-order, profiling-enabled queue. */
#include "opencl.h"

#include <stdarg.h>
#include <stdio.h>

cl_event *trr_cl_event_slot(trr_cl_dev *dev, cl_event *slot) {
    *slot = NULL;
    return dev->timing ? slot : NULL;
}

void trr_cl_track_event(trr_cl_dev *dev, cl_event ev) {
    if (!ev) return;
    if (!dev->timing) {
        trr_cl.ReleaseEvent(ev);
        return;
    }
    if (!dev->first_event) {
        dev->first_event = ev;
        return;
    }
    if (dev->last_event) trr_cl.ReleaseEvent(dev->last_event);
    dev->last_event = ev;
}

trr_status trr_cl_alloc(trr_context *ctx, size_t bytes, void **out_mem) {
    trr_cl_dev *dev = ctx->dev;
    if (dev->max_alloc && bytes > dev->max_alloc)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY,
                         "opencl: %zu bytes exceed the device's largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE = "
                         "%zu)",
                         bytes, dev->max_alloc);
    const uint64_t total = dev->info.global_memory;
    if (total && (bytes > total || dev->allocated > total - bytes))
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY,
                         "opencl: %zu more bytes would take the buffers of this context past the device's memory "
                         "(%llu of %llu bytes in use)",
                         bytes, (unsigned long long)dev->allocated, (unsigned long long)total);
    cl_int err = CL_SUCCESS;
    /* A CPU device's buffers are host memory, which PoCL backs only at the buffer's first use, where a failed
     * allocation is an assertion (the process aborts: under `ulimit -v`, say). Asked for host-allocated memory,
     * it allocates in clCreateBuffer and answers CL_OUT_OF_HOST_MEMORY instead. */
    const cl_mem_flags flags = CL_MEM_READ_WRITE | (dev->info.is_gpu ? 0 : CL_MEM_ALLOC_HOST_PTR);
    /* OpenCL rejects zero-sized buffers; an empty trireme buffer is still a valid handle. */
    cl_mem mem = trr_cl.CreateBuffer(dev->context, flags, bytes ? bytes : 1, NULL, &err);
    /* rusticl answers an allocation it cannot back with CL_OUT_OF_RESOURCES */
    if ((!mem || err != CL_SUCCESS) && err == CL_OUT_OF_RESOURCES)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "clCreateBuffer of %zu bytes: %s (the device could not back it)",
                         bytes, trr_cl_error_name(err));
    if (!mem || err != CL_SUCCESS) return trr_cl_fail(ctx, "clCreateBuffer", err);
    dev->allocated += bytes ? bytes : 1;
    *out_mem = mem;
    return TRR_OK;
}

void trr_cl_free(void *handle, void *mem) {
    trr_cl_dev *dev = handle;
    if (!mem) return;
    size_t size = 0;
    if (trr_cl.GetMemObjectInfo((cl_mem)mem, CL_MEM_SIZE, sizeof size, &size, NULL) == CL_SUCCESS && dev &&
        size <= dev->allocated)
        dev->allocated -= size;
    trr_cl.ReleaseMemObject((cl_mem)mem);
}

trr_status trr_cl_scratch_get(trr_context *ctx, trr_cl_scratch *s, size_t bytes, const char *what, cl_mem *out) {
    if (!s->mem || s->bytes < bytes) {
        trr_cl_scratch_release(ctx->dev, s);
        void *mem = NULL;
        const trr_status st = trr_cl_alloc(ctx, bytes, &mem);
        if (st != TRR_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", trr_last_error(ctx));
            return trr_error(ctx, st, "opencl: %s: %s", what, why);
        }
        s->mem = (cl_mem)mem;
        s->bytes = bytes;
    }
    *out = s->mem;
    return TRR_OK;
}

void trr_cl_scratch_release(trr_cl_dev *dev, trr_cl_scratch *s) {
    if (s->mem) trr_cl_free(dev, s->mem);
    s->mem = NULL;
    s->bytes = 0;
}

/* A wrapped cl_mem is retained, so the caller's release cannot pull it away mid-use; destroying the trireme
 * buffer drops that one reference (trr_cl_free), the caller's own keeps the memory alive. */
trr_status trr_cl_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem) {
    trr_cl_dev *dev = ctx->dev;
    cl_mem mem = (cl_mem)(uintptr_t)native;
    cl_context owner = NULL;
    size_t size = 0;
    cl_int err = trr_cl.GetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clGetMemObjectInfo", err);
    if (owner != dev->context)
        return trr_error(ctx, TRR_ERR_WRONG_CONTEXT, "opencl: the cl_mem belongs to another cl_context");
    if (bytes > size)
        return trr_error(ctx, TRR_ERR_OUT_OF_BOUNDS, "opencl: %zu bytes asked of a cl_mem of %zu bytes", bytes, size);
    err = trr_cl.RetainMemObject(mem);
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clRetainMemObject", err);
    *out_mem = mem;
    return TRR_OK;
}

trr_status trr_cl_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes) {
    trr_cl_dev *dev = ctx->dev;
    if (bytes == 0) return TRR_OK;
    cl_event ev;
    cl_int err = trr_cl.EnqueueWriteBuffer(dev->queue, (cl_mem)mem, CL_TRUE, offset, bytes, src, 0, NULL,
                                           trr_cl_event_slot(dev, &ev));
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clEnqueueWriteBuffer", err);
    trr_cl_track_event(dev, ev);
    return TRR_OK;
}

trr_status trr_cl_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes) {
    trr_cl_dev *dev = ctx->dev;
    if (bytes == 0) return TRR_OK;
    cl_event ev;
    cl_int err = trr_cl.EnqueueReadBuffer(dev->queue, (cl_mem)mem, CL_TRUE, offset, bytes, dst, 0, NULL,
                                          trr_cl_event_slot(dev, &ev));
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clEnqueueReadBuffer", err);
    trr_cl_track_event(dev, ev);
    return TRR_OK;
}

trr_status trr_cl_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                       size_t bytes) {
    trr_cl_dev *dev = ctx->dev;
    if (bytes == 0) return TRR_OK;
    cl_event ev;
    cl_int err = trr_cl.EnqueueCopyBuffer(dev->queue, (cl_mem)src, (cl_mem)dst, src_offset, dst_offset, bytes, 0,
                                          NULL, trr_cl_event_slot(dev, &ev));
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clEnqueueCopyBuffer", err);
    trr_cl_track_event(dev, ev);
    return TRR_OK;
}

trr_status trr_cl_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value) {
    trr_cl_dev *dev = ctx->dev;
    if (bytes == 0) return TRR_OK;
    cl_event ev;
    cl_uchar pattern = value;
    cl_int err = trr_cl.EnqueueFillBuffer(dev->queue, (cl_mem)mem, &pattern, 1, offset, bytes, 0, NULL,
                                          trr_cl_event_slot(dev, &ev));
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clEnqueueFillBuffer", err);
    trr_cl_track_event(dev, ev);
    return TRR_OK;
}

trr_status trr_cl_synchronize(trr_context *ctx) {
    trr_cl_dev *dev = ctx->dev;
    cl_int err = trr_cl.Finish(dev->queue);
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clFinish", err);
    return TRR_OK;
}

void trr_cl_timer_reset(trr_cl_dev *dev) {
    if (dev->begin_marker) trr_cl.ReleaseEvent(dev->begin_marker);
    if (dev->first_event) trr_cl.ReleaseEvent(dev->first_event);
    if (dev->last_event) trr_cl.ReleaseEvent(dev->last_event);
    dev->begin_marker = dev->first_event = dev->last_event = NULL;
}

/* The completion stamp of a marker, or 0 where the driver gives it none. */
static cl_ulong marker_end(cl_event marker) {
    cl_ulong t = 0;
    if (!marker || trr_cl.GetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL) != CL_SUCCESS)
        return 0;
    return t;
}

/* The interval runs from a marker enqueued at the start to one enqueued at the stop, each completing once the
 * commands before it have (the queue is in order): like CUDA's events and Vulkan's timestamps it holds the
 * launches of the timed work, not only its execution. The commands' own START to END leave out the launch,
 * which the other APIs' figures hold, so backends compared on one GPU would not be timed alike. Where the markers carry no stamps (OpenCL allows that), the
 * first timed command's START to the last one's END. */
trr_status trr_cl_timer_start(trr_context *ctx) {
    trr_cl_dev *dev = ctx->dev;
    trr_cl_timer_reset(dev);
    if (trr_cl.EnqueueMarkerWithWaitList(dev->queue, 0, NULL, &dev->begin_marker) != CL_SUCCESS)
        dev->begin_marker = NULL;
    dev->timing = 1;
    return TRR_OK;
}

trr_status trr_cl_timer_stop(trr_context *ctx, double *out_ms) {
    trr_cl_dev *dev = ctx->dev;
    if (!dev->timing) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "opencl: timer_stop without timer_start");
    dev->timing = 0;
    cl_event end_marker = NULL;
    cl_int err = trr_cl.EnqueueMarkerWithWaitList(dev->queue, 0, NULL, &end_marker);
    if (err != CL_SUCCESS) end_marker = NULL;
    cl_event first = dev->first_event, last = dev->last_event ? dev->last_event : dev->first_event;
    cl_event wait = end_marker ? end_marker : last;
    double ms = 0.0;
    trr_status status = TRR_OK;
    if (wait && (err = trr_cl.WaitForEvents(1, &wait)) != CL_SUCCESS) {
        status = trr_cl_fail(ctx, "clWaitForEvents", err);
    } else {
        cl_ulong m0 = marker_end(dev->begin_marker), m1 = marker_end(end_marker);
        if (m0 && m1 >= m0) {
            ms = (double)(m1 - m0) * 1e-6;
        } else if (first) {
            cl_ulong start = 0, end = 0;
            if ((err = trr_cl.GetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL)) !=
                    CL_SUCCESS ||
                (err = trr_cl.GetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL)) !=
                    CL_SUCCESS)
                status = trr_cl_fail(ctx, "clGetEventProfilingInfo", err);
            else
                ms = end > start ? (double)(end - start) * 1e-6 : 0.0;
        }
    }
    if (end_marker) trr_cl.ReleaseEvent(end_marker);
    trr_cl_timer_reset(dev);
    if (status == TRR_OK) *out_ms = ms;
    return status;
}

trr_status trr_cl_set_arg(trr_context *ctx, cl_kernel kernel, cl_uint index, size_t size, const void *value) {
    cl_int err = trr_cl.SetKernelArg(kernel, index, size, value);
    if (err != CL_SUCCESS) return trr_error(ctx, TRR_ERR_DEVICE, "clSetKernelArg(%u): %s", (unsigned)index,
                                            trr_cl_error_name(err));
    return TRR_OK;
}

trr_status trr_cl_launch(trr_context *ctx, cl_kernel kernel, cl_uint dims, const size_t *global,
                         const size_t *local) {
    trr_cl_dev *dev = ctx->dev;
    cl_event ev;
    cl_int err = trr_cl.EnqueueNDRangeKernel(dev->queue, kernel, dims, NULL, global, local, 0, NULL,
                                             trr_cl_event_slot(dev, &ev));
    if (err != CL_SUCCESS) return trr_cl_fail(ctx, "clEnqueueNDRangeKernel", err);
    trr_cl_track_event(dev, ev);
    return TRR_OK;
}

int trr_cl_opt(char *options, size_t cap, const char *fmt, ...) {
    size_t used = 0;
    while (used < cap && options[used]) used++;
    if (used >= cap) return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(options + used, cap - used, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap - used;
}

int trr_cl_dtype_code(trr_dtype dtype) {
    return (int)dtype; /* the enum values are the codes common.cl uses: 0 f32, 1 f16, 2 bf16, 3 u8, 4 f8e4m3, 5 f8e5m2 */
}
