/* NaN and infinities through the devices (issue #41, item 8), each result compared with the float64
 * reference's value (harness/reference.c), on cpu, opencl:0 and vulkan:0:
 *  - matmul with a NaN in one row of A and one column of B, under every epilogue: that row and column of C are
 *    NaN (relu included: relu(NaN) is NaN, as in torch), everything else finite and right;
 *  - gelu and silu at +-inf, NaN and large finite values: gelu(+inf) = silu(+inf) = +inf, and gelu(-inf) and
 *    silu(-inf) are NaN, what the formulas give in float64 (-inf / inf), as torch gives;
 *  - softmax with +inf in a row: e^(inf - inf) is NaN, so that whole row is NaN, and the other rows are untouched.
 * A backend must agree with the reference on which results are NaN, on infinities exactly, and on finite
 * results within the conformance bounds. */
#include "reference.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float to_f32(const void *host, trr_dtype dt, size_t i) {
    if (dt == TRR_F32) return ((const float *)host)[i];
    float f;
    trr_f16_to_f32((const uint16_t *)host + i, &f, 1);
    return f;
}

/* host[] of n values of dt from f32 values */
static void *make_host(const float *vals, size_t n, trr_dtype dt) {
    void *h = malloc(n * (dt == TRR_F32 ? 4 : 2));
    cr_assert(h);
    if (dt == TRR_F32)
        memcpy(h, vals, 4 * n);
    else
        trr_f32_to_f16(vals, h, n);
    return h;
}

static trr_buffer *upload(trr_context *ctx, const void *host, size_t bytes) {
    trr_buffer *b;
    cr_assert_eq(trr_buffer_create(ctx, bytes, &b), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, b, 0, host, bytes), TRR_OK, "%s", trr_last_error(ctx));
    return b;
}

/* 1 when got agrees with ref: NaN for NaN, the same infinity, or within rel (floor 1e-6 absolute) */
static int agrees(float got, double ref, double rel) {
    if (isnan(ref)) return isnan(got);
    if (isinf(ref)) return (double)got == ref;
    if (!isfinite(got)) return 0;
    return fabs((double)got - ref) <= rel * fabs(ref) + 1e-6;
}

static const char *dt_name(trr_dtype dt) {
    const char *s = "?";
    trr_dtype_name(dt, &s);
    return s;
}

/* ---- matmul: a NaN row of A and a NaN column of B under each epilogue ---- */

static int matmul_case(trr_context *ctx, const char *spec, trr_dtype in, trr_dtype out, int M, int N, int K,
                       trr_epilogue epi) {
    const int nan_row = M / 2, nan_col = N - 2;
    float *a = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)K * N);
    cr_assert(a && b);
    uint64_t s = 7;
    for (int i = 0; i < M * K; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (float)((int)(s >> 60) - 8) / 8.0f; /* multiples of 1/8 in [-1, 1): negative sums too */
    }
    for (int i = 0; i < K * N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (float)((int)(s >> 60) - 8) / 8.0f;
    }
    a[nan_row * K + K / 2] = NAN;
    b[(K - 1) * N + nan_col] = NAN;
    void *ha = make_host(a, (size_t)M * K, in), *hb = make_host(b, (size_t)K * N, in);
    const size_t ies = in == TRR_F32 ? 4 : 2, oes = out == TRR_F32 ? 4 : 2;
    trr_buffer *ba = upload(ctx, ha, ies * M * K), *bb = upload(ctx, hb, ies * K * N), *bc;
    cr_assert_eq(trr_buffer_create(ctx, oes * M * N, &bc), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, bc, 0, oes * M * N, 0), TRR_OK); /* zeros: a skipped store shows as 0 */
    trr_tensor ta, tb, tc;
    cr_assert_eq(trr_tensor_2d(ba, 0, in, M, K, K, &ta), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bb, 0, in, K, N, N, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bc, 0, out, M, N, N, &tc), TRR_OK);
    const float alpha = 0.01f;
    cr_assert_eq(trr_matmul(ctx, &ta, &tb, &tc, epi, alpha, 0), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    void *hc = malloc(oes * M * N);
    double *ref = malloc(sizeof(double) * M * N);
    cr_assert(hc && ref);
    cr_assert_eq(trr_buffer_read(ctx, bc, 0, hc, oes * M * N), TRR_OK);
    trr_call call = {.op = TRR_OP_MATMUL, .rows = M, .cols = N, .k = K, .epilogue = epi, .alpha = alpha, .batch = 1};
    call.x = (trr_operand){.mem = ha, .stride0 = K, .dtype = in};
    call.y = (trr_operand){.mem = hb, .stride0 = N, .dtype = in};
    call.z = (trr_operand){.stride0 = N, .dtype = out};
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    const char *en = "?";
    trr_epilogue_name(epi, &en);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const float g = to_f32(hc, out, (size_t)i * N + j);
            const int want_nan = i == nan_row || j == nan_col;
            /* the reference itself: NaN exactly on the NaN row and column, whatever the epilogue */
            const int ref_ok = (isnan(ref[i * N + j]) != 0) == want_nan;
            const int ok = ref_ok && (isnan(g) != 0) == want_nan &&
                           agrees(g, ref[i * N + j], out == TRR_F32 ? 1e-5 : 2e-3);
            if (!ok && bad < 4)
                printf("%s matmul %s->%s %dx%dx%d %s: C[%d][%d] = %g, reference %g%s\n", spec, dt_name(in),
                       dt_name(out), M, N, K, en, i, j, (double)g, ref[i * N + j],
                       ref_ok ? "" : " (the reference is wrong)");
            bad += !ok;
        }
    printf("%s matmul %s->%s %dx%dx%d %s: %d wrong\n", spec, dt_name(in), dt_name(out), M, N, K, en, bad);
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(bc);
    free(a), free(b), free(ha), free(hb), free(hc), free(ref);
    return bad;
}

