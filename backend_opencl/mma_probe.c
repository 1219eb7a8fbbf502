/* Whether a device runs matmul_mma.cl: its MMA_PROBE kernel (the same inline PTX: cp.async, ldmatrix,
 * ldmatrix.trans, mma.sync m16n8k16) is built and run on a 16x16x16 product with an exact answer. Only a compiler that
 * takes the PTX and a device that computes it right pass; every other one gets the reason. Once per device per process,
 * and the verdict is kept in the cache directory keyed by device, driver and kernel source, so a process does not
 * recompile the probe (PoCL answers in about 0.1 s, NVIDIA in about as much). */
#include "opencl.h"

#include "cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBED 64

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int probed[MAX_PROBED];
static trr_cl_mma verdicts[MAX_PROBED];

/* The first line of a build log that names an error, without the file:line:column prefix, as the reason. */
static void log_reason(const char *log, char *out, size_t cap) {
    const char *line = strstr(log, "error");
    if (!line) line = log;
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    /* "error: /tmp/x.cl:5:3: use of ..." -> "use of ..." */
    const char *cl = NULL;
    for (const char *q = line; (q = strstr(q, ".cl:")) != NULL && q < line + n; q += 4) cl = q;
    if (cl) {
        /* "error: <Spelling=/tmp/x.cl:97:5>: use of ..." too */
        const char *p = cl + 4;
        while (p < line + n && (*p == ':' || *p == '>' || *p == ' ' || (*p >= '0' && *p <= '9'))) p++;
        n -= (size_t)(p - line);
        line = p;
    }
    snprintf(out, cap, "%.*s", (int)(n > 120 ? 120 : n), line);
}

static uint16_t half_of_int(int v) {
    /* -4..4 exactly in binary16 */
    static const uint16_t mag[5] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400};
    return (uint16_t)((v < 0 ? 0x8000 : 0) | mag[v < 0 ? -v : v]);
}

static uint8_t e4m3_of_int(int v) {
    /* -4..4 exactly in e4m3 */
    static const uint8_t mag[5] = {0x00, 0x38, 0x40, 0x44, 0x48};
    return (uint8_t)((v < 0 ? 0x80 : 0) | mag[v < 0 ? -v : v]);
}

/* The first line of a program's build log that names an error, as the reason. */
static void build_reason(cl_program program, cl_device_id device, cl_int err, char *out, size_t cap) {
    char why[128] = "";
    size_t n = 0;
    char *log = NULL;
    if (trr_cl.GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 0 &&
        (log = malloc(n + 1)) != NULL &&
        trr_cl.GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = '\0';
        log_reason(log, why, sizeof why);
    }
    free(log);
    snprintf(out, cap, "%s", why[0] ? why : trr_cl_error_name(err));
}

/* Builds program with options. 1: built; 0: the compiler refused it: program released, reason "<refused>: <what
 * its build log says>". */
static int built(cl_program program, cl_device_id device, const char *options, const char *refused, char *reason,
                 size_t cap) {
    cl_int err = trr_cl.BuildProgram(program, 1, &device, options, NULL, NULL);
    if (err == CL_SUCCESS) return 1;
    char why[128];
    build_reason(program, device, err, why, sizeof why);
    snprintf(reason, cap, "%s: %s", refused, why);
    trr_cl.ReleaseProgram(program);
    return 0;
}

/* A probe's program from source, built with options. 1: built (*out); 0: refused (as built() says); -1: the
 * OpenCL setup failed (not cached: it may pass next time). */
static int probe_program(cl_context context, cl_device_id device, const char *source, size_t size, const char *options,
                         const char *refused, char *reason, size_t cap, cl_program *out) {
    cl_int err = CL_SUCCESS;
    cl_program program = trr_cl.CreateProgramWithSource(context, 1, &source, &size, &err);
    if (!program || err != CL_SUCCESS) {
        snprintf(reason, cap, "clCreateProgramWithSource: %s", trr_cl_error_name(err));
        return -1;
    }
    if (!built(program, device, options, refused, reason, cap)) return 0;
    *out = program;
    return 1;
}

/* Runs kernel `name` of program with buffers a and b (in bytes each, copied in) and c (c_bytes, read back into c)
 * on one work-group of `threads`. 1: ran; 0: did not run (reason written); -1: the OpenCL setup failed. */
