/* trr_buffer_wrap: buffers over memory that something else allocated. On the CPU the memory is a host array
 * of the test's own (malloc'd to the exact size, so AddressSanitizer sees any access past it, any free of it
 * by trireme, and the test's own free() after destroy would be a double free if trireme had freed it). On the
 * GPU backends the "foreign" memory is the native handle of a trireme buffer, reached through the internal
 * struct: the test then checks that the wrapped view and the owner see the same bytes and that forgetting the
 * wrapper leaves the owner intact. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "test_support.h"
#include "trireme.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float frand(float lo, float hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((double)(rng_state >> 11) * 0x1p-53);
}

static void fill_random(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = frand(-4.0f, 4.0f);
}

static uint64_t host_handle(const void *p) {
    return (uint64_t)(uintptr_t)p;
}

Test(wrap, cpu_add_writes_into_the_callers_memory) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    const int64_t rows = 37, cols = 53; /* odd sizes: no kernel may rely on a padded allocation */
    const size_t n = (size_t)(rows * cols), bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    cr_assert(x && y && z);
    fill_random(x, n);
    fill_random(y, n);
    memset(z, 0xff, bytes); /* NaN: an element the op misses stays NaN */

    trr_buffer *bx = NULL, *by = NULL, *bz = NULL;
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(x), bytes, &bx), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(y), bytes, &by), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(z), bytes, &bz), TRR_OK, "%s", trr_last_error(ctx));
    size_t size = 0;
    cr_assert_eq(trr_buffer_size(bz, &size), TRR_OK);
    cr_assert_eq(size, bytes);

    trr_tensor tx, ty, tz;
    cr_assert_eq(trr_tensor_2d(bx, 0, TRR_F32, rows, cols, 0, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_2d(by, 0, TRR_F32, rows, cols, 0, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bz, 0, TRR_F32, rows, cols, 0, &tz), TRR_OK);
    cr_assert_eq(trr_add(ctx, &tx, &ty, &tz), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_synchronize(ctx), TRR_OK);
    for (size_t i = 0; i < n; i++) cr_assert_eq(z[i], x[i] + y[i], "element %zu: %a != %a", i, (double)z[i], (double)(x[i] + y[i]));

    /* A matmul reading the caller's arrays as A [rows, cols] and B^T, into the caller's output. */
    float *c = malloc((size_t)(rows * rows) * sizeof(float));
    cr_assert(c);
    memset(c, 0xff, (size_t)(rows * rows) * sizeof(float));
    trr_buffer *bc = NULL;
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(c), (size_t)(rows * rows) * sizeof(float), &bc), TRR_OK);
    trr_tensor tyt, tc;
    cr_assert_eq(trr_tensor_transpose(&ty, &tyt), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bc, 0, TRR_F32, rows, rows, 0, &tc), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &tx, &tyt, &tc, TRR_EPI_NONE, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < rows; j++) {
            double ref = 0.0, mag = 0.0;
            for (int64_t k = 0; k < cols; k++) {
                ref += (double)x[i * cols + k] * y[j * cols + k];
                mag += fabs((double)x[i * cols + k] * y[j * cols + k]);
            }
            double got = c[i * rows + j];
            cr_assert(fabs(got - ref) <= 1e-5 * mag + 1e-6, "C[%lld,%lld] = %g, reference %g", (long long)i,
                      (long long)j, got, ref);
        }

    /* Host transfers through a wrapped buffer reach the caller's memory. */
    float v = 1.5f;
    cr_assert_eq(trr_buffer_write(ctx, bz, 4 * sizeof(float), &v, sizeof v), TRR_OK);
    cr_assert_eq(z[4], 1.5f);

    /* Forgetting the buffers leaves the memory alive and the caller's to free: under ASan a free inside
     * destroy would make the accesses below a use-after-free and the free() calls double frees. */
    cr_assert_eq(trr_buffer_destroy(bx), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(by), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(bz), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(bc), TRR_OK);
    z[0] = 2.0f;
    cr_assert_eq(z[0] + x[0] - x[0], 2.0f);
    free(x);
    free(y);
    free(z);
    free(c);
    trr_context_destroy(ctx);
}

