/* The CPU backend against the float64 reference (core/reference.c), op by op, with odd shapes,
 * strides, transposes, offsets and bounds; plus the backend's own f16 conversion against core/half.c. Calls
 * are built by hand in the normalised form (host pointers are the CPU backend's buffer handles), so each case
 * also pins down exactly what the backend is given. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../backend_cpu/cpu_math.h"
#include "backend.h"
#include "half.h"
#include "reference.h"
#include "trireme.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double urand(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) * 0x1p-53;
}

static trr_context *ctx;

static void setup(void) {
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
}

static void teardown(void) {
    trr_context_destroy(ctx);
}

TestSuite(cpu, .init = setup, .fini = teardown);

static size_t esize(trr_dtype d) {
    return d == TRR_F32 ? 4 : d == TRR_U8 ? 1 : 2;
}

/* A host array of n elements of dtype, filled with uniform values in [lo, hi] (rounded to the dtype). */
static void *random_array(trr_dtype d, int64_t n, double lo, double hi) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * esize(d));
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) {
        double v = urand(lo, hi);
        if (d == TRR_F32) ((float *)p)[i] = (float)v;
        else if (d == TRR_F16) ((uint16_t *)p)[i] = trr_half_from_float((float)v);
        else ((uint8_t *)p)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return p;
}

static double get(const void *p, trr_dtype d, int64_t i) {
    if (d == TRR_F32) return ((const float *)p)[i];
    if (d == TRR_F16) return trr_half_to_float(((const uint16_t *)p)[i]);
    return ((const uint8_t *)p)[i];
}

/* Output array poisoned with NaN (0xff bytes: a NaN in f32 and f16, 255 in u8). */
static void *poisoned(trr_dtype d, int64_t n) {
    void *p = malloc((size_t)n * esize(d));
    cr_assert(p);
    memset(p, 0xff, (size_t)n * esize(d));
    return p;
}

static trr_operand operand(void *mem, trr_dtype d, int64_t offset, int64_t stride0) {
    trr_operand o;
    memset(&o, 0, sizeof o);
    o.mem = mem;
    o.dtype = d;
    o.offset = offset;
    o.stride0 = stride0;
    return o;
}

static void run(trr_call *call) {
    memset(&call->config, 0, sizeof call->config);
    trr_backend_cpu.choose_config(ctx, call);
    cr_assert_eq(trr_backend_cpu.check_config(ctx, call), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_backend_cpu.run(ctx, call), TRR_OK, "%s", trr_last_error(ctx));
}

typedef struct errors {
    double max_rel, max_abs, frob_err, frob_ref;
    int nonfinite;
} errors;

/* Compares rows x cols of out (row stride ldo, from element offset) with the packed reference. */
static errors compare(const void *out, trr_dtype d, int64_t offset, int64_t ldo, const double *ref, int64_t rows,
                      int64_t cols, double rel_floor) {
    errors e = {0, 0, 0, 0, 0};
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double v = get(out, d, offset + r * ldo + c), w = ref[r * cols + c];
            if (!isfinite(v) && isfinite(w)) e.nonfinite++;
            double a = fabs(v - w);
            double rel = a / fmax(fabs(w), rel_floor);
            if (a > e.max_abs) e.max_abs = a;
            if (rel > e.max_rel) e.max_rel = rel;
            e.frob_err += a * a;
            e.frob_ref += w * w;
        }
    e.frob_err = sqrt(e.frob_err);
    e.frob_ref = sqrt(e.frob_ref);
    return e;
}

/* ---- f16 conversion ---- */

Test(cpu, half_to_float_matches_core) {
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float a = trr_cpu_h2f((uint16_t)h), b = trr_half_to_float((uint16_t)h);
        if (isnan(b)) cr_assert(isnan(a), "0x%04x", h);
        else cr_assert(memcmp(&a, &b, sizeof a) == 0, "0x%04x: %a vs %a", h, (double)a, (double)b);
    }
}

Test(cpu, float_to_half_matches_core) {
    for (uint64_t x = 0; x <= 0xffffffffull; x += 997) {
        uint32_t bits = (uint32_t)x;
        float f;
        memcpy(&f, &bits, sizeof f);
        uint16_t a = trr_cpu_f2h(f), b = trr_half_from_float(f);
        if (isnan(f)) cr_assert((a & 0x7c00) == 0x7c00 && (a & 0x3ff), "nan 0x%08x -> 0x%04x", bits, a);
        else cr_assert_eq(a, b, "0x%08x (%a): 0x%04x vs 0x%04x", bits, (double)f, a, b);
    }
    /* every tie between adjacent halves, and its neighbours */
    for (uint32_t h = 0; h < 0x7bffu; h++) {
        double mid = 0.5 * ((double)trr_half_to_float((uint16_t)h) + (double)trr_half_to_float((uint16_t)(h + 1)));
        float f = (float)mid;
        float around[3] = {nextafterf(f, 0.0f), f, nextafterf(f, INFINITY)};
        for (int i = 0; i < 3; i++)
            cr_assert_eq(trr_cpu_f2h(around[i]), trr_half_from_float(around[i]), "near tie above 0x%04x", h);
    }
}

