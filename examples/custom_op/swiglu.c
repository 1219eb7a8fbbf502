/* A user op from C: swiglu, y = x * silu(g), with kernels for the CPU (below), OpenCL C (swiglu.cl), CUDA C
 * (swiglu.cu) and Vulkan (swiglu.comp, compiled to SPIR-V at build time). Built as a shared library (with
 * silu_user.c's op) that exports one registration function, which `trireme conformance --ops-lib`, `trireme
 * bench --ops-lib` and trr_ops_library_load call (docs/custom-ops.md walks through it). */
#include <math.h>
#include <stdint.h>

#include "custom_op.h"

/* the kernel sources, embedded by the build (CMakeLists.txt): swiglu_cl, swiglu_cu (text), swiglu_spirv (words) */
#include "swiglu_cl.h"
#include "swiglu_cu.h"
#ifdef CUSTOM_OP_SPIRV /* built where glslangValidator is */
#include "swiglu_spirv.h"
#endif

/* The CPU kernel: the same arithmetic as the GPU kernels, in f32, over the normalised rows x cols view. */
static void swiglu_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = (const float *)a->operands[0] + r * a->row_strides[0];
        const float *g = (const float *)a->operands[1] + r * a->row_strides[1];
        float *y = (float *)a->operands[2] + r * a->row_strides[2];
        for (int64_t c = 0; c < a->cols; c++) {
            const float h = expf(-0.5f * fabsf(g[c]));
            const float silu = (g[c] < 0.0f ? g[c] * h * h : g[c]) / (1.0f + h * h);
            y[c] = x[c] * silu;
        }
    }
}

/* The float64 reference of one point: what the kernels are checked against. */
static double swiglu_reference(const double *in, const double *params, void *user) {
    (void)params, (void)user;
    return in[0] * (in[1] / (1.0 + exp(-in[1])));
}

/* The one symbol the library exports (TRR_OPS_REGISTER_SYMBOL): it defines the library's ops, swiglu here,
 * silu_user (silu_user.c) and add_rms_norm (add_rms_norm.c). */
__attribute__((visibility("default"))) trr_status trireme_register_ops(void);
trr_status trireme_register_ops(void) {
    static const trr_op_def def = {
        .name = "swiglu",
        .operands = "x[M,N], g[M,N] -> y[M,N]",
        .dtypes = {TRR_F32},
        .n_dtypes = 1,
        /* BLOCK threads per group, each doing ITEMS elements BLOCK apart; the first candidate is the default */
        .tiles = {{"BLOCK", "threads", {256, 128, 512, 1024}, 4}, {"ITEMS", "vector_width", {4, 1, 2, 8}, 4}},
        .n_tiles = 2,
        .cuda = {.source = swiglu_cu, .entry = "swiglu"},
        .opencl = {.source = swiglu_cl, .entry = "swiglu"},
#ifdef CUSTOM_OP_SPIRV
        .vulkan = {.spirv = swiglu_spirv, .spirv_words = sizeof swiglu_spirv / sizeof swiglu_spirv[0]},
#endif
        .cpu = swiglu_cpu,
        /* groups: N/(BLOCK*ITEMS) along x (a division rounds up), one row of the view per group along y */
        .launch = {{"N/BLOCK/ITEMS", "M", NULL}, "BLOCK"},
        .reference = swiglu_reference,
        .bound = TRR_BOUND_MAX_REL,
        .flops_per_point = 6,
        .transcendental = 1,
    };
    trr_op op;
    const trr_status st = trr_op_define(&def, &op);
    if (st != TRR_OK) return st;
    const trr_status st2 = custom_op_define_silu_user();
    return st2 != TRR_OK ? st2 : custom_op_define_add_rms_norm();
}
