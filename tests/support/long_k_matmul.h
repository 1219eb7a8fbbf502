/* Long-K matmul cases shared by the tests that hold a backend to every depth (test_long_rows.c) and to a device's
 * loop budget (test_opencl_loop_budget.c): C[3,17] = A[3,K] · B[K,17] with B stored [17,K] (both read along K),
 * f32 or f16 inputs, f32 output. The inputs are random multiples of 1/4 in [-1, 1], so every product and partial
 * sum of up to 2^20 of them is exact in f32 (2^20 x 16 < 2^24) whatever the order of accumulation: a correct kernel
 * gives the float64 value exactly, and a K loop cut short shows at once. Header-only: each test file includes it
 * once. */
#ifndef TRR_TEST_LONG_K_MATMUL_H
#define TRR_TEST_LONG_K_MATMUL_H

#include "half.h"
#include "random.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <trireme.h>

enum { LONG_K_M = 3, LONG_K_N = 17 };

/* The host inputs of the deepest case; a case of depth k takes the first 3k and 17k values as A [3,k], B [17,k]. */
typedef struct long_k_inputs {
    int64_t kmax;
    float *a, *b; /* [M, kmax], [N, kmax] */
    uint16_t *h;  /* room for either one as f16 */
} long_k_inputs;

/* One case on a device: its buffers, tensors and float64 reference. */
typedef struct long_k_case {
    int64_t k;
    trr_buffer *ba, *bb, *bc;
    trr_tensor a, b, c;
    double ref[LONG_K_M * LONG_K_N];
} long_k_case;

/* +-1/4, +-2/4, +-3/4 or +-1 */
static inline float long_k_quarter(uint64_t *rng) {
    uint64_t r = trr_rng_next(rng);
    return (float)((int)(r % 4) + 1) / 4.0f * ((r >> 32) & 1 ? -1.0f : 1.0f);
}

static inline long_k_inputs long_k_inputs_make(int64_t kmax) {
    long_k_inputs in = {kmax, malloc(sizeof(float) * LONG_K_M * (size_t)kmax),
                        malloc(sizeof(float) * LONG_K_N * (size_t)kmax),
                        malloc(sizeof(uint16_t) * LONG_K_N * (size_t)kmax)};
    cr_assert(in.a && in.b && in.h);
    uint64_t rng = 12345;
    for (int64_t i = 0; i < LONG_K_M * kmax; i++) in.a[i] = long_k_quarter(&rng);
    for (int64_t i = 0; i < LONG_K_N * kmax; i++) in.b[i] = long_k_quarter(&rng);
    return in;
}

static inline void long_k_inputs_free(long_k_inputs *in) {
    free(in->a), free(in->b), free(in->h);
}

/* Writes the first rows x k values of src, packed as [rows, k], in dtype dt (f32 or f16). */
static inline void long_k_write(trr_context *ctx, const float *src, int rows, int64_t k, trr_dtype dt, uint16_t *h,
                                trr_buffer *buf) {
    const size_t n = (size_t)(rows * k);
    if (dt == TRR_F16) {
        trr_f32_to_f16(src, h, n);
        cr_assert_eq(trr_buffer_write(ctx, buf, 0, h, 2 * n), TRR_OK);
    } else {
        cr_assert_eq(trr_buffer_write(ctx, buf, 0, src, 4 * n), TRR_OK);
    }
}

/* Makes the case of depth k with inputs of dtype dt on ctx. */
static inline void long_k_case_make(trr_context *ctx, long_k_inputs *in, int64_t k, trr_dtype dt, long_k_case *c) {
    c->k = k;
    for (int i = 0; i < LONG_K_M; i++)
        for (int j = 0; j < LONG_K_N; j++) {
            double s = 0;
            for (int64_t q = 0; q < k; q++) s += (double)in->a[i * k + q] * (double)in->b[j * k + q];
            c->ref[i * LONG_K_N + j] = s;
        }
    const size_t es = dt == TRR_F16 ? 2 : 4;
    cr_assert_eq(trr_buffer_create(ctx, es * LONG_K_M * (size_t)k, &c->ba), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, es * LONG_K_N * (size_t)k, &c->bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, 4 * LONG_K_M * LONG_K_N, &c->bc), TRR_OK);
    long_k_write(ctx, in->a, LONG_K_M, k, dt, in->h, c->ba);
    long_k_write(ctx, in->b, LONG_K_N, k, dt, in->h, c->bb);
    trr_tensor b0;
    cr_assert_eq(trr_tensor_2d(c->ba, 0, dt, LONG_K_M, k, k, &c->a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(c->bb, 0, dt, LONG_K_N, k, k, &b0), TRR_OK);
    cr_assert_eq(trr_tensor_transpose(&b0, &c->b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(c->bc, 0, TRR_F32, LONG_K_M, LONG_K_N, LONG_K_N, &c->c), TRR_OK);
}

/* Runs the case under the context's overrides into got (the output poisoned with NaN first); its status. */
static inline trr_status long_k_case_run(trr_context *ctx, long_k_case *c, float got[LONG_K_M * LONG_K_N]) {
    for (int i = 0; i < LONG_K_M * LONG_K_N; i++) got[i] = NAN;
    cr_assert_eq(trr_buffer_write(ctx, c->bc, 0, got, sizeof(float) * LONG_K_M * LONG_K_N), TRR_OK);
    const trr_status st = trr_matmul(ctx, &c->a, &c->b, &c->c, TRR_EPI_NONE, 0.0f, 0);
    if (st == TRR_OK)
        cr_assert_eq(trr_buffer_read(ctx, c->bc, 0, got, sizeof(float) * LONG_K_M * LONG_K_N), TRR_OK);
    return st;
}

static inline void long_k_case_free(long_k_case *c) {
    trr_buffer_destroy(c->ba);
    trr_buffer_destroy(c->bb);
    trr_buffer_destroy(c->bc);
}

#endif