static void run_matmul(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    static const int shapes[][3] = {{5, 7, 3}, {67, 45, 129}};
    static const trr_dtype sig[][2] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F32}, {TRR_F16, TRR_F16}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t d = 0; d < sizeof sig / sizeof sig[0]; d++)
            for (int e = 0; e < TRR_EPI_COUNT; e++)
                bad += matmul_case(ctx, spec, sig[d][0], sig[d][1], shapes[s][0], shapes[s][1], shapes[s][2],
                                   (trr_epilogue)e);
    fflush(stdout);
    trr_context_destroy(ctx);
    cr_assert_eq(bad, 0, "%s: %d matmul outputs disagree with the reference on NaN (listed above)", spec, bad);
}

Test(special_values_inf, matmul_nan_cpu) { run_matmul("cpu"); }
Test(special_values_inf, matmul_nan_opencl) { run_matmul("opencl:0"); }
Test(special_values_inf, matmul_nan_vulkan) { run_matmul("vulkan:0"); }

/* ---- gelu and silu at the special values ---- */

static const float k_special[] = {INFINITY, -INFINITY, NAN,     0.0f,     -0.0f,   1.0f,     -1.0f,
                                  10.0f,    -10.0f,    30.0f,   -30.0f,   100.0f,  -100.0f,  1e10f,
                                  -1e10f,   1e30f,     -1e30f,  FLT_MAX,  -FLT_MAX, 60000.0f, -60000.0f};
#define N_SPECIAL ((int)(sizeof k_special / sizeof k_special[0]))

static int elementwise_case(trr_context *ctx, const char *spec, trr_op op, trr_dtype dt, int n) {
    float *v = malloc(sizeof(float) * (size_t)n);
    cr_assert(v);
    for (int i = 0; i < n; i++) v[i] = k_special[i % N_SPECIAL];
    void *hx = make_host(v, (size_t)n, dt);
    const size_t es = dt == TRR_F32 ? 4 : 2;
    trr_buffer *bx = upload(ctx, hx, es * n), *bz;
    cr_assert_eq(trr_buffer_create(ctx, es * n, &bz), TRR_OK);
    trr_tensor tx, tz;
    cr_assert_eq(trr_tensor_1d(bx, 0, dt, n, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(bz, 0, dt, n, &tz), TRR_OK);
    const trr_status st = op == TRR_OP_GELU ? trr_gelu(ctx, &tx, &tz) : trr_silu(ctx, &tx, &tz);
    cr_assert_eq(st, TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    void *hz = malloc(es * n);
    double *ref = malloc(sizeof(double) * n);
    cr_assert(hz && ref);
    cr_assert_eq(trr_buffer_read(ctx, bz, 0, hz, es * n), TRR_OK);
    trr_call call = {.op = op, .rows = 1, .cols = n};
    call.x = (trr_operand){.mem = hx, .stride0 = n, .dtype = dt};
    call.z = (trr_operand){.stride0 = n, .dtype = dt};
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    const char *on = "?";
    trr_op_name(op, &on);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double r = ref[i];
        if (dt != TRR_F32 && isfinite(r) && fabs(r) > 65504.0) r = copysign(INFINITY, r); /* rounds to inf */
        const float g = to_f32(hz, dt, (size_t)i);
        /* the values this file states: +inf -> +inf, -inf -> NaN, NaN -> NaN */
        const float x = to_f32(hx, dt, (size_t)i);
        const int stated = isinf(x) ? (x > 0 ? r == INFINITY : isnan(r)) : isnan(x) ? isnan(r) : 1;
        const int ok = stated && agrees(g, r, dt == TRR_F32 ? 1e-5 : 1e-2);
        if (!ok && bad < 6)
            printf("%s %s %s n=%d: %s(%g) = %g, reference %g%s\n", spec, on, dt_name(dt), n, on, (double)x,
                   (double)g, r, stated ? "" : " (the reference is not the stated value)");
        bad += !ok;
    }
    printf("%s %s %s n=%d: %d wrong\n", spec, on, dt_name(dt), n, bad);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bz);
    free(v), free(hx), free(hz), free(ref);
    return bad;
}

