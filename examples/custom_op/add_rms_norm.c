/* A user row op from C: add_rms_norm, the residual add fused with rms_norm, as a transformer block runs them:
 *   h = x + r                               (the residual stream, an output of its own)
 *   y = h / sqrt(mean(h^2) + eps) * w       (per row of [M,N], w a vector [N])
 * trr_op_define_row_op, with a reference of whole rows, makes it a row op: one work-group per row on the GPUs,
 * whole rows on the CPU, its operands [M,N] or [N] (docs/custom-ops.md, Row ops). Kernels for the CPU (below), OpenCL C
 * (add_rms_norm.cl), CUDA C (add_rms_norm.cu) and Vulkan (add_rms_norm.comp, SPIR-V at build time). */
#include <math.h>
#include <stdint.h>

#include "custom_op.h"

#include "add_rms_norm_cl.h"
#include "add_rms_norm_cu.h"
#ifdef CUSTOM_OP_SPIRV
#include "add_rms_norm_spirv.h"
#endif

/* The CPU kernel: whole rows (the backend never splits one), h in f32 as the GPU kernels store it; the sum of
 * squares in double, which a sequential sum over a long row needs to stay within the bound. */
static void add_rms_norm_cpu(const trr_op_cpu_row_args *a) {
    void *const *op = a->operands;
    const int64_t *st = a->strides;
    const float eps = (float)a->params[0];
    const float *w = op[2];
    const int64_t ws = st[2]; /* a vector's element stride */
    for (int64_t i = 0; i < a->rows; i++) {
        const float *x = (const float *)op[0] + i * st[0];
        const float *r = (const float *)op[1] + i * st[1];
        float *y = (float *)op[3] + i * st[3];
        float *h = (float *)op[4] + i * st[4];
        double ss = 0.0;
        for (int64_t c = 0; c < a->cols; c++) {
            h[c] = x[c] + r[c];
            ss += (double)h[c] * h[c];
        }
        const float rstd = (float)(1.0 / sqrt(ss / (double)a->cols + eps));
        for (int64_t c = 0; c < a->cols; c++) y[c] = h[c] * rstd * w[c * ws];
    }
}

/* The float64 reference of one row: inputs x, r, w; outputs y, h. */
static void add_rms_norm_reference(const double *const *in, double *const *out, int64_t n, const double *params,
                                   void *user) {
    (void)user;
    const double *x = in[0], *r = in[1], *w = in[2];
    double *y = out[0], *h = out[1], ss = 0.0;
    for (int64_t c = 0; c < n; c++) {
        h[c] = x[c] + r[c];
        ss += h[c] * h[c];
    }
    const double rstd = 1.0 / sqrt(ss / (double)n + params[0]);
    for (int64_t c = 0; c < n; c++) y[c] = h[c] * rstd * w[c];
}

trr_status custom_op_define_add_rms_norm(void) {
    static const trr_param_info params[] = {{"eps", TRR_PARAM_F32, 1e-6, NULL, "added to the mean square", 1}};
    static const trr_op_def def = {
        .name = "add_rms_norm",
        .operands = "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]",
        .dtypes = {TRR_F32},
        .n_dtypes = 1,
        .params = params,
        .n_params = 1,
        /* threads per group, a power of two (the kernels' tree reduction); the first is the default */
        .tiles = {{"THREADS", "threads", {256, 128, 512, 1024}, 4}},
        .n_tiles = 1,
        .cuda = {.source = add_rms_norm_cu, .entry = "add_rms_norm"},
        .opencl = {.source = add_rms_norm_cl, .entry = "add_rms_norm"},
#ifdef CUSTOM_OP_SPIRV
        .vulkan = {.spirv = add_rms_norm_spirv, .spirv_words = sizeof add_rms_norm_spirv / sizeof add_rms_norm_spirv[0]},
#endif
        .launch = {{"M", NULL, NULL}, "THREADS"}, /* one group per row */
        .bound = TRR_BOUND_MAX_REL,
        .flops_per_point = 5,
    };
    trr_op op;
    return trr_op_define_row_op(&def, add_rms_norm_reference, add_rms_norm_cpu, &op);
}
