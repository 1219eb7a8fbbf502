/* User-defined ops (trr_op_define, docs/custom-ops.md): an inconsistent definition is refused with its reason, a
 * kernel that does not compile is TRR_ERR_COMPILE with the compiler's log, and copies of built-in element-wise
 * ops defined through the public API give the built-ins' bits on cpu, OpenCL and Vulkan; the built-ins declared
 * by a public definition pass trr_op_define's checks and make the same row, and copies of silu and gelu from
 * their own definitions and kernel sources give their bits on cpu, OpenCL, Vulkan and CUDA; the tuner's space and
 * database take user ops; a launch past the device's threads per group is refused with the limit. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "builtin_copy_text.h"
#include "embedded.h"
#include "test_support.h"
#include "tune.h"
#include "tune_space.h"
#include "user_op.h"
#include "vmath.h" /* backend_cpu: the CPU backend's own f32 loops of gelu and silu */

#ifdef TRR_ADD_COPY_SPIRV /* tests/unit/kernels/add_copy.comp, compiled by the build */
#include "add_copy_spirv.h"
#endif

/* ---- the copies: add (two inputs) and silu (one), in C and OpenCL C, the built-ins' arithmetic ---- */

static void add_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = (const float *)a->operands[0] + r * a->row_strides[0];
        const float *y = (const float *)a->operands[1] + r * a->row_strides[1];
        float *z = (float *)a->operands[2] + r * a->row_strides[2];
        for (int64_t c = 0; c < a->cols; c++) z[c] = x[c] + y[c];
    }
}
static double add_reference(const double *in, const double *params, void *user) {
    return (void)params, (void)user, in[0] + in[1];
}

static const char add_cl[] =
    "__kernel void add_copy(__global const float *x, __global const float *y, __global float *z, long xo, long yo,\n"
    "                       long zo, int rows, int cols, int xs, int ys, int zs) {\n"
    "    int c = (int)get_global_id(0), r = (int)get_global_id(1);\n"
    "    if (c >= cols || r >= rows) return;\n"
    "    z[zo + (long)r * zs + c] = x[xo + (long)r * xs + c] + y[yo + (long)r * ys + c];\n"
    "}\n";

/* kernels/opencl/elementwise.cl's silu: VEC elements a work-item through vloadN / vstoreN where the call is one
 * packed row (as the built-in's flat kernel), else one element (its strided kernel); the same expression and no
 * contraction, so the compiler's vector and scalar code are the built-in's */
static const char silu_cl[] =
    "#pragma OPENCL FP_CONTRACT OFF\n" /* as kernels/opencl/common.cl */
    "#define CAT_(a, b) a##b\n"
    "#define CAT(a, b) CAT_(a, b)\n"
    "#define SILU_H(x) exp(-0.5f * fabs(x))\n"
    "#define SILU(x) (((x) < 0.0f ? (x) * SILU_H(x) * SILU_H(x) : (x)) / (1.0f + SILU_H(x) * SILU_H(x)))\n"
    "__kernel void silu_copy(__global const float *x, __global float *y, long xo, long yo, int rows, int cols,\n"
    "                        int xs, int ys) {\n"
    "    int c = (int)get_global_id(0), r = (int)get_global_id(1);\n"
    "    if (rows == 1) {\n"
    "        x += xo, y += yo;\n"
    "        if ((c + 1) * VEC <= cols) {\n"
    "            CAT(float, VEC) v = CAT(vload, VEC)(c, x);\n"
    "            CAT(vstore, VEC)(SILU(v), c, y);\n"
    "        } else {\n"
    "            for (int i = c * VEC; i < cols; i++) { float v = x[i]; y[i] = SILU(v); }\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "    if (c >= cols || r >= rows) return;\n"
    "    float v = x[xo + (long)r * xs + c];\n"
    "    y[yo + (long)r * ys + c] = SILU(v);\n"
    "}\n";
static double silu_reference(const double *in, const double *params, void *user) {
    return (void)params, (void)user, in[0] / (1.0 + exp(-in[0]));
}

static trr_op_def base_def(const char *name, const char *operands) {
    trr_op_def d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.operands = operands;
    d.dtypes[0] = TRR_F32;
    d.n_dtypes = 1;
    d.tiles[0] = (trr_tile_param){"BLOCK", "threads", {64, 128, 256}, 3};
    d.n_tiles = 1;
    d.launch = (trr_op_launch){{"N/BLOCK", "M", NULL}, "BLOCK"};
    d.reference = add_reference;
    d.flops_per_point = 1;
    return d;
}

static trr_op define_add_copy(void) {
    trr_op_def d = base_def("add_copy", "x[M,N], y[M,N] -> z[M,N]");
    d.cpu = add_cpu;
    d.opencl = (trr_kernel_code){add_cl, NULL, 0, "add_copy"};
#ifdef TRR_ADD_COPY_SPIRV
    d.vulkan = (trr_kernel_code){NULL, add_copy_spirv, sizeof add_copy_spirv / sizeof add_copy_spirv[0], "main"};
#endif
    d.bound = TRR_BOUND_EXACT_F32;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    return op;
}

static trr_op define_silu_copy(void) {
    trr_op_def d = base_def("silu_copy", "x[M,N] -> y[M,N]");
    d.tiles[1] = (trr_tile_param){"VEC", "vector_width", {4, 2, 8}, 3};
    d.n_tiles = 2;
    d.launch.groups[0] = "N/BLOCK"; /* a packed row runs VEC elements a work-item: a few groups idle */
    d.opencl = (trr_kernel_code){silu_cl, NULL, 0, "silu_copy"};
    d.reference = silu_reference;
    d.transcendental = 1;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    return op;
}

/* ---- definitions ---- */