/* ---- elementwise ---- */

static const int64_t sizes[] = {1, 3, 17, 127, 781, 1000, 1823, 4099};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* rows x cols with row strides pad larger than the row. */
static void elementwise_case(trr_op op, trr_dtype d, int64_t rows, int64_t cols, int64_t pad, double lo, double hi) {
    int64_t ld = cols + pad;
    void *x = random_array(d, rows * ld, lo, hi), *y = random_array(d, rows * ld, lo, hi);
    void *z = poisoned(d, rows * ld + 5);
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.rows = rows;
    call.cols = cols;
    call.slices = 1;
    call.x = operand(x, d, 0, ld);
    call.y = operand(y, d, 0, ld);
    call.z = operand(z, d, 5, ld);
    run(&call);
    double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double v = get(z, d, 5 + r * ld + c), w = ref[r * cols + c];
            if (d == TRR_F32 && op != TRR_OP_GELU) {
                cr_assert_eq((float)v, (float)w, "%s [%lld,%lld]", op == TRR_OP_ADD ? "add" : "copy", (long long)r,
                             (long long)c);
            } else if (d == TRR_F32) {
                cr_assert(fabs(v - w) <= 1e-5 * fmax(fabs(w), 1e-30), "gelu(%g) = %.9g, ref %.9g",
                          get(x, d, r * ld + c), v, w);
            } else { /* f16: one rounding of the f32 result */
                cr_assert(fabs(v - w) <= 1e-3 * fabs(w) + 1e-7, "[%lld,%lld] %.9g vs %.9g", (long long)r,
                          (long long)c, v, w);
            }
        }
    /* the poison before the view and in the row padding stays */
    for (int64_t i = 0; i < 5; i++) cr_assert(isnan(get(z, d, i)));
    if (pad) cr_assert(isnan(get(z, d, 5 + cols)));
    free(ref);
    free(x);
    free(y);
    free(z);
}

Test(cpu, add_copy_gelu_f32_f16) {
    trr_dtype dts[] = {TRR_F32, TRR_F16};
    trr_op ops[] = {TRR_OP_COPY, TRR_OP_ADD, TRR_OP_GELU};
    for (int di = 0; di < 2; di++)
        for (int oi = 0; oi < 3; oi++)
            for (int i = 0; i < NSIZES; i++) {
                elementwise_case(ops[oi], dts[di], 1, sizes[i] * 61, 0, -6, 6); /* the packed fast path */
                elementwise_case(ops[oi], dts[di], sizes[i], sizes[(i + 3) % NSIZES] % 1000 + 1, 3, -6, 6);
            }
}

Test(cpu, gelu_tail_accuracy) {
    elementwise_case(TRR_OP_GELU, TRR_F32, 1, 100000, 0, -12, 12);
}

Test(cpu, add_in_place) {
    int64_t n = 100003;
    float *x = random_array(TRR_F32, n, -1, 1), *y = random_array(TRR_F32, n, -1, 1);
    float *expect = malloc((size_t)n * sizeof *expect);
    for (int64_t i = 0; i < n; i++) expect[i] = x[i] + y[i];
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = TRR_OP_ADD;
    call.rows = 1;
    call.cols = n;
    call.slices = 1;
    call.x = operand(x, TRR_F32, 0, n);
    call.y = operand(y, TRR_F32, 0, n);
    call.z = operand(x, TRR_F32, 0, n);
    run(&call);
    cr_assert(memcmp(x, expect, (size_t)n * sizeof *x) == 0);
    free(x);
    free(y);
    free(expect);
}

/* ---- softmax and row_sum ---- */

