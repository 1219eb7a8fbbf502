/* silu as a user op: the built-in silu's arithmetic and memory pattern in each API's kernel (silu_user.cu,
 * silu_user.cl, silu_user.comp, and the C function below), so `trireme bench --ops-lib ./libswiglu.so silu
 * silu_user` shows what a user kernel costs against the built-in one on the same device. */
#include <math.h>
#include <stdint.h>

#include "custom_op.h"

#include "silu_user_cl.h"
#include "silu_user_cu.h"
#ifdef CUSTOM_OP_SPIRV /* built where glslangValidator is */
#include "silu_user_spirv.h"
#endif

static void silu_user_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = (const float *)a->operands[0] + r * a->row_strides[0];
        float *y = (float *)a->operands[1] + r * a->row_strides[1];
        for (int64_t c = 0; c < a->cols; c++) {
            const float h = expf(-0.5f * fabsf(x[c]));
            y[c] = (x[c] < 0.0f ? x[c] * h * h : x[c]) / (1.0f + h * h);
        }
    }
}

static double silu_user_reference(const double *in, const double *params, void *user) {
    (void)params, (void)user;
    return in[0] / (1.0 + exp(-in[0]));
}

trr_status custom_op_define_silu_user(void) {
    static const trr_op_def def = {
        .name = "silu_user",
        .operands = "x[M,N] -> y[M,N]",
        .dtypes = {TRR_F32},
        .n_dtypes = 1,
        /* the built-in's config fields and its defaults first (op_table.c's streaming defaults): THREADS a group,
         * VEC floats a load, BLOCK_N elements a group; so the built-in's config (--config, the tuning database)
         * gives the user kernel the same shape */
        .tiles = {{"THREADS", "threads", {256, 128, 512}, 3},
                  {"VEC", "vector_width", {4, 1}, 2},
                  {"BLOCK_N", "block_n", {1024, 2048, 4096, 512}, 4}},
        .n_tiles = 3,
        .cuda = {.source = silu_user_cu, .entry = "silu_user"},
        .opencl = {.source = silu_user_cl, .entry = "silu_user"},
#ifdef CUSTOM_OP_SPIRV
        .vulkan = {.spirv = silu_user_spirv, .spirv_words = sizeof silu_user_spirv / sizeof silu_user_spirv[0]},
#endif
        .cpu = silu_user_cpu,
        .launch = {{"N/BLOCK_N", "M", NULL}, "THREADS"}, /* a group per BLOCK_N elements of a row, rows along y */
        .reference = silu_user_reference,
        .bound = TRR_BOUND_MAX_REL,
        .flops_per_point = 4,
        .transcendental = 1,
    };
    trr_op op;
    return trr_op_define(&def, &op);
}