static void expect_refused(const trr_op_def *d, const char *reason) {
    trr_op op = TRR_OP_COPY;
    const trr_status st = trr_op_define(d, &op);
    cr_expect_eq(st, TRR_ERR_INVALID_ARGUMENT, "%s: status %s", d->name, trr_status_name(st));
    cr_expect(strstr(trr_last_error(NULL), reason), "'%s' does not say '%s'", trr_last_error(NULL), reason);
    cr_expect_eq(op, TRR_OP_COPY, "a refused definition wrote its id");
}

Test(user_op, inconsistent_definitions_are_refused_with_the_reason) {
    trr_op_def d = base_def("bad", "x[M,N], y[M,K] -> z[M,N]");
    d.cpu = add_cpu;
    expect_refused(&d, "every operand must have the first one's dims");
    d = base_def("bad", "x[M,N], y[M,N] -> z[M,N]");
    d.cpu = add_cpu;
    d.launch.groups[0] = "K/BLOCK"; /* a dim no operand has */
    expect_refused(&d, "\"K\" in \"K/BLOCK\" is neither a dim of the operands nor a tile parameter");
    d.launch.groups[0] = "N/BLOCK";
    d.launch.threads = "WARPS*32"; /* an unknown tile parameter */
    expect_refused(&d, "\"WARPS\"");
    d.launch.threads = "BLOCK";
    d.tiles[0].field = "variant";
    expect_refused(&d, "not a trr_config tile field");
    d.tiles[0].field = "threads";
    d.tiles[0].n_candidates = 0;
    expect_refused(&d, "needs 1 to");
    d.tiles[0].n_candidates = 3;
    d.reference = NULL;
    expect_refused(&d, "reference is required");
    d.reference = add_reference;
    d.name = "add";
    expect_refused(&d, "an op of that name exists");
    d.name = "bad";
    d.operands = "x[M,N], y[M,N], u[M,N] -> z[M,N]";
    expect_refused(&d, "one or two inputs and one output");
    d.operands = "x[M,N] y[M,N] -> z[M,N]";
    expect_refused(&d, "expected \"->\"");
    d.operands = "x[M,N], y[M,N] -> z[M,N]";
    d.cpu = NULL;
    expect_refused(&d, "no kernel for any API");
    d.cpu = add_cpu;
    static const trr_param_info twice[] = {{"alpha", TRR_PARAM_F32, 1.0, NULL, "", 0},
                                           {"alpha", TRR_PARAM_F32, 1.0, NULL, "", 0}};
    d.params = twice;
    d.n_params = 2;
    expect_refused(&d, "parameter alpha is declared twice");
    d.n_params = 0;
    d.vulkan = (trr_kernel_code){"void main() {}", NULL, 0, "main"};
    expect_refused(&d, "vulkan takes SPIR-V words");
    d.vulkan = (trr_kernel_code){0};
    /* the same definition, now consistent, is taken: its id follows the built-ins and names it */
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_geq((int)op, TRR_OP_COUNT);
    int count = 0;
    cr_expect_eq(trr_op_count(&count), TRR_OK);
    cr_expect_eq(count, (int)op + 1);
    trr_op found;
    cr_expect_eq(trr_op_from_name("bad", &found), TRR_OK);
    cr_expect_eq(found, op);
    trr_op_info info;
    cr_assert_eq(trr_op_get_info(op, &info), TRR_OK);
    cr_expect_str_eq(info.name, "bad");
    cr_expect_eq(info.n_inputs, 2);
    cr_expect_eq(trr_op_define(&d, &op), TRR_ERR_INVALID_ARGUMENT, "defined twice");
}

/* ---- bit-identical copies ---- */

static uint32_t rng = 12345u;
static float random_value(void) {
    rng = rng * 1664525u + 1013904223u;
    return ((float)(rng >> 8) / 16777216.0f - 0.5f) * 40.0f; /* silu's both tails and its middle */
}

/* Runs the built-in and the copy on the same inputs, rows x cols with row stride ld (padding between rows) at an
 * odd element offset, the outputs poisoned differently, and compares the outputs' bytes, padding included. */
static void expect_same_bits(trr_context *ctx, trr_op builtin, trr_op copy, int n_inputs, int64_t rows, int64_t cols,
                             int64_t ld) {
    const size_t elems = (size_t)(rows * ld + 3);
    const size_t bytes = elems * 4;
    float *host = malloc(bytes);
    unsigned char *got_builtin = malloc(bytes), *got_copy = malloc(bytes);
    cr_assert(host && got_builtin && got_copy);
    trr_buffer *in[2], *out[2];
    trr_tensor x[2], z[2];
    for (int i = 0; i < n_inputs; i++) {
        for (size_t e = 0; e < elems; e++) host[e] = random_value();
        cr_assert_eq(trr_buffer_create(ctx, bytes, &in[i]), TRR_OK);
        cr_assert_eq(trr_buffer_write(ctx, in[i], 0, host, bytes), TRR_OK);
        cr_assert_eq(trr_tensor_2d(in[i], 12, TRR_F32, rows, cols, ld, &x[i]), TRR_OK);
    }
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(trr_buffer_create(ctx, bytes, &out[k]), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, out[k], 0, bytes, k ? 0xA5 : 0x5A), TRR_OK);
        cr_assert_eq(trr_tensor_2d(out[k], 12, TRR_F32, rows, cols, ld, &z[k]), TRR_OK);
    }
    const trr_tensor *ops_b[3] = {&x[0], n_inputs == 2 ? &x[1] : &z[0], &z[0]};
    const trr_tensor *ops_c[3] = {&x[0], n_inputs == 2 ? &x[1] : &z[1], &z[1]};
    cr_assert_eq(trr_op_run(ctx, builtin, ops_b, NULL), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_op_run(ctx, copy, ops_c, NULL), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, out[0], 0, got_builtin, bytes), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, out[1], 0, got_copy, bytes), TRR_OK);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const size_t at = 12 + (size_t)(r * ld + c) * 4;
            float fb, fc;
            memcpy(&fb, got_builtin + at, 4);
            memcpy(&fc, got_copy + at, 4);
            cr_assert(!memcmp(got_builtin + at, got_copy + at, 4),
                      "op %d, %lldx%lld (ld %lld): element (%lld, %lld) is %a, the built-in's %a", (int)builtin,
                      (long long)rows, (long long)cols, (long long)ld, (long long)r, (long long)c, (double)fc,
                      (double)fb);
        }
    /* outside the view: each output keeps its own poison */
    for (size_t b = 0; b < 12; b++) cr_assert_eq(got_copy[b], 0xA5);
    for (int i = 0; i < n_inputs; i++) trr_buffer_destroy(in[i]);
    for (int k = 0; k < 2; k++) trr_buffer_destroy(out[k]);
    free(host), free(got_builtin), free(got_copy);
}