static int run_probe_kernel(cl_context context, cl_device_id device, cl_program program, const char *name,
                            const void *a, const void *b, size_t in, float *c, size_t c_bytes, size_t threads,
                            char *reason, size_t cap) {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = trr_cl.CreateKernel(program, name, &err);
    cl_command_queue queue = kernel ? trr_cl.CreateCommandQueue(context, device, 0, &err) : NULL;
    cl_mem bufs[3] = {NULL, NULL, NULL};
    int ran = -1;
    if (queue) {
        const void *host[3] = {a, b, c};
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
            bufs[i] = trr_cl.CreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, i < 2 ? in : c_bytes,
                                          (void *)host[i], &err);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
            err = trr_cl.SetKernelArg(kernel, (cl_uint)i, sizeof(cl_mem), &bufs[i]);
        if (err == CL_SUCCESS)
            err = trr_cl.EnqueueNDRangeKernel(queue, kernel, 1, NULL, &threads, &threads, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = trr_cl.EnqueueReadBuffer(queue, bufs[2], CL_TRUE, 0, c_bytes, c, 0, NULL, NULL);
        ran = err == CL_SUCCESS;
        if (!ran) snprintf(reason, cap, "%s failed to run: %s", name, trr_cl_error_name(err));
    } else {
        snprintf(reason, cap, "%s: %s", kernel ? "clCreateCommandQueue" : "clCreateKernel", trr_cl_error_name(err));
    }
    for (int i = 0; i < 3; i++)
        if (bufs[i]) trr_cl.ReleaseMemObject(bufs[i]);
    if (queue) trr_cl.ReleaseCommandQueue(queue);
    if (kernel) trr_cl.ReleaseKernel(kernel);
    return ran;
}

/* 1 where c (n x n) is the product of va (n x n) and vb (stored [k][n], or [n][k] with b_nk), else 0 with the
 * first wrong element in reason. */
static int product_right(const float *c, const int *va, const int *vb, int n, int b_nk, const char *what,
                         char *reason, size_t cap) {
    for (int m = 0; m < n; m++)
        for (int j = 0; j < n; j++) {
            int want = 0;
            for (int k = 0; k < n; k++) want += va[m * n + k] * vb[b_nk ? j * n + k : k * n + j];
            if (c[m * n + j] != (float)want) {
                snprintf(reason, cap, "%s probe computed C[%d][%d] = %g, not %d", what, m, j, (double)c[m * n + j],
                         want);
                return 0;
            }
        }
    return 1;
}

/* Builds and runs the probe with one address mode. 1: right; 0: not (reason written); -1: the OpenCL setup
 * itself failed (not cached: it may pass next time). */
static int try_mode(cl_context context, cl_device_id device, const char *source, size_t size, int mode, int cp_async,
                    char *reason, size_t cap) {
    char options[128];
    snprintf(options, sizeof options,
             "-cl-std=CL1.2 -DMMA_PROBE -DADDR_MODE=%d -DCP_ASYNC=%d -DX_DT=1 -DY_DT=1 -DZ_DT=0", mode, cp_async);
    cl_program program;
    int ok = probe_program(context, device, source, size, options, "compiler refuses inline PTX", reason, cap, &program);
    if (ok != 1) return ok;
    /* A[m][k] and B[k][n], row-major, small integers: every product and sum is exact */
    int va[256], vb[256];
    uint16_t ab[2][256];
    float c[256];
    for (int i = 0; i < 256; i++) {
        va[i] = (i * 7 + 3) % 9 - 4;
        vb[i] = (i * 5 + 1) % 9 - 4;
        ab[0][i] = half_of_int(va[i]);
        ab[1][i] = half_of_int(vb[i]);
        c[i] = -1e30f;
    }
    int verdict = run_probe_kernel(context, device, program, "mma_probe", ab[0], ab[1], sizeof ab[0], c, sizeof c, 32,
                                   reason, cap);
    if (verdict == 1) verdict = product_right(c, va, vb, 16, 0, "mma.sync", reason, cap);
    trr_cl.ReleaseProgram(program);
    return verdict;
}

/* The wgmma probe (matmul_wgmma.cl's WGMMA_PROBE: cp.async into swizzled slices, wgmma m64n64k32 on e4m3) built
 * for sm_90 with its wgmma lines as comments, retargeted to sm_90a (ptx_retarget.h) and run on a 64x64x64
 * product with an exact answer. 1: right; 0: not (reason written); -1: the OpenCL setup failed. */
