/* trr_cl_timer_probe: the OpenCL backend's device timer against markers around the same call. A timer over the
 * first timed command's START to the last one's END (the commands' own profiling events) leaves out what CUDA's
 * two events recorded on the stream around the work and Vulkan's two timestamps hold, the launch of the work
 * between them; the library's spans two markers where the driver stamps them (backend_opencl/queue.c). Here markers
 * (clEnqueueMarkerWithWaitList) are put just before the timer starts and just after the op, so each repetition
 * gives the library's figure and the marker-to-marker span of the same call (equal, with the marker timer); and
 * two markers with nothing between them, what the markers hold themselves. The bench's 256 MiB fill before
 * each. Medians of the repetitions, in us, three rounds.
 * `trr_cl_timer_probe --device opencl:1 --op add --n 16777216 [--reps 30]` (op: add or gelu over n f32). */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#define TOOL_NAME "trr_cl_timer_probe"
#include "tool_util.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <string.h>

typedef cl_int (*marker_fn)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
typedef cl_int (*wait_fn)(cl_uint, const cl_event *);
typedef cl_int (*info_fn)(cl_event, cl_profiling_info, size_t, void *, size_t *);
typedef cl_int (*release_fn)(cl_event);

typedef struct cl_api {
    marker_fn marker;
    wait_fn wait;
    info_fn info;
    release_fn release;
} cl_api;

static int load_api(cl_api *api) {
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    *(void **)&api->marker = dlsym(lib, "clEnqueueMarkerWithWaitList");
    *(void **)&api->wait = dlsym(lib, "clWaitForEvents");
    *(void **)&api->info = dlsym(lib, "clGetEventProfilingInfo");
    *(void **)&api->release = dlsym(lib, "clReleaseEvent");
    return api->marker && api->wait && api->info && api->release;
}

/* The END stamp of a marker, or 0 where the driver gives it none. */
static cl_ulong marker_end(const cl_api *api, cl_event e) {
    cl_ulong t = 0;
    return api->info(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL) == CL_SUCCESS ? t : 0;
}