static void rowwise_case(trr_op op, trr_dtype din, trr_dtype dout, int64_t rows, int64_t cols, int64_t pad) {
    int64_t ld = cols + pad;
    void *x = random_array(din, rows * ld, -8, 8);
    int64_t zn = op == TRR_OP_ROW_SUM ? rows * 2 + 3 : rows * ld + 3;
    void *z = poisoned(dout, zn);
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.rows = rows;
    call.cols = cols;
    call.slices = 1;
    call.x = operand(x, din, 0, ld);
    call.z = operand(z, dout, 3, op == TRR_OP_ROW_SUM ? 2 : ld);
    run(&call);
    int64_t nref = op == TRR_OP_ROW_SUM ? rows : rows * cols;
    double *ref = malloc((size_t)nref * sizeof *ref);
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    if (op == TRR_OP_ROW_SUM) {
        for (int64_t r = 0; r < rows; r++) {
            double mag = 0;
            for (int64_t c = 0; c < cols; c++) mag += fabs(get(x, din, r * ld + c));
            double v = get(z, dout, 3 + 2 * r);
            cr_assert(fabs(v - ref[r]) <= 1e-6 * mag, "row_sum row %lld: %.9g vs %.9g", (long long)r, v, ref[r]);
            cr_assert(isnan(get(z, dout, 4 + 2 * r)), "row_sum wrote between strided outputs");
        }
    } else {
        errors e = compare(z, dout, 3, ld, ref, rows, cols, 0);
        cr_assert_eq(e.nonfinite, 0);
        if (dout == TRR_F32) {
            cr_assert(e.max_rel <= 1e-5 && e.max_abs <= 1e-6, "softmax %lldx%lld rel %g abs %g", (long long)rows,
                      (long long)cols, e.max_rel, e.max_abs);
        } else {
            cr_assert(e.frob_err <= 2e-3 * e.frob_ref, "softmax f16 frob %g", e.frob_err / e.frob_ref);
        }
    }
    free(ref);
    free(x);
    free(z);
}

Test(cpu, softmax) {
    for (int i = 0; i < NSIZES; i++) {
        rowwise_case(TRR_OP_SOFTMAX, TRR_F32, TRR_F32, sizes[i] % 200 + 1, sizes[(i + 2) % NSIZES], i % 2 ? 5 : 0);
        rowwise_case(TRR_OP_SOFTMAX, TRR_F16, TRR_F16, sizes[i] % 200 + 1, sizes[(i + 5) % NSIZES], 1);
    }
    rowwise_case(TRR_OP_SOFTMAX, TRR_F32, TRR_F32, 7, 12672, 0);
    rowwise_case(TRR_OP_SOFTMAX, TRR_F32, TRR_F32, 2, 300001, 3);
}

Test(cpu, row_sum) {
    for (int i = 0; i < NSIZES; i++) {
        rowwise_case(TRR_OP_ROW_SUM, TRR_F32, TRR_F32, sizes[i] % 300 + 1, sizes[(i + 3) % NSIZES], i % 2 ? 7 : 0);
        rowwise_case(TRR_OP_ROW_SUM, TRR_F16, TRR_F32, sizes[i] % 300 + 1, sizes[(i + 1) % NSIZES], 2);
    }
    rowwise_case(TRR_OP_ROW_SUM, TRR_F32, TRR_F32, 9, 65536, 0);
}

/* ---- rgb_to_grey ---- */

static void rgb_case(trr_dtype dout, int64_t h, int64_t w, int64_t pad) {
    int64_t rs = w + pad, plane = h * rs + 11;
    uint8_t *img = random_array(TRR_U8, 3 * plane, 0, 256);
    void *z = poisoned(dout, h * rs + 1);
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = TRR_OP_RGB_TO_GREY;
    call.rows = h;
    call.cols = w;
    call.slices = 1;
    call.x = operand(img, TRR_U8, 0, plane);
    call.x.stride1 = rs;
    call.z = operand(z, dout, 1, rs);
    run(&call);
    double *ref = malloc((size_t)(h * w) * sizeof *ref);
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    for (int64_t r = 0; r < h; r++)
        for (int64_t c = 0; c < w; c++) {
            double v = get(z, dout, 1 + r * rs + c), want = ref[r * w + c];
            if (dout == TRR_U8) {
                /* the f32 value rounded to nearest, ties to even */
                const uint8_t *R = img + r * rs + c;
                float f = 0.2989f * (float)R[0] + 0.5870f * (float)R[plane] + 0.1140f * (float)R[2 * plane];
                cr_assert_eq(v, nearbyintf(f), "grey [%lld,%lld] %g, f32 %.9g", (long long)r, (long long)c, v,
                             (double)f);
                cr_assert(fabs(v - want) <= 0.5 + 1e-4);
            } else {
                cr_assert(fabs(v - want) <= 1e-6 * fmax(want, 1.0));
            }
        }
    cr_assert_eq(((uint8_t *)z)[0], 0xff);
    free(ref);
    free(img);
    free(z);
}

