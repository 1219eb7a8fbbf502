/* Vulkan's batched submission (backend_vulkan/vk_submit.c): ops recorded into one command buffer and submitted
 * later must still run in order and see each other's writes, across the batch limit (128 ops); host reads,
 * writes and frees of buffers with work still recorded or in flight must wait for that work. Each case runs
 * twice: with push descriptors (lavapipe offers VK_KHR_push_descriptor) and with per-batch descriptor pools
 * (TRIREME_VK_PUSH_DESCRIPTORS=0). Results are compared bit for bit with the same f32 arithmetic on the host
 * (an f32 add is exact IEEE arithmetic on every device). Runs on vulkan:0 under TRIREME_VK_VALIDATION=1 as
 * every test does, so a missing barrier or a buffer destroyed while in use also fails through the layer. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_host_check.h"

#define N 4099 /* odd: the add's vector body and its scalar tail */
#define CHAIN 300

static trr_context *open_vulkan(int push) {
    if (push) unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    else setenv("TRIREME_VK_PUSH_DESCRIPTORS", "0", 1);
    return open_device_or_skip("vulkan:0", "vulkan");
}

/* a = a + b, CHAIN times in place, each add reading what the one before wrote; no synchronize before the read. */
static void chained_adds(int push) {
    trr_context *ctx = open_vulkan(push);
    static float a[N], b[N], want[N], got[N];
    fill_random(a, N);
    fill_random(b, N);
    memcpy(want, a, sizeof a);
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    trr_tensor ta, tb;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb);
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after the chain");
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    trr_context_destroy(ctx);
}

Test(vulkan_batch, chained_adds_push_descriptors) { chained_adds(1); }
Test(vulkan_batch, chained_adds_descriptor_pools) { chained_adds(0); }

/* Different kernels and transfers in one dependent chain: c = copy(a) (the copy kernel, and vkCmdCopyBuffer at
 * an odd offset), a = c + b, a byte fill of a scratch buffer between them; then the timer around more of it. */
static void mixed_chain(int push) {
    trr_context *ctx = open_vulkan(push);
    static float a[N], b[N], want[N], got[N];
    fill_random(a, N);
    fill_random(b, N);
    memcpy(want, a, sizeof a);
    trr_tensor ta, tb, tc, ts;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb), *bc = make(ctx, NULL, N + 1, &tc),
               *scratch = make(ctx, NULL, N, &ts);
    trr_tensor tc_odd; /* c one element in: its copy is 4 bytes off the 16-byte words of a */
    OK(ctx, trr_tensor_1d(bc, 4, TRR_F32, N, &tc_odd));
    OK(ctx, trr_tensor_1d(bc, 0, TRR_F32, N, &tc));
    for (int k = 0; k < 2 * CHAIN / 3; k++) {
        const trr_tensor *c = k % 2 ? &tc_odd : &tc;
        OK(ctx, trr_copy(ctx, &ta, c));
        OK(ctx, trr_buffer_fill(ctx, scratch, 0, (size_t)N * 4, (uint8_t)k));
        OK(ctx, trr_add(ctx, c, &tb, &ta));
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    }
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after the mixed chain");

    double ms = -1;
    OK(ctx, trr_timer_start(ctx));
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_timer_stop(ctx, &ms));
    cr_assert_gt(ms, 0.0, "the timer measured %g ms for %d adds", ms, CHAIN);
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after the timed chain");
    /* an empty timed span still gives a figure */
    OK(ctx, trr_timer_start(ctx));
    OK(ctx, trr_timer_stop(ctx, &ms));
    cr_assert_geq(ms, 0.0);
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(bc);
    trr_buffer_destroy(scratch);
    trr_context_destroy(ctx);
}

Test(vulkan_batch, mixed_chain_push_descriptors) { mixed_chain(1); }
Test(vulkan_batch, mixed_chain_descriptor_pools) { mixed_chain(0); }

/* Host access and frees with work pending on the buffers. */
static void pending_host_access(int push) {
    trr_context *ctx = open_vulkan(push);
    static float x[N], y[N], x2[N], want[N], got[N];
    fill_random(x, N);
    fill_random(y, N);
    fill_random(x2, N);
    trr_tensor tx, ty, tz, tt, tu;
    trr_buffer *bx = make(ctx, x, N, &tx), *by = make(ctx, y, N, &ty), *bz = make(ctx, NULL, N, &tz);

    /* a host write after a queued op that reads the buffer: the op sees the old contents */
    OK(ctx, trr_add(ctx, &tx, &ty, &tz));
    OK(ctx, trr_buffer_write(ctx, bx, 0, x2, sizeof x2));
    OK(ctx, trr_buffer_read(ctx, bz, 0, got, sizeof got));
    for (int i = 0; i < N; i++) want[i] = x[i] + y[i];
    expect_equal(got, want, N, "z = x + y queued before x was overwritten");

    /* a host write to a buffer no pending op uses, then an op that reads it: the op sees the new contents */
    OK(ctx, trr_add(ctx, &ty, &ty, &tz)); /* pending, on y and z only */
    trr_buffer *bt = make(ctx, x, N, &tt);
    OK(ctx, trr_add(ctx, &tt, &tx, &tz));
    OK(ctx, trr_buffer_read(ctx, bz, 0, got, sizeof got));
    for (int i = 0; i < N; i++) want[i] = x[i] + x2[i];
    expect_equal(got, want, N, "z = t + x after t was written");

    /* a buffer freed while ops that read it are still recorded: they run on its contents before it goes */
    for (int k = 0; k < 5; k++) OK(ctx, trr_add(ctx, &tt, &ty, &tz));
    trr_buffer_destroy(bt);
    /* new buffers, possibly on the freed memory, written with other values while nothing is synchronized */
    trr_buffer *bu = make(ctx, x2, N, &tu);
    OK(ctx, trr_add(ctx, &tu, &tu, &tu));
    OK(ctx, trr_buffer_read(ctx, bz, 0, got, sizeof got));
    for (int i = 0; i < N; i++) want[i] = x[i] + y[i];
    expect_equal(got, want, N, "z = t + y with t freed right after");
    OK(ctx, trr_buffer_read(ctx, bu, 0, got, sizeof got));
    for (int i = 0; i < N; i++) want[i] = x2[i] + x2[i];
    expect_equal(got, want, N, "u = u + u");

    /* a read of a buffer some op wrote many batches ago while later batches are still queued */
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &tu, &ty, &tu));
    OK(ctx, trr_buffer_read(ctx, bx, 0, got, sizeof got));
    expect_equal(got, x2, N, "x, which no queued op touches");
    for (int i = 0; i < N; i++) want[i] = x2[i] + x2[i];
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + y[i];
    OK(ctx, trr_buffer_read(ctx, bu, 0, got, sizeof got));
    expect_equal(got, want, N, "u after the chain");

    trr_buffer_destroy(bu);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    /* a context destroyed with a batch open (the timer's) and never submitted: no validation message at close */
    OK(ctx, trr_timer_start(ctx));
    trr_context_destroy(ctx);
}

Test(vulkan_batch, pending_host_access_push_descriptors) { pending_host_access(1); }
Test(vulkan_batch, pending_host_access_descriptor_pools) { pending_host_access(0); }
