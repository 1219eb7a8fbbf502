/* The built-in element-wise kernels' own source text (kernels/<api>/elementwise.*) with one kernel of the public
 * argument convention (docs/custom-ops.md) around it, for copies of silu and gelu defined through trr_op_define in
 * f32: the copy runs the built-in's code, only reached through the user path's arguments. The kernels folder is
 * TRIREME_TEST_KERNELS_DIR where set, else TRR_KERNELS_DIR (the source tree the test was built from). The texts
 * are malloc'd. */
#ifndef TRR_TEST_BUILTIN_COPY_TEXT_H
#define TRR_TEST_BUILTIN_COPY_TEXT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#ifndef TRR_KERNELS_DIR
#error "TRR_KERNELS_DIR must name the kernels folder"
#endif

static inline char *kernel_file_text(const char *api, const char *name) {
    const char *dir = getenv("TRIREME_TEST_KERNELS_DIR"); /* a test binary carried to another machine's checkout */
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir && *dir ? dir : TRR_KERNELS_DIR, api, name);
    return read_text_file(path);
}

/* head, then the API's common file (the prelude) and its elementwise file, then tail */
static inline char *builtin_copy_join(const char *api, const char *common, const char *head, const char *tail) {
    char *pre = kernel_file_text(api, common);
    char *body = kernel_file_text(api, api[0] == 'c' && api[1] == 'u' ? "elementwise.cu" : "elementwise.cl");
    const size_t n = strlen(head) + strlen(pre) + strlen(body) + strlen(tail) + 3;
    char *text = malloc(n);
    cr_assert(text);
    snprintf(text, n, "%s%s\n%s\n%s", head, pre, body, tail);
    free(pre), free(body);
    return text;
}

/* OpenCL C: the built-in's flat kernel for one packed row (its VEC a tile parameter), its strided kernel for any
 * other call, each called as the function it also is, with x in y's unused place as the built-in's host passes
 * it. Entry "copy_of_builtin"; tiles VEC and THREADS; launch {"N/THREADS", "M"} over THREADS. */
static inline char *builtin_copy_opencl(const char *op) {
    char head[128];
    snprintf(head, sizeof head, "#define X_DT 0\n#define Z_DT 0\n#define ALIGNED 0\n#define ENTRY_%s\n", op);
    return builtin_copy_join(
        "opencl", "common.cl", head,
        "__kernel void copy_of_builtin(__global const float *x, __global float *y, long xo, long yo, int rows,\n"
        "                              int cols, int xs, int ys) {\n"
        "    if (rows == 1) flat(x, xo, x, xo, y, yo, cols);\n"
        "    else strided(x, xo, xs, x, xo, xs, y, yo, ys, rows, cols);\n"
        "}\n");
}

/* CUDA C for NVRTC: the built-in's prelude and flat kernel body (ew_flat_body, UNROLL 16-byte vectors a thread, a
 * tile parameter) over each row, a row a block along y. Entry "copy_of_builtin"; tiles THREADS and UNROLL; launch
 * {"N/THREADS/UNROLL/4", "M"} over THREADS. */
static inline char *builtin_copy_cuda(const char *op) {
    char head[96];
    snprintf(head, sizeof head, "#define DT 0\n#define ENTRY_%s\n", op);
    return builtin_copy_join(
        "cuda", "common.cuh", head,
        "extern \"C\" __global__ void copy_of_builtin(const float *x, float *y, long long xo, long long yo, int rows,\n"
        "                                           int cols, int xs, int ys) {\n"
        "    if ((int)blockIdx.y >= rows) return;\n"
        "    const float *xr = x + xo + (long long)blockIdx.y * xs;\n"
        "    float *yr = y + yo + (long long)blockIdx.y * ys;\n"
        "    ew_flat_body(xr, xr, yr, cols, ((unsigned long long)xr | (unsigned long long)yr) % 16 == 0);\n"
        "}\n");
}

#endif