Test(cpu, rgb_to_grey) {
    rgb_case(TRR_U8, 1066, 1600, 0);
    rgb_case(TRR_F32, 1066, 1600, 0);
    rgb_case(TRR_U8, 17, 781, 13);
    rgb_case(TRR_F32, 3, 1, 2);
    rgb_case(TRR_U8, 1, 4099, 0);
}

/* ---- matmul ---- */

typedef struct mm_shape {
    int64_t m, n, k;
} mm_shape;

/* C = act(A·B) with the given dtypes and storage; lda/ldb/ldc padded by pad; C at an offset inside a larger
 * buffer whose other elements must stay poisoned. config fields, when non-zero, override the heuristic. */
static void matmul_case(mm_shape s, trr_dtype din, trr_dtype dout, int ta, int tb, int64_t pad, trr_epilogue epi,
                        const trr_config *cfg) {
    int64_t lda = (ta ? s.m : s.k) + pad, ldb = (tb ? s.k : s.n) + pad, ldc = s.n + pad;
    int64_t arows = ta ? s.k : s.m, brows = tb ? s.n : s.k;
    void *a = random_array(din, arows * lda, -1, 1), *b = random_array(din, brows * ldb, -1, 1);
    int64_t coff = 7, cn = coff + s.m * ldc + 9;
    void *c = poisoned(dout, cn);
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = TRR_OP_MATMUL;
    call.rows = s.m;
    call.cols = s.n;
    call.k = s.k;
    call.trans_a = ta;
    call.trans_b = tb;
    call.epilogue = epi;
    call.alpha = 0.05f;
    call.slices = 1;
    call.x = operand(a, din, 0, lda);
    call.y = operand(b, din, 0, ldb);
    call.z = operand(c, dout, coff, ldc);
    memset(&call.config, 0, sizeof call.config);
    if (cfg) call.config = *cfg;
    trr_backend_cpu.choose_config(ctx, &call);
    cr_assert_eq(trr_backend_cpu.check_config(ctx, &call), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_backend_cpu.run(ctx, &call), TRR_OK, "%s", trr_last_error(ctx));
    double *ref = malloc((size_t)(s.m * s.n) * sizeof *ref);
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    errors e = compare(c, dout, coff, ldc, ref, s.m, s.n, 1e-3);
    double bound = dout == TRR_F16 ? 2e-3 : 1e-5;
    cr_assert_eq(e.nonfinite, 0, "matmul %lldx%lldx%lld: %d non-finite", (long long)s.m, (long long)s.n,
                 (long long)s.k, e.nonfinite);
    cr_assert(e.frob_err <= bound * e.frob_ref, "matmul %lldx%lldx%lld ta %d tb %d epi %d: frob rel %g",
              (long long)s.m, (long long)s.n, (long long)s.k, ta, tb, (int)epi, e.frob_err / e.frob_ref);
    /* nothing outside the view was written */
    for (int64_t i = 0; i < cn; i++) {
        int64_t r = (i - coff) / ldc, col = (i - coff) % ldc;
        int inside = i >= coff && r < s.m && col < s.n;
        if (!inside) cr_assert(isnan(get(c, dout, i)), "matmul wrote outside C at element %lld", (long long)i);
    }
    free(ref);
    free(a);
    free(b);
    free(c);
}

