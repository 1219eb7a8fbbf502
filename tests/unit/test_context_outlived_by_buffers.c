/* Destroying a context and its buffers in either order is safe and frees everything (trireme.h at
 * trr_context_destroy): a buffer keeps its context's device open, and the last buffer of a destroyed context
 * closes it. Run under the ASan build, a use after free or a leak of either order fails here. */
#include "test_support.h"
#include "trireme.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

enum { N = 4099 };

/* x = 0..N-1, y = gelu(x) queued and not waited for, so the late destroys find work still in flight. */
static void make_buffers_with_work(trr_context *ctx, const char *spec, trr_buffer **bx, trr_buffer **by) {
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) * 0.125f - 6.0f;
    cr_assert_eq(trr_buffer_create(ctx, sizeof x, bx), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    cr_assert_eq(trr_buffer_create(ctx, sizeof x, by), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, *bx, 0, x, sizeof x), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    trr_tensor tx, ty;
    cr_assert_eq(trr_tensor_1d(*bx, 0, TRR_F32, N, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(*by, 0, TRR_F32, N, &ty), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &tx, &ty), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
}

static void buffers_first(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    trr_buffer *bx = NULL, *by = NULL;
    make_buffers_with_work(ctx, spec, &bx, &by);
    cr_assert_eq(trr_buffer_destroy(by), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(bx), TRR_OK);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
}

static void context_first(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    trr_buffer *bx = NULL, *by = NULL;
    make_buffers_with_work(ctx, spec, &bx, &by);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK, "%s: destroying a context with live buffers", spec);
    /* the buffers keep the context's memory: a call naming it is refused, not a use after free */
    float v = 0.0f;
    cr_assert_eq(trr_buffer_read(ctx, by, 0, &v, sizeof v), TRR_ERR_INVALID_ARGUMENT, "%s", spec);
    cr_assert(strstr(trr_last_error(ctx), "destroyed"), "%s: %s", spec, trr_last_error(ctx));
    trr_buffer *late = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 64, &late), TRR_ERR_INVALID_ARGUMENT, "%s", spec);
    cr_assert_null(late);
    cr_assert_eq(trr_context_destroy(ctx), TRR_ERR_INVALID_ARGUMENT, "%s: a second destroy", spec);
    /* the first buffer's free needs the open device; the second, the last, closes it */
    cr_assert_eq(trr_buffer_destroy(bx), TRR_OK, "%s", spec);
    cr_assert_eq(trr_buffer_destroy(by), TRR_OK, "%s", spec);
}

/* A context with no buffer is closed by trr_context_destroy itself; one made after another context of the same
 * device was destroyed with buffers still live works beside them. */
static void interleaved(const char *spec) {
    trr_context *a = open_device_or_skip(spec, NULL);
    trr_buffer *ax = NULL, *ay = NULL;
    make_buffers_with_work(a, spec, &ax, &ay);
    cr_assert_eq(trr_context_destroy(a), TRR_OK);
    trr_context *b = open_device_or_skip(spec, NULL);
    trr_buffer *bx = NULL, *by = NULL;
    make_buffers_with_work(b, spec, &bx, &by);
    cr_assert_eq(trr_buffer_destroy(ax), TRR_OK);
    float first = -1.0f;
    cr_assert_eq(trr_buffer_read(b, by, 0, &first, sizeof first), TRR_OK, "%s: %s", spec, trr_last_error(b));
    cr_assert_float_eq(first, 0.0f, 1e-6f, "%s: gelu(-6) = %g", spec, (double)first);
    cr_assert_eq(trr_buffer_destroy(ay), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(bx), TRR_OK);
    cr_assert_eq(trr_context_destroy(b), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(by), TRR_OK);
}

/* cpu only: a wrapped host buffer outliving its context is forgotten without touching the memory. */
Test(context_lifetime, cpu_wrapped_buffer_after_its_context) {
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    static float host[64];
    trr_buffer *w = NULL;
    cr_assert_eq(trr_buffer_wrap(ctx, (uint64_t)(uintptr_t)host, sizeof host, &w), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_fill(ctx, w, 0, sizeof host, 0), TRR_OK);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(w), TRR_OK);
    host[0] = 1.0f; /* still the caller's */
}

Test(context_lifetime, cpu_buffers_first) { buffers_first("cpu"); }
Test(context_lifetime, cpu_context_first) { context_first("cpu"); }
Test(context_lifetime, cpu_interleaved) { interleaved("cpu"); }
Test(context_lifetime, opencl_buffers_first) { buffers_first("opencl:0"); }
Test(context_lifetime, opencl_context_first) { context_first("opencl:0"); }
Test(context_lifetime, opencl_interleaved) { interleaved("opencl:0"); }
Test(context_lifetime, vulkan_buffers_first) { buffers_first("vulkan:0"); }
Test(context_lifetime, vulkan_context_first) { context_first("vulkan:0"); }
Test(context_lifetime, vulkan_interleaved) { interleaved("vulkan:0"); }
Test(context_lifetime, cuda_buffers_first) { buffers_first("cuda:0"); }
Test(context_lifetime, cuda_context_first) { context_first("cuda:0"); }
Test(context_lifetime, cuda_interleaved) { interleaved("cuda:0"); }