static int try_wgmma(cl_context context, cl_device_id device, const char *source, size_t size, int addr_mode,
                     char *reason, size_t cap) {
    char options[160];
    snprintf(options, sizeof options,
             "-cl-std=CL1.2 -DWGMMA_PROBE -DWG_COMMENTED=1 -DADDR_MODE=%d -DCP_ASYNC=1 -DX_DT=4 -DY_DT=4 -DZ_DT=0",
             addr_mode);
    cl_program sm90, program;
    int ok = probe_program(context, device, source, size, options, "the wgmma probe does not build for sm_90", reason,
                           cap, &sm90);
    if (ok != 1) return ok;
    cl_int err = trr_cl_retargeted_program(context, device, sm90, &program, reason, cap);
    trr_cl.ReleaseProgram(sm90);
    if (err == CL_INVALID_BINARY) return 0; /* not PTX to retarget: the reason is written */
    if (err != CL_SUCCESS) return -1;
    if (!built(program, device, "", "the driver does not build sm_90a PTX", reason, cap)) return 0;
    /* A[m][k] and B[n][k], small integers: every product and sum is exact */
    struct {
        int va[4096], vb[4096];
        uint8_t ab[2][4096];
        float c[4096];
    } *w = malloc(sizeof *w);
    if (!w) {
        snprintf(reason, cap, "no host memory for the wgmma probe");
        trr_cl.ReleaseProgram(program);
        return -1;
    }
    for (int i = 0; i < 4096; i++) {
        w->va[i] = (i * 7 + 3) % 9 - 4;
        w->vb[i] = (i * 5 + 1) % 9 - 4;
        w->ab[0][i] = e4m3_of_int(w->va[i]);
        w->ab[1][i] = e4m3_of_int(w->vb[i]);
        w->c[i] = -1e30f;
    }
    int verdict = run_probe_kernel(context, device, program, "wgmma_probe", w->ab[0], w->ab[1], sizeof w->ab[0], w->c,
                                   sizeof w->c, 128, reason, cap);
    if (verdict == 1) verdict = product_right(w->c, w->va, w->vb, 64, 1, "wgmma", reason, cap);
    free(w);
    trr_cl.ReleaseProgram(program);
    return verdict;
}

/* The PCI vendor ID of the devices whose OpenCL C compilers emit PTX (NVIDIA's driver; PoCL's CUDA device
 * reports it too). */
#define TRR_CL_VENDOR_ID_NVIDIA 0x10DEu

