/* The native-handle seam (trr_context_native, trr_buffer_native) on every device this machine has: the handles
 * are what trireme.h says per backend, NULL arguments are rejected, and asking for them leaves trireme's own
 * buffers and ops working. cuda:0 runs where a CUDA device exists and is skipped elsewhere. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "trireme.h"

#define N 4099 /* not a multiple of any work-group size */

static uint64_t rng_state;

static float urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* ctx on the first device of backend, or the test skipped when it is not compiled in or has no device here */
static trr_context *open_or_skip(const char *backend) {
    int n = 0;
    cr_assert_eq(trr_backend_count(&n), TRR_OK);
    for (int b = 0; b < n; b++) {
        trr_backend_info bi;
        cr_assert_eq(trr_backend_get_info(b, &bi), TRR_OK);
        if (strcmp(bi.name, backend) != 0) continue;
        char spec[32];
        snprintf(spec, sizeof spec, "%s:0", backend);
        return open_device_or_skip(spec, backend);
    }
    skip_not_compiled_in(backend);
    return NULL;
}

/* Random inputs written, native handles taken (context and every buffer), then an add on an output poisoned
 * with NaN: the inputs read back unchanged and the sum is bit-exact. Returns the three buffer handles. */
static void write_native_add(trr_context *ctx, uint64_t handles[3]) {
    rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)ctx;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    float *back = malloc(N * sizeof *back);
    cr_assert(x && y && z && back);
    for (int i = 0; i < N; i++) x[i] = urand(), y[i] = urand();
    trr_buffer *buf[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(trr_buffer_create(ctx, N * sizeof(float), &buf[i]), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, buf[0], 0, x, N * sizeof(float)), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, buf[1], 0, y, N * sizeof(float)), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_fill(ctx, buf[2], 0, N * sizeof(float), 0xff), TRR_OK, "%s", trr_last_error(ctx));

    trr_native native;
    cr_assert_eq(trr_context_native(ctx, &native), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(trr_buffer_native(buf[i], &handles[i]), TRR_OK, "%s", trr_last_error(ctx));

    cr_assert_eq(trr_buffer_read(ctx, buf[0], 0, back, N * sizeof(float)), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(memcmp(back, x, N * sizeof(float)), 0, "x changed after the native calls");
    trr_tensor tx, ty, tz;
    cr_assert_eq(trr_tensor_1d(buf[0], 0, TRR_F32, N, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf[1], 0, TRR_F32, N, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf[2], 0, TRR_F32, N, &tz), TRR_OK);
    cr_assert_eq(trr_add(ctx, &tx, &ty, &tz), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, buf[2], 0, z, N * sizeof(float)), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < N; i++) {
        float want = x[i] + y[i];
        cr_assert_eq(memcmp(&z[i], &want, sizeof want), 0, "z[%d] = %g, want %g", i, z[i], want);
    }
    for (int i = 0; i < 3; i++) cr_assert_eq(trr_buffer_destroy(buf[i]), TRR_OK);
    free(x), free(y), free(z), free(back);
}

static void check_null_arguments(trr_context *ctx) {
    trr_native native;
    uint64_t h = 1;
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_context_native(NULL, &native), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_context_native(ctx, NULL), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_native(NULL, &h), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_create(ctx, 64, &buf), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_native(buf, NULL), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_buffer_destroy(buf), TRR_OK);
}