static void shapes(trr_context *ctx, trr_op builtin, trr_op copy, int n_inputs) {
    expect_same_bits(ctx, builtin, copy, n_inputs, 1, 1, 1);
    expect_same_bits(ctx, builtin, copy, n_inputs, 1, 4099, 4099); /* packed: arrives as one row */
    expect_same_bits(ctx, builtin, copy, n_inputs, 17, 781, 800);  /* padded rows */
    expect_same_bits(ctx, builtin, copy, n_inputs, 1000, 3, 5);
}

Test(user_op, add_copy_is_bit_identical_on_cpu) {
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    shapes(ctx, TRR_OP_ADD, define_add_copy(), 2);
    trr_context_destroy(ctx);
}

Test(user_op, add_and_silu_copies_are_bit_identical_on_opencl) {
    trr_context *ctx = open_device_or_skip("opencl:0", NULL);
    shapes(ctx, TRR_OP_ADD, define_add_copy(), 2);
    const trr_op silu = define_silu_copy();
    shapes(ctx, TRR_OP_SILU, silu, 1);
    /* a tile parameter from an override reaches the kernel as its define (the launch reads it too) */
    trr_config cfg = {.threads = 64};
    cr_assert_eq(trr_config_override(ctx, silu, &cfg), TRR_OK);
    expect_same_bits(ctx, TRR_OP_SILU, silu, 1, 17, 781, 800);
    trr_config last;
    cr_assert_eq(trr_config_last(ctx, &last), TRR_OK);
    cr_expect_eq(last.threads, 64);
    /* rank-1 operands: the launch has no rows, so a strided 2-D view runs a row at a time */
    trr_op_def flat = base_def("add_flat", "x[N], y[N] -> z[N]");
    flat.opencl = (trr_kernel_code){add_cl, NULL, 0, "add_copy"};
    flat.launch.groups[1] = NULL;
    trr_op add_flat;
    cr_assert_eq(trr_op_define(&flat, &add_flat), TRR_OK, "%s", trr_last_error(NULL));
    expect_same_bits(ctx, TRR_OP_ADD, add_flat, 2, 17, 781, 800);
    expect_same_bits(ctx, TRR_OP_ADD, add_flat, 2, 1, 4099, 4099);
    trr_context_destroy(ctx);
}

Test(user_op, add_copy_is_bit_identical_on_vulkan) {
#ifndef TRR_ADD_COPY_SPIRV
    cr_skip_test("built without glslangValidator: no SPIR-V for the Vulkan copy");
#else
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    shapes(ctx, TRR_OP_ADD, define_add_copy(), 2);
    trr_context_destroy(ctx);
#endif
}

/* A launch past the device's threads per group is refused on each GPU API with the limit, before any kernel is
 * built, and the output keeps its poison. */