static void run_probe(const trr_cl_device_ref *ref, const char *name, const char *driver, trr_cl_mma *out) {
    /* Only a compiler that emits PTX can take inline PTX: any other refuses the probe, and some (PoCL's clang)
     * print the refusal's diagnostics to the process's stderr while doing so, which library code must not
     * cause. So the probe is built only on NVIDIA's vendor ID; it still decides there. */
    snprintf(out->wgmma_reason, sizeof out->wgmma_reason, "the mma probe did not pass");
    cl_uint vendor_id = 0;
    if (trr_cl.GetDeviceInfo(ref->device, CL_DEVICE_VENDOR_ID, sizeof vendor_id, &vendor_id, NULL) != CL_SUCCESS ||
        vendor_id != TRR_CL_VENDOR_ID_NVIDIA) {
        snprintf(out->reason, sizeof out->reason,
                 "no PTX compiler: inline PTX needs a device with NVIDIA's vendor ID (0x%x here)", (unsigned)vendor_id);
        return;
    }
    /* common.cl followed by the probe's file, as program.c builds them */
    char why[300], *source = NULL, *wg_source = NULL;
    size_t size = 0, wg_size = 0;
    if (trr_embedded_source(trr_opencl_kernels, trr_opencl_kernels_count, "common.cl", "matmul_mma.cl", &source,
                            &size, why, sizeof why) != TRR_OK ||
        trr_embedded_source(trr_opencl_kernels, trr_opencl_kernels_count, "common.cl", "matmul_wgmma.cl",
                            &wg_source, &wg_size, why, sizeof why) != TRR_OK) {
        snprintf(out->reason, sizeof out->reason, "%s", why);
        free(source);
        return;
    }

    static const char version[] = "mma-probe-3";
    const void *parts[5] = {name, driver, source, wg_source, version};
    size_t sizes[5] = {strlen(name), strlen(driver), size, wg_size, sizeof version - 1};
    uint64_t key = trr_hash_parts(parts, sizes, 5);
    char dir[1024], path[1200];
    int have_dir = trr_cache_dir(NULL, dir, sizeof dir) == TRR_OK;
    if (have_dir) {
        snprintf(path, sizeof path, "%s/opencl-mma-probe-%016llx.txt", dir, (unsigned long long)key);
        void *data = NULL;
        size_t n = 0;
        if (trr_file_read(path, &data, &n) == TRR_OK) {
            char text[512];
            snprintf(text, sizeof text, "%.*s", (int)(n < sizeof text ? n : sizeof text - 1), (const char *)data);
            free(data);
            /* "ok A C\nwgmma ok\n", "ok A C\nwgmma no <reason>\n" or "no <reason>\n" */
            char *line2 = strchr(text, '\n');
            if (line2) *line2++ = '\0';
            char *end2 = line2 ? strchr(line2, '\n') : NULL;
            if (end2) *end2 = '\0';
            if (!strncmp(text, "ok ", 3) && (text[3] == '0' || text[3] == '1') && text[4] == ' ' &&
                (text[5] == '0' || text[5] == '1') && line2 && !strncmp(line2, "wgmma ", 6)) {
                out->ok = 1;
                out->addr_mode = text[3] - '0';
                out->cp_async = text[5] == '1';
                out->wgmma = !strcmp(line2 + 6, "ok");
                snprintf(out->wgmma_reason, sizeof out->wgmma_reason, "%s",
                         out->wgmma ? "" : !strncmp(line2 + 6, "no ", 3) ? line2 + 9 : "unreadable probe record");
                free(source);
                free(wg_source);
                return;
            }
            if (!strncmp(text, "no ", 3)) {
                snprintf(out->reason, sizeof out->reason, "%s", text + 3);
                free(source);
                free(wg_source);
                return;
            }
        }
    }

    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ref->platform, 0};
    cl_context context = trr_cl.CreateContext(props, 1, &ref->device, NULL, NULL, &err);
    if (!context || err != CL_SUCCESS) {
        snprintf(out->reason, sizeof out->reason, "clCreateContext: %s", trr_cl_error_name(err));
        free(source);
        free(wg_source);
        return;
    }
    /* The address modes differ only in how a __local pointer becomes a shared-window address; cp.async is
     * optional (the kernel then stages tiles through registers). A compiler that refuses the PTX without
     * cp.async refuses it in every mode. */
    static const int modes[4][2] = {{0, 1}, {0, 0}, {1, 1}, {1, 0}};
    int verdict = 0, wg_verdict = 0;
    for (int i = 0; i < 4; i++) {
        verdict =
            try_mode(context, ref->device, source, size, modes[i][0], modes[i][1], out->reason, sizeof out->reason);
        if (verdict == 1) {
            out->ok = 1;
            out->addr_mode = modes[i][0];
            out->cp_async = modes[i][1];
            out->reason[0] = '\0';
            break;
        }
        if (verdict < 0 || (!modes[i][1] && strstr(out->reason, "refuses"))) break;
    }
    /* wgmma copies through cp.async, with the address mode the mma probe found */
    if (out->ok && !out->cp_async) snprintf(out->wgmma_reason, sizeof out->wgmma_reason, "cp.async did not pass");
    if (out->ok && out->cp_async) {
        wg_verdict = try_wgmma(context, ref->device, wg_source, wg_size, out->addr_mode, out->wgmma_reason,
                               sizeof out->wgmma_reason);
        out->wgmma = wg_verdict == 1;
        if (out->wgmma) out->wgmma_reason[0] = '\0';
    }
    trr_cl.ReleaseContext(context);
    free(source);
    free(wg_source);
    if (verdict >= 0 && wg_verdict >= 0 && have_dir) {
        char text[512];
        int n = !out->ok ? snprintf(text, sizeof text, "no %s\n", out->reason)
                : out->wgmma ? snprintf(text, sizeof text, "ok %d %d\nwgmma ok\n", out->addr_mode, out->cp_async)
                             : snprintf(text, sizeof text, "ok %d %d\nwgmma no %s\n", out->addr_mode, out->cp_async,
                                        out->wgmma_reason);
        /* best effort: an unwritable cache costs a probe next time */
        if (n > 0) trr_file_write_atomic(NULL, path, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
    }
}

void trr_cl_mma_probe(int index, const char *name, const char *driver, trr_cl_mma *out) {
    memset(out, 0, sizeof *out);
    const trr_cl_device_ref *ref = trr_cl_device_ref_get(index);
    if (!ref || index >= MAX_PROBED) {
        snprintf(out->reason, sizeof out->reason, "device %d was not probed", index);
        return;
    }
    pthread_mutex_lock(&probe_lock);
    if (!probed[index]) {
        run_probe(ref, name, driver, &verdicts[index]);
        probed[index] = 1;
    }
    *out = verdicts[index];
    pthread_mutex_unlock(&probe_lock);
}
