/* Vulkan operands past one binding's range (lavapipe binds at most 128 MiB, maxStorageBufferRange): element-wise
 * ops run in parts that each fit (runs of rows, or pieces of a row), row-wise ops in runs of rows, matmul as a grid
 * of smaller products, instead of answering UNSUPPORTED. Checked bit for bit: adds against the same f32 arithmetic on the host, row sums of
 * small integers (exact in f32). On devices that bind more the same calls run whole. Runs on
 * vulkan:0 under TRIREME_VK_VALIDATION=1 as every test does. */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OK(ctx, call) cr_assert_eq((call), TRR_OK, "%s: %s", #call, trr_last_error(ctx))
#define BINDING_BYTES ((int64_t)128 << 20) /* lavapipe's maxStorageBufferRange */

static trr_context *open_vulkan(void) { return open_device_or_skip("vulkan:0", "vulkan"); }

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t next(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static float *random_floats(int64_t n) {
    float *v = malloc((size_t)n * sizeof *v);
    cr_assert(v, "out of host memory");
    for (int64_t i = 0; i < n; i++) v[i] = (float)(next() & 0xffffff) / (float)(1 << 24) * 4.0f - 2.0f;
    return v;
}

static trr_buffer *upload(trr_context *ctx, const float *v, int64_t n) {
    trr_buffer *b = NULL;
    OK(ctx, trr_buffer_create(ctx, (size_t)n * 4, &b));
    OK(ctx, trr_buffer_write(ctx, b, 0, v, (size_t)n * 4));
    return b;
}

static void expect_bits(const float *got, const float *want, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], 4) == 0, "%s: element %lld is %.9g, not %.9g", what, (long long)i,
                  (double)got[i], (double)want[i]);
}

/* A contiguous add of 2^25 + 1027 elements (128 MiB and a bit per operand), starting 1 element into each buffer:
 * pieces of the one long row, the first and last off the 4-element vectors. */
Test(vulkan_split, contiguous_add) {
    trr_context *ctx = open_vulkan();
    const int64_t n = ((int64_t)1 << 25) + 1027;
    float *x = random_floats(n + 1), *y = random_floats(n + 1), *got = malloc((size_t)n * 4);
    cr_assert(got);
    trr_buffer *bx = upload(ctx, x, n + 1), *by = upload(ctx, y, n + 1), *bz = NULL;
    OK(ctx, trr_buffer_create(ctx, (size_t)(n + 1) * 4, &bz));
    OK(ctx, trr_buffer_fill(ctx, bz, 0, (size_t)(n + 1) * 4, 0xff));
    trr_tensor tx, ty, tz;
    OK(ctx, trr_tensor_1d(bx, 4, TRR_F32, n, &tx));
    OK(ctx, trr_tensor_1d(by, 4, TRR_F32, n, &ty));
    OK(ctx, trr_tensor_1d(bz, 4, TRR_F32, n, &tz));
    OK(ctx, trr_add(ctx, &tx, &ty, &tz));
    OK(ctx, trr_buffer_read(ctx, bz, 4, got, (size_t)n * 4));
    for (int64_t i = 0; i < n; i++) x[i + 1] = x[i + 1] + y[i + 1];
    expect_bits(got, x + 1, n, "z = x + y");
    float guard;
    OK(ctx, trr_buffer_read(ctx, bz, 0, &guard, 4));
    cr_assert(guard != guard, "the element before z was written (%g)", (double)guard);
    free(x);
    free(y);
    free(got);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    trr_context_destroy(ctx);
}

/* Strided rows: 2 rows each longer than a binding, with a leading stride of cols + 3 (pieces of each row, their
 * starts off the vectors), in place (z is x); then 4000 rows of 9000 with stride 9001 (runs of whole rows). */
Test(vulkan_split, strided_add) {
    trr_context *ctx = open_vulkan();
    const int64_t shapes[2][3] = {{2, BINDING_BYTES / 4 + 5, BINDING_BYTES / 4 + 8}, {4000, 9000, 9001}};
    for (int s = 0; s < 2; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], stride = shapes[s][2], n = rows * stride;
        float *x = random_floats(n), *y = random_floats(n), *got = malloc((size_t)n * 4);
        cr_assert(got);
        trr_buffer *bx = upload(ctx, x, n), *by = upload(ctx, y, n);
        trr_tensor tx, ty;
        OK(ctx, trr_tensor_2d(bx, 0, TRR_F32, rows, cols, stride, &tx));
        OK(ctx, trr_tensor_2d(by, 0, TRR_F32, rows, cols, stride, &ty));
        OK(ctx, trr_add(ctx, &tx, &ty, &tx));
        OK(ctx, trr_buffer_read(ctx, bx, 0, got, (size_t)n * 4));
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) x[r * stride + c] = x[r * stride + c] + y[r * stride + c];
        expect_bits(got, x, n, s == 0 ? "rows past a binding" : "runs of rows"); /* the gaps stay as they were */
        free(x);
        free(y);
        free(got);
        trr_buffer_destroy(bx);
        trr_buffer_destroy(by);
    }
    trr_context_destroy(ctx);
}

