/* What the tests that chain f32 ops on one device share: random inputs, buffers made from them (or poisoned with
 * NaN), and a bit-for-bit comparison with the same adds done on the host. Include after criterion and
 * test_support.h. */
#ifndef TRR_TEST_F32_HOST_CHECK_H
#define TRR_TEST_F32_HOST_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OK(ctx, call) cr_assert_eq((call), TRR_OK, "%s: %s", #call, trr_last_error(ctx))

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline float rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / (float)(1 << 24) * 4.0f - 2.0f;
}

static inline void fill_random(float *v, int n) {
    for (int i = 0; i < n; i++) v[i] = rnd();
}

static inline trr_buffer *make(trr_context *ctx, const float *v, int n, trr_tensor *t) {
    trr_buffer *b = NULL;
    OK(ctx, trr_buffer_create(ctx, (size_t)n * 4, &b));
    if (v) OK(ctx, trr_buffer_write(ctx, b, 0, v, (size_t)n * 4));
    else OK(ctx, trr_buffer_fill(ctx, b, 0, (size_t)n * 4, 0xff)); /* poison: NaN in every element */
    OK(ctx, trr_tensor_1d(b, 0, TRR_F32, n, t));
    return b;
}

/* The inputs of a chain of adds into a: a and b random, want = a (the host's copy the same adds then go into),
 * and their buffers and tensors on ctx. */
static inline void random_pair(trr_context *ctx, float *a, float *b, float *want, int n, trr_buffer **ba,
                               trr_tensor *ta, trr_buffer **bb, trr_tensor *tb) {
    fill_random(a, n);
    fill_random(b, n);
    memcpy(want, a, (size_t)n * sizeof *a);
    *ba = make(ctx, a, n, ta);
    *bb = make(ctx, b, n, tb);
}

static inline void expect_equal(const float *got, const float *want, int n, const char *what) {
    for (int i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], 4) == 0, "%s: element %d is %.9g, not %.9g", what, i, (double)got[i],
                  (double)want[i]);
}

/* Reads n floats of b and compares them bit for bit with want. */
static inline void expect_buffer(trr_context *ctx, trr_buffer *b, const float *want, int n, const char *what) {
    float *got = malloc((size_t)n * sizeof *got);
    cr_assert_not_null(got);
    OK(ctx, trr_buffer_read(ctx, b, 0, got, (size_t)n * 4));
    expect_equal(got, want, n, what);
    free(got);
}

/* Destroys the buffers of a NULL-terminated list. */
static inline void destroy_buffers(trr_buffer *const *list) {
    for (; *list; list++) trr_buffer_destroy(*list);
}

#endif