static void expect_threads_refused(trr_op op, const char *spec, const char *backend) {
    trr_context *ctx = open_device_or_skip(spec, backend);
    trr_config cfg = {.threads = 8192}; /* past PoCL's 4096 and lavapipe's 1024 */
    cr_assert_eq(trr_config_override(ctx, op, &cfg), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer *buf;
    cr_assert_eq(trr_buffer_create(ctx, 3 * 4096 * 4, &buf), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, buf, 0, 3 * 4096 * 4, 0x7F), TRR_OK);
    trr_tensor t[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(trr_tensor_2d(buf, (size_t)i * 4096 * 4, TRR_F32, 1, 4096, 4096, &t[i]), TRR_OK);
    const trr_tensor *ops[3] = {&t[0], &t[1], &t[2]};
    cr_expect_eq(trr_op_run(ctx, op, ops, NULL), TRR_ERR_UNSUPPORTED, "%s", spec);
    char want[64];
    snprintf(want, sizeof want, "%s: add_copy: 8192 threads per group, the device takes up to", backend);
    cr_expect(strstr(trr_last_error(ctx), want), "'%s' does not say '%s'", trr_last_error(ctx), want);
    unsigned char z[16];
    cr_assert_eq(trr_buffer_read(ctx, buf, 2 * 4096 * 4, z, sizeof z), TRR_OK);
    for (size_t b = 0; b < sizeof z; b++) cr_expect_eq(z[b], 0x7F, "%s wrote its output", spec);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

Test(user_op, a_launch_past_the_device_threads_is_refused) {
    const trr_op op = define_add_copy();
    expect_threads_refused(op, "opencl:0", "opencl");
#ifdef TRR_ADD_COPY_SPIRV
    expect_threads_refused(op, "vulkan:0", "vulkan");
#endif
}

/* ---- the built-ins declared by the public definition (core/op_table.c) ---- */

static void no_cpu(const trr_op_cpu_args *a) { (void)a; }
static void no_row_cpu(const trr_op_cpu_row_args *a) { (void)a; }

static const trr_op declared[] = {TRR_OP_ADD, TRR_OP_GELU, TRR_OP_SILU, TRR_OP_RMS_NORM, TRR_OP_LAYER_NORM};

/* Each built-in's definition, under another name and with a CPU function (a definition of the public API names
 * its code; the built-in's is its stem's), is taken by trr_op_define and gives a row with the built-in's facts:
 * operands and their rules, dtypes, parameters, shape rule, bound, FLOPs, the transcendental hint. The built-in's
 * row keeps its stem and no user path, so the backends run it as before. */
Test(user_op, builtin_definitions_pass_the_public_checks_and_make_the_same_row) {
    cr_assert_null(trr_op_table_fault(), "%s", trr_op_table_fault());
    for (size_t i = 0; i < sizeof declared / sizeof declared[0]; i++) {
        const trr_op_desc *b = trr_op_desc_get(declared[i]);
        cr_assert(b && b->defined, "op %d is not declared by a definition", (int)declared[i]);
        cr_expect_null(b->user, "%s: a built-in takes no user path", b->name);
        cr_expect(b->kernel && strcmp(b->kernel, b->name), "%s: its kernels are its stem's", b->name);
        trr_op_def def = b->defined->def;
        char name[64];
        snprintf(name, sizeof name, "%s_public", b->name);
        def.name = name;
        trr_op op;
        if (b->defined->row_op) {
            cr_assert_eq(trr_op_define_row_op(&def, b->defined->row_reference, no_row_cpu, &op), TRR_OK, "%s",
                         trr_last_error(NULL));
        } else {
            def.cpu = no_cpu;
            cr_assert_eq(trr_op_define(&def, &op), TRR_OK, "%s", trr_last_error(NULL));
        }
        const trr_op_desc *u = trr_op_desc_get(op);
        cr_expect_str_eq(u->operands, b->operands);
        cr_expect_eq(u->n_inputs, b->n_inputs, "%s", b->name);
        cr_expect_eq(u->shape, b->shape, "%s", b->name);
        cr_expect_eq(u->exact, b->exact, "%s", b->name);
        cr_expect_eq(u->flops_per_point, b->flops_per_point, "%s", b->name);
        cr_expect_eq(u->transcendental, b->transcendental, "%s", b->name);
        cr_expect_eq(u->bytewise + u->converts + b->bytewise + b->converts, 0, "%s", b->name);
        for (int v = 0; v < TRR_SLOTS; v++) {
            const trr_operand_rule *ru = &u->operand[v], *rb = &b->operand[v];
            cr_expect_eq(!ru->name, !rb->name, "%s: slot %d", b->name, v);
            if (!ru->name || !rb->name) continue;
            cr_expect_str_eq(ru->name, rb->name);
            cr_expect(ru->planes == rb->planes && ru->rows == rb->rows && ru->cols == rb->cols &&
                          ru->vector == rb->vector && ru->transposable == rb->transposable &&
                          ru->optional == rb->optional,
                      "%s: slot %d's rule differs", b->name, v);
        }
        cr_expect_eq(u->n_signatures, b->n_signatures, "%s", b->name);
        for (int k = 0; k < u->n_signatures && k < b->n_signatures; k++)
            cr_expect(!memcmp(&u->signatures[k], &b->signatures[k], sizeof u->signatures[k]), "%s: signature %d",
                      b->name, k);
        cr_expect_eq(u->n_params, b->n_params, "%s", b->name);
        for (int k = 0; k < u->n_params && k < b->n_params; k++) {
            const trr_param_info *pu = &u->params[k], *pb = &b->params[k];
            cr_expect_str_eq(pu->name, pb->name);
            cr_expect_str_eq(pu->doc, pb->doc);
            cr_expect(pu->type == pb->type && pu->default_value == pb->default_value &&
                          pu->nonnegative == pb->nonnegative && !pu->choices == !pb->choices,
                      "%s: parameter %s differs", b->name, pb->name);
        }
    }
}

/* ---- copies from the built-ins' own definitions and kernel sources ----
 * silu and gelu in f32, each defined by the built-in's own trr_op_def (reference, bound, hint) with the code the
 * built-in runs: on the CPU the backend's f32 loop (backend_cpu/vmath.h), on OpenCL and CUDA kernels/<api>/
 * elementwise's text under one kernel of the public arguments (builtin_copy_text.h), on Vulkan the SPIR-V the
 * backend was built with, whose scalar path the public push constants select (their third word is the dtype, 0,
 * where the built-in sets its vector flag). Each must give the built-in's bits. */

static void silu_builtin_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++)
        trr_cpu_silu_f32((const float *)a->operands[0] + r * a->row_strides[0],
                         (float *)a->operands[1] + r * a->row_strides[1], a->cols);
}
static void gelu_builtin_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++)
        trr_cpu_gelu_f32((const float *)a->operands[0] + r * a->row_strides[0],
                         (float *)a->operands[1] + r * a->row_strides[1], a->cols);
}

static const trr_op unary_builtins[] = {TRR_OP_SILU, TRR_OP_GELU};

/* The built-in's definition in f32, named after it and the API, without code yet. */
static trr_op_def builtin_def(trr_op builtin, const char *api) {
    const trr_op_desc *d = trr_op_desc_get(builtin);
    cr_assert(d && d->defined, "op %d is not declared by a definition", (int)builtin);
    static char name[64];
    snprintf(name, sizeof name, "%s_%s_copy", d->name, api);
    trr_op_def def = d->defined->def;
    def.name = name;
    def.dtypes[0] = TRR_F32;
    def.n_dtypes = 1;
    return def;
}