/* row_sum over 4000 rows of 9000 (144 MB): runs of rows. Small integers keep every sum exact. */
Test(vulkan_split, row_sum_runs_of_rows) {
    trr_context *ctx = open_vulkan();
    const int64_t rows = 4000, cols = 9000;
    float *x = malloc((size_t)(rows * cols) * 4), got[4000];
    cr_assert(x);
    for (int64_t i = 0; i < rows * cols; i++) x[i] = (float)((int)(next() % 17) - 8);
    trr_buffer *bx = upload(ctx, x, rows * cols), *bz = NULL;
    OK(ctx, trr_buffer_create(ctx, sizeof got, &bz));
    trr_tensor tx, tz;
    OK(ctx, trr_tensor_2d(bx, 0, TRR_F32, rows, cols, cols, &tx));
    OK(ctx, trr_tensor_1d(bz, 0, TRR_F32, rows, &tz));
    OK(ctx, trr_row_sum(ctx, &tx, &tz));
    OK(ctx, trr_buffer_read(ctx, bz, 0, got, sizeof got));
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (int64_t c = 0; c < cols; c++) sum += x[r * cols + c];
        cr_assert_eq((double)got[r], sum, "row %lld: %g, not %g", (long long)r, (double)got[r], sum);
    }
    free(x);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bz);
    trr_context_destroy(ctx);
}

/* ---- matmul: operands past one binding run as a grid of smaller products ---- */

/* C = A·B (f32, ReLU) with A stored [M,K] (or [K,M] when trans_a), B [K,N] (or [N,K]), each starting one element
 * into its buffer, C poisoned; every element checked against a float64 product within 1e-5 of sum |a||b| (the
 * f32 bound), and the element before C untouched. */
static void big_matmul(int64_t M, int64_t N, int64_t K, int trans_a, int trans_b) {
    trr_context *ctx = open_vulkan();
    const int64_t na = M * K, nb = K * N, nc = M * N;
    float *a = random_floats(na + 1), *b = random_floats(nb + 1), *got = malloc((size_t)nc * 4);
    cr_assert(got);
    trr_buffer *ba = upload(ctx, a, na + 1), *bb = upload(ctx, b, nb + 1), *bc = NULL;
    OK(ctx, trr_buffer_create(ctx, (size_t)(nc + 1) * 4, &bc));
    OK(ctx, trr_buffer_fill(ctx, bc, 0, (size_t)(nc + 1) * 4, 0xff));
    trr_tensor ta, tb, tc, t;
    if (trans_a) {
        OK(ctx, trr_tensor_2d(ba, 4, TRR_F32, K, M, 0, &t));
        OK(ctx, trr_tensor_transpose(&t, &ta));
    } else {
        OK(ctx, trr_tensor_2d(ba, 4, TRR_F32, M, K, 0, &ta));
    }
    if (trans_b) {
        OK(ctx, trr_tensor_2d(bb, 4, TRR_F32, N, K, 0, &t));
        OK(ctx, trr_tensor_transpose(&t, &tb));
    } else {
        OK(ctx, trr_tensor_2d(bb, 4, TRR_F32, K, N, 0, &tb));
    }
    OK(ctx, trr_tensor_2d(bc, 4, TRR_F32, M, N, 0, &tc));
    OK(ctx, trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_RELU, 0.0f, 0));
    OK(ctx, trr_buffer_read(ctx, bc, 4, got, (size_t)nc * 4));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                const double x = a[1 + (trans_a ? k * M + i : i * K + k)], y = b[1 + (trans_b ? j * K + k : k * N + j)];
                sum += x * y;
                mag += x * y < 0 ? -x * y : x * y;
            }
            const double want = sum > 0 ? sum : 0, g = got[i * N + j];
            cr_assert(g == g && (g - want <= 1e-5 * mag + 1e-30) && (want - g <= 1e-5 * mag + 1e-30),
                      "C[%lld][%lld] = %.9g, want %.9g (sum |ab| %.3g)", (long long)i, (long long)j, g, want, mag);
        }
    float guard;
    OK(ctx, trr_buffer_read(ctx, bc, 0, &guard, 4));
    cr_assert(guard != guard, "the element before C was written (%g)", (double)guard);
    free(a), free(b), free(got);
    trr_buffer_destroy(ba), trr_buffer_destroy(bb), trr_buffer_destroy(bc);
    trr_context_destroy(ctx);
}

/* A of 33000 x 1024 f32 (129 MiB): runs of A's and C's rows. */
Test(vulkan_split, matmul_tall_a, .timeout = 300) { big_matmul(33000, 8, 1024, 0, 0); }

/* B of 8 x 4400000 f32 (134 MiB): runs of B's and C's columns. */
Test(vulkan_split, matmul_wide_b, .timeout = 300) { big_matmul(3, 4400000, 8, 0, 0); }

/* A stored [K, M] = 16 x 2200000 (134 MiB), B stored [N, K]: runs of A's columns. */
Test(vulkan_split, matmul_transposed_a, .timeout = 300) { big_matmul(2200000, 4, 16, 1, 1); }