Test(cpu, matmul_shapes_and_layouts) {
    mm_shape shapes[] = {{1, 781, 3}, {127, 1000, 17}, {3, 1, 4099}, {17, 17, 17}, {781, 3, 127},
                         {64, 256, 256}, {128, 128, 64}, {1000, 127, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) matmul_case(shapes[i], TRR_F32, TRR_F32, t & 1, t >> 1, i % 3, TRR_EPI_NONE, NULL);
}

Test(cpu, matmul_large, .timeout = 600) {
    matmul_case((mm_shape){1823, 127, 781}, TRR_F32, TRR_F32, 0, 1, 0, TRR_EPI_NONE, NULL);
    matmul_case((mm_shape){257, 300, 4099}, TRR_F32, TRR_F32, 1, 0, 3, TRR_EPI_NONE, NULL);
}

Test(cpu, matmul_f16_and_epilogues) {
    mm_shape shapes[] = {{127, 1000, 17}, {1, 781, 3}, {200, 129, 300}};
    trr_epilogue epis[] = {TRR_EPI_NONE, TRR_EPI_RELU, TRR_EPI_LEAKY_RELU, TRR_EPI_GELU};
    for (int i = 0; i < 3; i++)
        for (int e = 0; e < 4; e++) {
            matmul_case(shapes[i], TRR_F16, TRR_F16, e & 1, i & 1, 1, epis[e], NULL);
            matmul_case(shapes[i], TRR_F16, TRR_F32, i & 1, e & 1, 0, epis[e], NULL);
            matmul_case(shapes[i], TRR_F32, TRR_F32, 0, 0, 2, epis[e], NULL);
        }
}

Test(cpu, matmul_odd_configs) {
    trr_config cfgs[] = {{.block_m = 1, .block_n = 1, .block_k = 1, .group_m = 1},
                         {.block_m = 17, .block_n = 5, .block_k = 3, .group_m = 3},
                         {.block_m = 128, .block_n = 64, .block_k = 1000, .group_m = 2},
                         {.block_m = 4096, .block_n = 4096, .block_k = 4096, .group_m = 8}};
    for (int i = 0; i < 4; i++) {
        matmul_case((mm_shape){37, 41, 29}, TRR_F32, TRR_F32, i & 1, 1, 1, TRR_EPI_RELU, &cfgs[i]);
        matmul_case((mm_shape){127, 100, 17}, TRR_F16, TRR_F16, 0, i & 1, 0, TRR_EPI_GELU, &cfgs[i]);
    }
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = TRR_OP_MATMUL;
    call.config = (trr_config){.block_m = 0, .block_n = 8, .block_k = 8, .group_m = 1};
    cr_assert_eq(trr_backend_cpu.check_config(ctx, &call), TRR_ERR_UNSUPPORTED);
    call.config = (trr_config){.block_m = 8, .block_n = 8, .block_k = 8, .group_m = 1, .split_k = 33};
    cr_assert_eq(trr_backend_cpu.check_config(ctx, &call), TRR_ERR_UNSUPPORTED);
}

/* ---- through the public API ---- */

Test(cpu, device_info) {
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    cr_assert_str_eq(info.backend, "cpu");
    cr_assert_str_eq(info.spec, "cpu:0");
    cr_assert_eq(info.is_gpu, 0);
    cr_assert_gt(info.compute_units, 0);
    cr_assert_gt(info.global_memory, 0);
    cr_assert_neq(info.name[0], '\0');
}

Test(cpu, public_matmul_transposed_b_offset_c) {
    int64_t m = 33, n = 45, k = 70;
    size_t a_bytes = (size_t)(m * k) * 4, b_bytes = (size_t)(n * k) * 4, c_bytes = 4096 + (size_t)(m * n) * 4 + 256;
    float *a = random_array(TRR_F32, m * k, -1, 1), *b = random_array(TRR_F32, n * k, -1, 1);
    trr_buffer *ba, *bb, *bc;
    cr_assert_eq(trr_buffer_create(ctx, a_bytes, &ba), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, b_bytes, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, c_bytes, &bc), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, ba, 0, a, a_bytes), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, b, b_bytes), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, bc, 0, c_bytes, 0xab), TRR_OK);
    trr_tensor ta, tbs, tb, tc;
    cr_assert_eq(trr_tensor_2d(ba, 0, TRR_F32, m, k, 0, &ta), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bb, 0, TRR_F32, n, k, 0, &tbs), TRR_OK);
    cr_assert_eq(trr_tensor_transpose(&tbs, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bc, 4096, TRR_F32, m, n, 0, &tc), TRR_OK);
    cr_assert_eq(trr_timer_start(ctx), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_NONE, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
    double ms = -1;
    cr_assert_eq(trr_timer_stop(ctx, &ms), TRR_OK);
    cr_assert_geq(ms, 0.0);
    unsigned char *back = malloc(c_bytes);
    cr_assert_eq(trr_buffer_read(ctx, bc, 0, back, c_bytes), TRR_OK);
    for (size_t i = 0; i < 4096; i++) cr_assert_eq(back[i], 0xab);
    for (size_t i = 4096 + (size_t)(m * n) * 4; i < c_bytes; i++) cr_assert_eq(back[i], 0xab);
    const float *c = (const float *)(back + 4096);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t kk = 0; kk < k; kk++) s += (double)a[i * k + kk] * b[j * k + kk];
            cr_assert(fabs(c[i * n + j] - s) <= 1e-5 * (1 + fabs(s)), "C[%lld,%lld]", (long long)i, (long long)j);
        }
    trr_config last;
    cr_assert_eq(trr_config_last(ctx, &last), TRR_OK);
    cr_assert_gt(last.block_m, 0);
    free(back);
    free(a);
    free(b);
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(bc);
}