Test(wrap, wrong_arguments_are_rejected_with_their_status) {
    trr_context *ctx = NULL, *other = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    cr_assert_eq(trr_context_create("cpu", &other), TRR_OK);
    float *mem = malloc(64 * sizeof(float));
    cr_assert(mem);
    trr_buffer *b = (trr_buffer *)(uintptr_t)0x1; /* must stay untouched by every failing call */

    cr_assert_eq(trr_buffer_wrap(NULL, host_handle(mem), 64, &b), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(mem), 64, NULL), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_wrap(ctx, 0, 64, &b), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(ctx), "native handle is 0"), "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(mem), 0, &b), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(mem) + 2, 16, &b), TRR_ERR_MISALIGNED);
    cr_assert(strstr(trr_last_error(ctx), "aligned"), "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_wrap(ctx, UINT64_MAX - 3, 16, &b), TRR_ERR_OVERFLOW);
    cr_assert_eq(b, (trr_buffer *)(uintptr_t)0x1);

    /* The size given is the size views are checked against. */
    cr_assert_eq(trr_buffer_wrap(ctx, host_handle(mem), 16 * sizeof(float), &b), TRR_OK);
    trr_tensor t, u;
    cr_assert_eq(trr_tensor_1d(b, 0, TRR_F32, 17, &t), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b, 0, TRR_F32, 17, &u), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &t, &u), TRR_ERR_OUT_OF_BOUNDS, "%s", trr_last_error(ctx));
    float four[4] = {0};
    cr_assert_eq(trr_buffer_read(ctx, b, 15 * sizeof(float), four, sizeof four), TRR_ERR_OUT_OF_BOUNDS);
    /* A wrapped buffer belongs to the context that wrapped it. */
    cr_assert_eq(trr_buffer_read(other, b, 0, four, sizeof four), TRR_ERR_WRONG_CONTEXT);
    cr_assert_eq(trr_buffer_destroy(b), TRR_OK);

    free(mem);
    trr_context_destroy(other);
    trr_context_destroy(ctx);
}

/* The native handle of a trireme buffer, as another library holding the same memory would have it: the
 * address (cpu, cuda), the cl_mem (opencl), the VkBuffer (vulkan: the first member of the backend's buffer). */
static uint64_t native_of(const trr_context *ctx, const trr_buffer *b) {
    if (!strcmp(ctx->backend->name, "vulkan")) {
        uint64_t h;
        memcpy(&h, b->mem, sizeof h);
        return h;
    }
    return (uint64_t)(uintptr_t)b->mem;
}

/* Wraps the memory of an owner buffer, runs gelu into it through the wrapper, reads the result through the
 * owner; then forgets the wrapper and checks the owner still works. */
static void shared_memory_on(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    enum { N = 1001 };
    const size_t bytes = N * sizeof(float), padded = (bytes + 3) & ~(size_t)3;
    float x[N], z[N];
    fill_random(x, N);
    trr_buffer *bx = NULL, *owner = NULL, *wrapped = NULL;
    cr_assert_eq(trr_buffer_create(ctx, bytes, &bx), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_create(ctx, padded, &owner), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, bytes), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, owner, 0, padded, 0xff), TRR_OK);
    cr_assert_eq(trr_buffer_wrap(ctx, native_of(ctx, owner), padded, &wrapped), TRR_OK, "%s: %s", spec,
                 trr_last_error(ctx));

    trr_tensor tx, tz;
    cr_assert_eq(trr_tensor_1d(bx, 0, TRR_F32, N, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(wrapped, 0, TRR_F32, N, &tz), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &tx, &tz), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    cr_assert_eq(trr_buffer_destroy(wrapped), TRR_OK);

    cr_assert_eq(trr_buffer_read(ctx, owner, 0, z, bytes), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < N; i++) {
        double v = x[i], ref = 0.5 * v * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
        /* the gelu bound (docs/ops.md): max relative error 1e-5 */
        cr_assert(fabs(z[i] - ref) <= 1e-5 * fmax(fabs(ref), 0x1p-126), "%s: gelu(%g) = %g, reference %g", spec, v,
                  (double)z[i], ref);
    }
    /* The owner outlives its wrapper: a second op into it still lands. */
    trr_tensor to;
    cr_assert_eq(trr_tensor_1d(owner, 0, TRR_F32, N, &to), TRR_OK);
    cr_assert_eq(trr_copy(ctx, &tx, &to), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, owner, 0, z, bytes), TRR_OK);
    cr_assert_eq(memcmp(x, z, bytes), 0, "%s: copy through the owner after unwrapping", spec);
    trr_buffer_destroy(owner);
    trr_buffer_destroy(bx);
    trr_context_destroy(ctx);
}

Test(wrap, cpu_native_handle) { shared_memory_on("cpu"); }
Test(wrap, opencl_cl_mem) { shared_memory_on("opencl:0"); }
Test(wrap, vulkan_vkbuffer) { shared_memory_on("vulkan:0"); }
Test(wrap, cuda_device_pointer) { shared_memory_on("cuda:0"); }