/* device, context and queue all set (cuda: device is an ordinal, so 0 on cuda:0 and not checked) */
static void check_gpu_native(trr_context *ctx, const char *backend) {
    trr_native native;
    memset(&native, 0x5a, sizeof native);
    cr_assert_eq(trr_context_native(ctx, &native), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_str_eq(native.backend, backend);
    if (strcmp(backend, "cuda") != 0) cr_assert_not_null(native.device);
    cr_assert_not_null(native.context);
    cr_assert_not_null(native.queue);
    /* the same again: handles belong to the context, not to the call */
    trr_native again;
    cr_assert_eq(trr_context_native(ctx, &again), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(memcmp(&native, &again, sizeof native), 0);

    uint64_t h[3];
    write_native_add(ctx, h);
    cr_assert(h[0] && h[1] && h[2], "a buffer handle is 0");
    cr_assert(h[0] != h[1] && h[1] != h[2] && h[0] != h[2], "two live buffers share a handle");
    check_null_arguments(ctx);
}

Test(native, cpu) {
    trr_context *ctx = open_or_skip("cpu");
    trr_native native;
    memset(&native, 0x5a, sizeof native);
    cr_assert_eq(trr_context_native(ctx, &native), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_str_eq(native.backend, "cpu");
    cr_assert_null(native.device);
    cr_assert_null(native.context);
    cr_assert_null(native.queue);

    uint64_t h[3];
    write_native_add(ctx, h);
    cr_assert(h[0] && h[1] && h[2], "a buffer handle is 0");

    /* the handle is the host address: what trireme wrote is there, and what is written there trireme reads */
    float in[64], out[64];
    for (int i = 0; i < 64; i++) in[i] = urand();
    trr_buffer *buf;
    uint64_t addr = 0;
    cr_assert_eq(trr_buffer_create(ctx, sizeof in, &buf), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, in, sizeof in), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_native(buf, &addr), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_synchronize(ctx), TRR_OK);
    float *host = (float *)(uintptr_t)addr;
    cr_assert_eq(memcmp(host, in, sizeof in), 0, "the host address does not hold the written data");
    for (int i = 0; i < 64; i++) host[i] = -in[i];
    cr_assert_eq(trr_buffer_read(ctx, buf, 0, out, sizeof out), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < 64; i++) cr_assert_eq(out[i], -in[i], "element %d", i);
    cr_assert_eq(trr_buffer_destroy(buf), TRR_OK);

    check_null_arguments(ctx);
    trr_context_destroy(ctx);
}

Test(native, opencl) {
    trr_context *ctx = open_or_skip("opencl");
    check_gpu_native(ctx, "opencl");
    trr_context_destroy(ctx);
}

Test(native, vulkan) {
    trr_context *ctx = open_or_skip("vulkan");
    check_gpu_native(ctx, "vulkan");
    trr_context_destroy(ctx);
}

Test(native, cuda) {
    trr_context *ctx = open_or_skip("cuda");
    check_gpu_native(ctx, "cuda");
    trr_context_destroy(ctx);
}

/* ---- ordering with another library's stream (trr_stream_wait_native, trr_native_wait_stream,
 * trr_context_stream) ---- */

/* Backends without shareable streams refuse all three with TRR_ERR_UNSUPPORTED and a reason naming the
 * backend, and their ops work afterwards. */
static void check_no_streams(trr_context *ctx, const char *backend) {
    uint64_t s = 7;
    cr_assert_eq(trr_stream_wait_native(ctx, 1), TRR_ERR_UNSUPPORTED);
    cr_assert(strstr(trr_last_error(ctx), backend), "%s", trr_last_error(ctx));
    cr_assert_eq(trr_native_wait_stream(ctx, 1), TRR_ERR_UNSUPPORTED);
    cr_assert(strstr(trr_last_error(ctx), backend), "%s", trr_last_error(ctx));
    cr_assert_eq(trr_context_stream(ctx, &s), TRR_ERR_UNSUPPORTED);
    cr_assert(strstr(trr_last_error(ctx), "context_stream"), "%s", trr_last_error(ctx));
    cr_assert_eq(s, 0, "out_stream left at %llu on failure", (unsigned long long)s);
    uint64_t h[3];
    write_native_add(ctx, h);
}

static void check_stream_null_arguments(trr_context *ctx) {
    uint64_t s;
    cr_assert_eq(trr_stream_wait_native(NULL, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_native_wait_stream(NULL, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_context_stream(NULL, &s), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_context_stream(ctx, NULL), TRR_ERR_INVALID_ARGUMENT);
}

Test(native_streams, cpu) {
    trr_context *ctx = open_or_skip("cpu");
    check_stream_null_arguments(ctx);
    check_no_streams(ctx, "cpu");
    trr_context_destroy(ctx);
}

Test(native_streams, opencl) {
    trr_context *ctx = open_or_skip("opencl");
    check_stream_null_arguments(ctx);
    check_no_streams(ctx, "opencl");
    trr_context_destroy(ctx);
}

Test(native_streams, vulkan) {
    trr_context *ctx = open_or_skip("vulkan");
    check_stream_null_arguments(ctx);
    check_no_streams(ctx, "vulkan");
    trr_context_destroy(ctx);
}

/* cuda: a chain of adds on trireme's stream, each handed to the legacy and the per-thread default streams and
 * back (both directions, before and after the stream went idle), then the result read: bit-exact. The handle
 * trr_context_stream gives is the stream trr_context_native gives (asked last: it hands the stream over). */
Test(native_streams, cuda) {
    trr_context *ctx = open_or_skip("cuda");
    check_stream_null_arguments(ctx);
    rng_state = 0x2545f4914f6cdd1dull;
    enum { M = 1000 };
    float x[M], z[M], want[M];
    for (int i = 0; i < M; i++) x[i] = urand(), want[i] = x[i];
    trr_buffer *bx, *bz;
    cr_assert_eq(trr_buffer_create(ctx, sizeof x, &bx), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_create(ctx, sizeof z, &bz), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, sizeof x), TRR_OK, "%s", trr_last_error(ctx));
    trr_tensor tx, tz;
    cr_assert_eq(trr_tensor_1d(bx, 0, TRR_F32, M, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(bz, 0, TRR_F32, M, &tz), TRR_OK);
    /* a native stream of 0 is taken as the legacy default stream, like 1 */
    const uint64_t natives[] = {0, 1, 2};
    for (int round = 0; round < 6; round++) {
        const uint64_t s = natives[round % 3];
        cr_assert_eq(trr_stream_wait_native(ctx, s), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_add(ctx, &tx, &tx, &tz), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_copy(ctx, &tz, &tx), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_native_wait_stream(ctx, s), TRR_OK, "%s", trr_last_error(ctx));
        for (int i = 0; i < M; i++) want[i] = want[i] + want[i];
        if (round == 3) cr_assert_eq(trr_synchronize(ctx), TRR_OK); /* idle: nothing for the native side to wait for */
    }
    cr_assert_eq(trr_buffer_read(ctx, bx, 0, z, sizeof z), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < M; i++) cr_assert_eq(memcmp(&z[i], &want[i], sizeof z[i]), 0, "x[%d] = %g, want %g", i, z[i], want[i]);
    uint64_t stream = 0;
    cr_assert_eq(trr_context_stream(ctx, &stream), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert(stream != 0);
    trr_native native;
    cr_assert_eq(trr_context_native(ctx, &native), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(stream, (uint64_t)(uintptr_t)native.queue);
    cr_assert_eq(trr_buffer_destroy(bx), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(bz), TRR_OK);
    trr_context_destroy(ctx);
}