int main(int argc, char **argv) {
    const char *device = "opencl:0", *opname = "add";
    long long n = 1 << 24;
    int reps = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
        else if (strcmp(argv[i], "--op") == 0) opname = argv[i + 1];
        else if (strcmp(argv[i], "--n") == 0) n = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    }
    trr_op op;
    if (reps < 1 || reps > 1000 || n < 1 || trr_op_from_name(opname, &op) != TRR_OK ||
        (op != TRR_OP_ADD && op != TRR_OP_GELU)) {
        fprintf(stderr, "usage: %s --device opencl:N --op add|gelu --n N [--reps 1..1000]\n", TOOL_NAME);
        return 2;
    }
    if (strncmp(device, "opencl", 6) != 0) {
        fprintf(stderr, "%s: %s is not an OpenCL device\n", TOOL_NAME, device);
        return 2;
    }
    cl_api api;
    if (!load_api(&api)) {
        fprintf(stderr, "%s: libOpenCL.so.1 or its 1.2 entry points not found\n", TOOL_NAME);
        return 1;
    }
    trr_context *ctx = NULL;
    if (tool_check(NULL, trr_context_create(device, &ctx), "trr_context_create")) return 1;
    trr_native nat;
    if (tool_check(ctx, trr_context_native(ctx, &nat), "trr_context_native")) return 1;
    cl_command_queue q = (cl_command_queue)nat.queue;
    const size_t bytes = (size_t)n * 4, fb = (size_t)256 << 20;
    trr_buffer *bx, *by, *bz, *flush;
    int bad = tool_check(ctx, trr_buffer_create(ctx, bytes, &bx), "buffer") ||
              tool_check(ctx, trr_buffer_create(ctx, bytes, &by), "buffer") ||
              tool_check(ctx, trr_buffer_create(ctx, bytes, &bz), "buffer") ||
              tool_check(ctx, trr_buffer_create(ctx, fb, &flush), "buffer") ||
              tool_check(ctx, trr_buffer_fill(ctx, bx, 0, bytes, 0x3c), "fill") ||
              tool_check(ctx, trr_buffer_fill(ctx, by, 0, bytes, 0x3d), "fill");
    if (bad) return 1;
    trr_tensor x, y, z;
    trr_tensor_1d(bx, 0, TRR_F32, n, &x);
    trr_tensor_1d(by, 0, TRR_F32, n, &y);
    trr_tensor_1d(bz, 0, TRR_F32, n, &z);
    const trr_tensor *ops[3] = {&x, op == TRR_OP_ADD ? &y : &z, &z};
    const double traffic = (op == TRR_OP_ADD ? 12.0 : 8.0) * (double)n;
    double *lib = malloc(sizeof *lib * (size_t)reps), *span = malloc(sizeof *span * (size_t)reps);
    if (!lib || !span || tool_check(ctx, trr_op_run(ctx, op, ops, NULL), "warm-up") ||
        tool_check(ctx, trr_synchronize(ctx), "synchronize"))
        return 1;
    for (int round = 1; round <= 3; round++) {
        /* two markers behind the fill with nothing between: what the markers themselves hold */
        int nempty = 0;
        for (int r = 0; r < reps; r++) {
            cl_event m0 = NULL, m1 = NULL;
            if (tool_check(ctx, trr_buffer_fill(ctx, flush, 0, fb, (uint8_t)r), "fill") ||
                api.marker(q, 0, NULL, &m0) != CL_SUCCESS || api.marker(q, 0, NULL, &m1) != CL_SUCCESS ||
                api.wait(1, &m1) != CL_SUCCESS) {
                fprintf(stderr, "%s: repetition %d failed\n", TOOL_NAME, r);
                return 1;
            }
            cl_ulong t0 = marker_end(&api, m0), t1 = marker_end(&api, m1);
            if (t0 && t1 >= t0) span[nempty++] = (double)(t1 - t0) * 1e-3;
            api.release(m0);
            api.release(m1);
        }
        if (nempty) printf("%s round %d: two markers behind the fill, nothing between: %.2f us\n", device, round,
                           tool_median(span, nempty));
        int nspan = 0;
        for (int r = 0; r < reps; r++) {
            cl_event m0 = NULL, m1 = NULL;
            double ms = 0.0;
            if (tool_check(ctx, trr_buffer_fill(ctx, flush, 0, fb, (uint8_t)r), "fill") ||
                api.marker(q, 0, NULL, &m0) != CL_SUCCESS || tool_check(ctx, trr_timer_start(ctx), "timer_start") ||
                tool_check(ctx, trr_op_run(ctx, op, ops, NULL), "op") || api.marker(q, 0, NULL, &m1) != CL_SUCCESS ||
                tool_check(ctx, trr_timer_stop(ctx, &ms), "timer_stop") || api.wait(1, &m1) != CL_SUCCESS) {
                fprintf(stderr, "%s: repetition %d failed\n", TOOL_NAME, r);
                return 1;
            }
            lib[r] = ms * 1e3;
            cl_ulong t0 = marker_end(&api, m0), t1 = marker_end(&api, m1);
            if (t0 && t1 > t0) span[nspan++] = (double)(t1 - t0) * 1e-3;
            api.release(m0);
            api.release(m1);
        }
        double l = tool_median(lib, reps);
        printf("%s %s n=%lld round %d: library timer %8.2f us %6.0f GB/s", device, opname, n, round, l,
               traffic / (l * 1e-6) * 1e-9);
        if (nspan) {
            double s = tool_median(span, nspan);
            printf("; marker to marker %8.2f us %6.0f GB/s (%d of %d with stamps)\n", s, traffic / (s * 1e-6) * 1e-9,
                   nspan, reps);
        } else {
            printf("; the markers have no timestamps\n");
        }
        fflush(stdout);
    }
    free(lib);
    free(span);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    trr_buffer_destroy(flush);
    trr_context_destroy(ctx);
    return 0;
}