static void run_elementwise(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    /* a few values alone, then enough for vector paths and a ragged tail */
    static const int ns[] = {N_SPECIAL, 4099};
    int bad = 0;
    for (int op = 0; op < 2; op++)
        for (int dt = 0; dt < 2; dt++)
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
                bad += elementwise_case(ctx, spec, op ? TRR_OP_SILU : TRR_OP_GELU, dt ? TRR_F16 : TRR_F32, ns[k]);
    fflush(stdout);
    trr_context_destroy(ctx);
    cr_assert_eq(bad, 0, "%s: %d gelu/silu results disagree with the reference (listed above)", spec, bad);
}

Test(special_values_inf, gelu_silu_cpu) { run_elementwise("cpu"); }
Test(special_values_inf, gelu_silu_opencl) { run_elementwise("opencl:0"); }
Test(special_values_inf, gelu_silu_vulkan) { run_elementwise("vulkan:0"); }

/* ---- softmax with +inf ---- */

enum { SM_ROWS = 6 };

/* rows: +inf first; +inf in the middle; +inf last; two +inf; +inf among -inf (masked) entries; finite alone */
static int softmax_case(trr_context *ctx, const char *spec, trr_dtype dt, int n) {
    const size_t count = (size_t)SM_ROWS * n, es = dt == TRR_F32 ? 4 : 2;
    float *v = malloc(sizeof(float) * count);
    cr_assert(v);
    uint64_t s = 99;
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 6.0 - 3.0);
    }
    v[0 * n + 0] = INFINITY;
    v[1 * n + n / 2] = INFINITY;
    v[2 * n + n - 1] = INFINITY;
    v[3 * n + n / 3] = INFINITY, v[3 * n + 2 * n / 3] = INFINITY;
    for (int c = 0; c < n; c += 2) v[4 * n + c] = -INFINITY;
    v[4 * n + ((n / 2) | 1)] = INFINITY; /* an odd column, which the -inf leave alone */
    void *hx = make_host(v, count, dt);
    trr_buffer *bx = upload(ctx, hx, es * count), *bz;
    cr_assert_eq(trr_buffer_create(ctx, es * count, &bz), TRR_OK);
    trr_tensor tx, tz;
    cr_assert_eq(trr_tensor_2d(bx, 0, dt, SM_ROWS, n, n, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bz, 0, dt, SM_ROWS, n, n, &tz), TRR_OK);
    cr_assert_eq(trr_softmax(ctx, &tx, &tz), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    void *hz = malloc(es * count);
    double *ref = malloc(sizeof(double) * count);
    cr_assert(hz && ref);
    cr_assert_eq(trr_buffer_read(ctx, bz, 0, hz, es * count), TRR_OK);
    trr_call call = {.op = TRR_OP_SOFTMAX, .rows = SM_ROWS, .cols = n};
    call.x = (trr_operand){.mem = hx, .stride0 = n, .dtype = dt};
    call.z = (trr_operand){.stride0 = n, .dtype = dt};
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    int bad = 0;
    for (int r = 0; r < SM_ROWS; r++) {
        int row_bad = 0;
        for (int c = 0; c < n; c++) {
            const size_t i = (size_t)r * n + c;
            const float g = to_f32(hz, dt, i);
            /* the stated value: a row with +inf is NaN everywhere, the finite row is not */
            const int stated = (isnan(ref[i]) != 0) == (r < SM_ROWS - 1);
            const int ok = stated && agrees(g, ref[i], dt == TRR_F32 ? 1e-5 : 1e-2);
            if (!ok && row_bad < 2)
                printf("%s softmax %s %dx%d: row %d col %d = %g, reference %g%s\n", spec, dt_name(dt), SM_ROWS, n, r,
                       c, (double)g, ref[i], stated ? "" : " (the reference is not the stated value)");
            row_bad += !ok;
        }
        bad += row_bad;
    }
    printf("%s softmax %s %dx%d: %d wrong\n", spec, dt_name(dt), SM_ROWS, n, bad);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bz);
    free(v), free(hx), free(hz), free(ref);
    return bad;
}

static void run_softmax(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    /* within one tile, a row in registers, past any register kernel */
    static const int ns[] = {5, 1000, 4099, 40000};
    int bad = 0;
    for (int dt = 0; dt < 2; dt++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            bad += softmax_case(ctx, spec, dt ? TRR_F16 : TRR_F32, ns[k]);
    fflush(stdout);
    trr_context_destroy(ctx);
    cr_assert_eq(bad, 0, "%s: %d softmax outputs with +inf in the row disagree with the reference (listed above)",
                 spec, bad);
}

Test(special_values_inf, softmax_inf_cpu) { run_softmax("cpu"); }
Test(special_values_inf, softmax_inf_opencl) { run_softmax("opencl:0"); }
Test(special_values_inf, softmax_inf_vulkan) { run_softmax("vulkan:0"); }