/* Defines def (code, its kernel's text or words, freed after: the definition keeps a copy) and checks it against
 * builtin on every device of backend (opencl:0, opencl:1, ...: PoCL and a GPU's driver alike); skipped where the
 * backend has none. */
static void expect_copy_bits(const char *backend, trr_op builtin, trr_op_def *def, void *code) {
    trr_op copy;
    cr_assert_eq(trr_op_define(def, &copy), TRR_OK, "%s", trr_last_error(NULL));
    free(code);
    int devices = 1;
    for (int b = 0, n = 0; trr_backend_count(&n) == TRR_OK && b < n; b++) {
        trr_backend_info info;
        if (trr_backend_get_info(b, &info) == TRR_OK && !strcmp(info.name, backend) && info.device_count > 1)
            devices = info.device_count;
    }
    for (int i = 0; i < devices; i++) {
        char spec[32];
        snprintf(spec, sizeof spec, "%s:%d", backend, i);
        trr_context *ctx = open_device_or_skip(spec, backend);
        shapes(ctx, builtin, copy, 1);
        trr_context_destroy(ctx);
    }
}

Test(user_op, silu_and_gelu_copies_of_the_builtin_code_are_bit_identical_on_cpu) {
    for (int i = 0; i < 2; i++) {
        trr_op_def d = builtin_def(unary_builtins[i], "cpu");
        d.cpu = unary_builtins[i] == TRR_OP_SILU ? silu_builtin_cpu : gelu_builtin_cpu;
        expect_copy_bits("cpu", unary_builtins[i], &d, NULL);
    }
}

Test(user_op, silu_and_gelu_copies_of_the_builtin_text_are_bit_identical_on_opencl) {
    for (int i = 0; i < 2; i++) {
        trr_op_def d = builtin_def(unary_builtins[i], "opencl");
        d.tiles[0] = (trr_tile_param){"VEC", "vector_width", {4, 1, 8}, 3};
        d.tiles[1] = (trr_tile_param){"THREADS", "threads", {256, 64}, 2};
        d.n_tiles = 2;
        char *text = builtin_copy_opencl(trr_op_desc_get(unary_builtins[i])->name);
        d.opencl = (trr_kernel_code){text, NULL, 0, "copy_of_builtin"};
        d.launch = (trr_op_launch){{"N/THREADS", "M", NULL}, "THREADS"};
        expect_copy_bits("opencl", unary_builtins[i], &d, text);
    }
}

#ifdef TRR_TEST_VULKAN_KERNELS /* the library's embedded SPIR-V */
extern const trr_embedded_file trr_vulkan_kernels[];
extern const size_t trr_vulkan_kernels_count;
#endif

Test(user_op, silu_and_gelu_copies_of_the_builtin_spirv_are_bit_identical_on_vulkan) {
#ifndef TRR_TEST_VULKAN_KERNELS
    cr_skip_test("the Vulkan backend is not built");
#else
    for (int i = 0; i < 2; i++) {
        char spv[64];
        snprintf(spv, sizeof spv, "elementwise_%s_f32.spv", trr_op_desc_get(unary_builtins[i])->name);
        const trr_embedded_file *f = trr_embedded_find(trr_vulkan_kernels, trr_vulkan_kernels_count, spv);
        cr_assert(f && f->size % 4 == 0, "%s is not embedded", spv);
        uint32_t *words = malloc(f->size);
        cr_assert(words);
        memcpy(words, f->data, f->size); /* the embedded bytes need not be 4-byte aligned */
        trr_op_def d = builtin_def(unary_builtins[i], "vulkan");
        /* specialization constant 1 the elements an invocation takes (EPT), 0 the threads */
        d.tiles[0] = (trr_tile_param){"EPT", "block_k", {4, 1}, 2};
        d.tiles[1] = (trr_tile_param){"THREADS", "threads", {128, 64}, 2};
        d.n_tiles = 2;
        d.vulkan = (trr_kernel_code){NULL, words, f->size / 4, "main"};
        d.launch = (trr_op_launch){{"N/THREADS/EPT", "M", NULL}, "THREADS"};
        expect_copy_bits("vulkan", unary_builtins[i], &d, words);
    }
#endif
}

/* on a CUDA device where there is one (the GPU machine's run); tests/backend/cuda compiles the copies anywhere */
Test(user_op, silu_and_gelu_copies_of_the_builtin_text_are_bit_identical_on_cuda) {
    for (int i = 0; i < 2; i++) {
        trr_op_def d = builtin_def(unary_builtins[i], "cuda");
        d.tiles[0] = (trr_tile_param){"THREADS", "threads", {256, 128}, 2};
        d.tiles[1] = (trr_tile_param){"UNROLL", "block_k", {4, 1, 2}, 3};
        d.n_tiles = 2;
        char *text = builtin_copy_cuda(trr_op_desc_get(unary_builtins[i])->name);
        d.cuda = (trr_kernel_code){text, NULL, 0, "copy_of_builtin"};
        d.launch = (trr_op_launch){{"N/THREADS/UNROLL/4", "M", NULL}, "THREADS"};
        expect_copy_bits("cuda", unary_builtins[i], &d, text);
    }
}

/* Two dtypes, one source: TRR_DTYPE selects the element type at compile time (f16 widened to f32 and rounded
 * back to nearest even, as the built-in add does). */
static const char add_any_cl[] =
    "#if TRR_DTYPE == 1\n"
    "#define T half\n"
    "#define LOAD(p, i) vload_half((size_t)(i), (p))\n"
    "#define STORE(v, p, i) vstore_half_rte((v), (size_t)(i), (p))\n"
    "#else\n"
    "#define T float\n"
    "#define LOAD(p, i) ((p)[i])\n"
    "#define STORE(v, p, i) ((p)[i] = (v))\n"
    "#endif\n"
    "__kernel void add_any(__global const T *x, __global const T *y, __global T *z, long xo, long yo, long zo,\n"
    "                      int rows, int cols, int xs, int ys, int zs) {\n"
    "    int c = (int)get_global_id(0), r = (int)get_global_id(1);\n"
    "    if (c >= cols || r >= rows) return;\n"
    "    STORE(LOAD(x, xo + (long)r * xs + c) + LOAD(y, yo + (long)r * ys + c), z, zo + (long)r * zs + c);\n"
    "}\n";

Test(user_op, one_source_serves_each_dtype_through_trr_dtype) {
    trr_context *ctx = open_device_or_skip("opencl:0", NULL);
    trr_op_def d = base_def("add_any", "x[M,N], y[M,N] -> z[M,N]");
    d.dtypes[1] = TRR_F16;
    d.n_dtypes = 2;
    d.opencl = (trr_kernel_code){add_any_cl, NULL, 0, "add_any"};
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    shapes(ctx, TRR_OP_ADD, op, 2); /* f32 */
    /* f16: the bits of the built-in's f16 add, for every pair of f16 inputs drawn */
    const int64_t rows = 17, cols = 781, ld = 800;
    const size_t n = (size_t)(rows * ld), bytes = n * 2;
    uint16_t *h[2], *got[2];
    float *f = malloc(n * sizeof *f);
    trr_buffer *in[2], *out[2];
    trr_tensor x[2], z[2];
    cr_assert(f);
    for (int i = 0; i < 2; i++) {
        h[i] = malloc(bytes), got[i] = malloc(bytes);
        cr_assert(h[i] && got[i]);
        for (size_t e = 0; e < n; e++) f[e] = random_value() * 1000.0f; /* past f16's range too */
        trr_f32_to_f16(f, h[i], n);
        cr_assert_eq(trr_buffer_create(ctx, bytes, &in[i]), TRR_OK);
        cr_assert_eq(trr_buffer_write(ctx, in[i], 0, h[i], bytes), TRR_OK);
        cr_assert_eq(trr_tensor_2d(in[i], 0, TRR_F16, rows, cols, ld, &x[i]), TRR_OK);
        cr_assert_eq(trr_buffer_create(ctx, bytes, &out[i]), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, out[i], 0, bytes, 0x7e), TRR_OK);
        cr_assert_eq(trr_tensor_2d(out[i], 0, TRR_F16, rows, cols, ld, &z[i]), TRR_OK);
    }
    const trr_tensor *ops_b[3] = {&x[0], &x[1], &z[0]}, *ops_c[3] = {&x[0], &x[1], &z[1]};
    cr_assert_eq(trr_op_run(ctx, TRR_OP_ADD, ops_b, NULL), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_op_run(ctx, op, ops_c, NULL), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < 2; i++) cr_assert_eq(trr_buffer_read(ctx, out[i], 0, got[i], bytes), TRR_OK);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            cr_assert_eq(got[1][r * ld + c], got[0][r * ld + c], "f16 (%lld, %lld): 0x%04x, the built-in's 0x%04x",
                         (long long)r, (long long)c, got[1][r * ld + c], got[0][r * ld + c]);
    for (int i = 0; i < 2; i++) {
        trr_buffer_destroy(in[i]), trr_buffer_destroy(out[i]);
        free(h[i]), free(got[i]);
    }
    free(f);
    trr_context_destroy(ctx);
}

/* An edited kernel compiles again: two processes define the same op (same name, same id) with different
 * sources against one disk cache, and the second gets its own source's results. */
static const char mul_cl[] =
    "__kernel void add_copy(__global const float *x, __global const float *y, __global float *z, long xo, long yo,\n"
    "                       long zo, int rows, int cols, int xs, int ys, int zs) {\n"
    "    int c = (int)get_global_id(0), r = (int)get_global_id(1);\n"
    "    if (c >= cols || r >= rows) return;\n"
    "    z[zo + (long)r * zs + c] = x[xo + (long)r * xs + c] * y[yo + (long)r * ys + c];\n"
    "}\n";

/* In a child process: defines "edited" with source, runs it on 64 elements and exits 0 when z = x * y (multiply)
 * or z = x + y (not), 1 otherwise, 2 when OpenCL is absent. */
static void run_edited(const char *source, int multiply) {
    trr_context *ctx = NULL;
    if (trr_context_create("opencl:0", &ctx) != TRR_OK) _exit(2);
    trr_op_def d = base_def("edited", "x[N], y[N] -> z[N]");
    d.opencl = (trr_kernel_code){source, NULL, 0, "add_copy"};
    d.launch.groups[1] = NULL;
    trr_op op;
    float x[64], y[64], z[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i, y[i] = 3.0f;
    trr_buffer *b;
    trr_tensor tx, ty, tz;
    if (trr_op_define(&d, &op) != TRR_OK || op != TRR_OP_COUNT || trr_buffer_create(ctx, 768, &b) != TRR_OK ||
        trr_buffer_write(ctx, b, 0, x, 256) != TRR_OK || trr_buffer_write(ctx, b, 256, y, 256) != TRR_OK)
        _exit(1);
    trr_tensor_1d(b, 0, TRR_F32, 64, &tx);
    trr_tensor_1d(b, 256, TRR_F32, 64, &ty);
    trr_tensor_1d(b, 512, TRR_F32, 64, &tz);
    const trr_tensor *ops[3] = {&tx, &ty, &tz};
    if (trr_op_run(ctx, op, ops, NULL) != TRR_OK || trr_buffer_read(ctx, b, 512, z, 256) != TRR_OK) _exit(1);
    for (int i = 0; i < 64; i++)
        if (z[i] != (multiply ? x[i] * y[i] : x[i] + y[i])) _exit(1);
    _exit(0);
}

static int in_child(const char *source, int multiply) {
    fflush(NULL);
    const pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) run_edited(source, multiply);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

Test(user_op, an_edited_kernel_compiles_again) {
    char dir[] = "/tmp/trireme-user-cache-XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("TRIREME_CACHE_DIR", dir, 1);
    const int first = in_child(add_cl, 0);
    if (first == 2) {
        if (backend_required("opencl")) cr_assert_fail("opencl is required but absent");
        cr_skip_test("opencl:0 is not here");
    }
    cr_assert_eq(first, 0, "the first source's results are wrong");
    DIR *d = opendir(dir);
    cr_assert(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));) entries += strstr(e->d_name, "opencl-") == e->d_name;
    closedir(d);
    cr_assert_gt(entries, 0, "the first run cached no program in %s", dir);
    cr_expect_eq(in_child(mul_cl, 1), 0, "the edited source ran as the cached one");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Named parameters reach the kernels in order (an f32 as float, an int as int) and the reference; left out, they
 * take their defaults; unknown names and values outside the type are refused as for a built-in op. */
static void axpb_cpu(const trr_op_cpu_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = (const float *)a->operands[0] + r * a->row_strides[0];
        float *z = (float *)a->operands[1] + r * a->row_strides[1];
        for (int64_t c = 0; c < a->cols; c++) z[c] = (float)a->params[0] * x[c] + (float)(int)a->params[1];
    }
}
static double axpb_reference(const double *in, const double *params, void *user) {
    return (void)user, (double)(float)((float)params[0] * (float)in[0] + (float)(int)params[1]);
}
static const char axpb_cl[] =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void axpb(__global const float *x, __global float *z, long xo, long zo, int rows, int cols, int xs,\n"
    "                   int zs, float a, int b) {\n"
    "    int c = (int)get_global_id(0), r = (int)get_global_id(1);\n"
    "    if (c >= cols || r >= rows) return;\n"
    "    z[zo + (long)r * zs + c] = a * x[xo + (long)r * xs + c] + (float)b;\n"
    "}\n";

static void expect_axpb(trr_context *ctx, trr_op op, const trr_op_params *params, float a, int b) {
    float x[100], z[100];
    for (int i = 0; i < 100; i++) x[i] = random_value();
    trr_buffer *buf;
    cr_assert_eq(trr_buffer_create(ctx, 800, &buf), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, x, 400), TRR_OK);
    trr_tensor tx, tz;
    trr_tensor_2d(buf, 0, TRR_F32, 10, 10, 0, &tx);
    trr_tensor_2d(buf, 400, TRR_F32, 10, 10, 0, &tz);
    const trr_tensor *ops[2] = {&tx, &tz};
    cr_assert_eq(trr_op_run(ctx, op, ops, params), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, buf, 400, z, 400), TRR_OK);
    for (int i = 0; i < 100; i++) cr_expect_eq(z[i], a * x[i] + (float)b, "element %d", i);
    trr_buffer_destroy(buf);
}

Test(user_op, parameters_reach_the_kernels_and_take_their_defaults) {
    static const trr_param_info params[] = {{"a", TRR_PARAM_F32, 2.0, NULL, "slope", 0},
                                            {"b", TRR_PARAM_INT, 3.0, NULL, "offset", 0}};
    trr_op_def d = base_def("axpb", "x[M,N] -> z[M,N]");
    d.params = params;
    d.n_params = 2;
    d.cpu = axpb_cpu;
    d.opencl = (trr_kernel_code){axpb_cl, NULL, 0, "axpb"};
    d.reference = axpb_reference;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    trr_param_info p;
    cr_assert_eq(trr_op_get_param(op, 1, &p), TRR_OK);
    cr_expect_str_eq(p.name, "b");
    cr_expect_eq(p.type, TRR_PARAM_INT);
    static const char *const specs[] = {"cpu", "opencl:0"};
    for (int s = 0; s < 2; s++) {
        trr_context *ctx = NULL;
        if (trr_context_create(specs[s], &ctx) != TRR_OK) { /* OpenCL absent: the CPU alone, unless required */
            cr_assert(!s || !backend_required("opencl"), "opencl is required but: %s", trr_last_error(NULL));
            continue;
        }
        expect_axpb(ctx, op, NULL, 2.0f, 3);
        trr_op_params set = {0};
        cr_assert_eq(trr_op_params_parse(op, "a=-0.5,b=7", &set), TRR_OK, "%s", trr_last_error(NULL));
        expect_axpb(ctx, op, &set, -0.5f, 7);
        trr_op_params bad = {0};
        trr_op_params_set(&bad, "c", 1.0);
        float dummy[4] = {0};
        trr_buffer *buf;
        cr_assert_eq(trr_buffer_create(ctx, 32, &buf), TRR_OK);
        cr_assert_eq(trr_buffer_write(ctx, buf, 0, dummy, 16), TRR_OK);
        trr_tensor tx, tz;
        trr_tensor_1d(buf, 0, TRR_F32, 4, &tx);
        trr_tensor_1d(buf, 16, TRR_F32, 4, &tz);
        const trr_tensor *ops[2] = {&tx, &tz};
        cr_expect_eq(trr_op_run(ctx, op, ops, &bad), TRR_ERR_INVALID_ARGUMENT);
        trr_buffer_destroy(buf);
        trr_context_destroy(ctx);
    }
}

/* An API the definition gives no code is unsupported there, with the reason. */
Test(user_op, an_api_without_code_is_unsupported) {
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    const trr_op silu = define_silu_copy(); /* OpenCL only */
    trr_buffer *b;
    cr_assert_eq(trr_buffer_create(ctx, 64, &b), TRR_OK);
    trr_tensor x, y;
    trr_tensor_1d(b, 0, TRR_F32, 4, &x);
    trr_tensor_1d(b, 32, TRR_F32, 4, &y);
    const trr_tensor *ops[2] = {&x, &y};
    cr_expect_eq(trr_op_run(ctx, silu, ops, NULL), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(ctx), "gives no C function"), "%s", trr_last_error(ctx));
    trr_buffer_destroy(b);
    trr_context_destroy(ctx);
}

/* A kernel that does not compile: TRR_ERR_COMPILE with the compiler's log. */
Test(user_op, a_compile_error_returns_the_log) {
    trr_context *ctx = open_device_or_skip("opencl:0", NULL);
    trr_op_def d = base_def("broken", "x[N] -> y[N]");
    d.launch.groups[1] = NULL;
    d.opencl = (trr_kernel_code){"__kernel void broken(__global float *x) { this_is_not_declared = 1; }", NULL, 0,
                                 "broken"};
    d.reference = silu_reference;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *b;
    cr_assert_eq(trr_buffer_create(ctx, 64, &b), TRR_OK);
    trr_tensor x, y;
    trr_tensor_1d(b, 0, TRR_F32, 4, &x);
    trr_tensor_1d(b, 32, TRR_F32, 4, &y);
    const trr_tensor *ops[2] = {&x, &y};
    cr_expect_eq(trr_op_run(ctx, op, ops, NULL), TRR_ERR_COMPILE, "%s", trr_last_error(ctx));
    cr_expect(strstr(trr_last_error(ctx), "this_is_not_declared"), "no compiler log in '%s'", trr_last_error(ctx));
    trr_buffer_destroy(b);
    trr_context_destroy(ctx);
}

/* ---- tuning ---- */

/* The tuning database keeps the entries of an op this process has not defined (a user op whose library is not
 * loaded) when another process writes it, and matches them by name once the op is defined. */
Test(user_op, the_tuning_database_keeps_entries_of_ops_not_loaded) {
    char path[] = "/tmp/trireme-user-tune-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    trr_tune_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key.backend, sizeof e.key.backend, "cpu");
    snprintf(e.key.device, sizeof e.key.device, "some cpu");
    snprintf(e.key.driver, sizeof e.key.driver, "1");
    e.key.op = (trr_op)TRR_OP_LIMIT;
    snprintf(e.key.op_name, sizeof e.key.op_name, "later_op");
    e.key.bucket[0] = e.key.bucket[1] = e.key.bucket[2] = 1;
    e.shape[0] = e.shape[1] = e.shape[2] = 1;
    e.config.threads = 128;
    e.ms = e.default_ms = 1.0;
    char *text = NULL;
    cr_assert_eq(trr_tune_db_format(&e, 1, &text), TRR_OK);
    FILE *f = fopen(path, "w");
    cr_assert(f && fputs(text, f) >= 0);
    fclose(f);
    free(text);
    /* another process, without later_op, stores an entry of add: later_op's stays */
    trr_tune_entry add = e;
    add.key.op = TRR_OP_ADD;
    snprintf(add.key.op_name, sizeof add.key.op_name, "add");
    cr_assert_eq(trr_tune_db_store(NULL, path, &add, 1, NULL, 0), TRR_OK, "%s", trr_last_error(NULL));
    trr_tune_entry *entries = NULL;
    int n = 0;
    char why[256];
    cr_assert_eq(trr_tune_db_load(path, &entries, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(entries[0].key.op_name, "later_op");
    cr_expect_eq(entries[0].key.op, (trr_op)TRR_OP_LIMIT, "an op not defined here matches no call");
    free(entries);
    /* defined now, the same file names it */
    trr_op_def d = base_def("later_op", "x[N] -> y[N]");
    d.cpu = add_cpu;
    d.launch.groups[1] = NULL;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(trr_tune_db_load(path, &entries, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_expect_eq(entries[0].key.op, op);
    free(entries);
    unlink(path);
}

/* The tuner's space of a user op: every combination of its tile parameters' candidates, its default first. */
Test(user_op, the_tuning_space_is_the_tile_candidates) {
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    trr_op_def d = base_def("tiled", "x[M,N], y[M,N] -> z[M,N]");
    d.cpu = add_cpu;
    d.tiles[1] = (trr_tile_param){"ITEMS", "vector_width", {4, 1}, 2};
    d.n_tiles = 2;
    trr_op op;
    cr_assert_eq(trr_op_define(&d, &op), TRR_OK, "%s", trr_last_error(NULL));
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.rows = 1, call.cols = 4096;
    call.x.dtype = call.y.dtype = call.z.dtype = TRR_F32;
    trr_tune_candidate cand[16];
    int n = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, 16, &n), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(n, 6);
    cr_expect_eq(cand[0].listed.threads, 64);
    cr_expect_eq(cand[0].listed.vector_width, 4);
    int seen[3][2] = {{0}};
    for (int i = 0; i < n; i++) {
        const int t = cand[i].listed.threads == 64 ? 0 : cand[i].listed.threads == 128 ? 1 : 2;
        seen[t][cand[i].listed.vector_width == 4 ? 0 : 1]++;
        cr_expect(!cand[i].dropped, "%s", cand[i].reason);
    }
    for (int t = 0; t < 3; t++) cr_expect(seen[t][0] == 1 && seen[t][1] == 1, "threads %d", t);
    trr_context_destroy(ctx);
}
