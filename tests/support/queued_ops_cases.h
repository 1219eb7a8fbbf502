/* Ops queued on a device and run later (Vulkan's batches, CUDA's graph of small kernels) must still run in
 * order and see each other's writes, across the batch limits (Vulkan: 128 ops; CUDA: 64 kernels); host reads,
 * writes and frees of buffers with work still queued or in flight must wait for that work. Results are compared
 * bit for bit with the same f32 arithmetic on the host (an f32 add is exact IEEE arithmetic on every device).
 * Each case takes an open context and destroys it. Include after criterion, test_support.h and
 * f32_host_check.h. */
#ifndef TRR_TEST_QUEUED_OPS_CASES_H
#define TRR_TEST_QUEUED_OPS_CASES_H

#define N 4099 /* odd: the add's vector body and its scalar tail */
#define CHAIN 300

/* a = a + b, CHAIN times in place, each add reading what the one before wrote; no synchronize before the read. */
static void queued_chained_adds(trr_context *ctx) {
    static float a[N], b[N], want[N];
    fill_random(a, N);
    fill_random(b, N);
    memcpy(want, a, sizeof a);
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    trr_tensor ta, tb;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb);
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    expect_buffer(ctx, ba, want, N, "a after the chain");
    destroy_buffers((trr_buffer *[]){ba, bb, NULL});
    trr_context_destroy(ctx);
}


/* Different kernels and transfers in one dependent chain: c = copy(a) (the copy kernel, and vkCmdCopyBuffer at
 * an odd offset), a = c + b, a byte fill of a scratch buffer between them; then the timer around more of it. */
static void queued_mixed_chain(trr_context *ctx) {
    static float a[N], b[N], want[N];
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
    expect_buffer(ctx, ba, want, N, "a after the mixed chain");

    double ms = -1;
    OK(ctx, trr_timer_start(ctx));
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_timer_stop(ctx, &ms));
    cr_assert_gt(ms, 0.0, "the timer measured %g ms for %d adds", ms, CHAIN);
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    expect_buffer(ctx, ba, want, N, "a after the timed chain");
    /* an empty timed span still gives a figure */
    OK(ctx, trr_timer_start(ctx));
    OK(ctx, trr_timer_stop(ctx, &ms));
    cr_assert_geq(ms, 0.0);
    destroy_buffers((trr_buffer *[]){ba, bb, bc, scratch, NULL});
    trr_context_destroy(ctx);
}


/* Host access and frees with work pending on the buffers. */
static void queued_pending_host_access(trr_context *ctx) {
    static float x[N], y[N], x2[N], want[N];
    fill_random(x, N);
    fill_random(y, N);
    fill_random(x2, N);
    trr_tensor tx, ty, tz, tt, tu;
    trr_buffer *bx = make(ctx, x, N, &tx), *by = make(ctx, y, N, &ty), *bz = make(ctx, NULL, N, &tz);

    /* a host write after a queued op that reads the buffer: the op sees the old contents */
    OK(ctx, trr_add(ctx, &tx, &ty, &tz));
    OK(ctx, trr_buffer_write(ctx, bx, 0, x2, sizeof x2));
    for (int i = 0; i < N; i++) want[i] = x[i] + y[i];
    expect_buffer(ctx, bz, want, N, "z = x + y queued before x was overwritten");

    /* a host write to a buffer no pending op uses, then an op that reads it: the op sees the new contents */
    OK(ctx, trr_add(ctx, &ty, &ty, &tz)); /* pending, on y and z only */
    trr_buffer *bt = make(ctx, x, N, &tt);
    OK(ctx, trr_add(ctx, &tt, &tx, &tz));
    for (int i = 0; i < N; i++) want[i] = x[i] + x2[i];
    expect_buffer(ctx, bz, want, N, "z = t + x after t was written");

    /* a buffer freed while ops that read it are still recorded: they run on its contents before it goes */
    for (int k = 0; k < 5; k++) OK(ctx, trr_add(ctx, &tt, &ty, &tz));
    trr_buffer_destroy(bt);
    /* new buffers, possibly on the freed memory, written with other values while nothing is synchronized */
    trr_buffer *bu = make(ctx, x2, N, &tu);
    OK(ctx, trr_add(ctx, &tu, &tu, &tu));
    for (int i = 0; i < N; i++) want[i] = x[i] + y[i];
    expect_buffer(ctx, bz, want, N, "z = t + y with t freed right after");
    for (int i = 0; i < N; i++) want[i] = x2[i] + x2[i];
    expect_buffer(ctx, bu, want, N, "u = u + u");

    /* a read of a buffer some op wrote many batches ago while later batches are still queued */
    for (int k = 0; k < CHAIN; k++) OK(ctx, trr_add(ctx, &tu, &ty, &tu));
    expect_buffer(ctx, bx, x2, N, "x, which no queued op touches");
    for (int i = 0; i < N; i++) want[i] = x2[i] + x2[i];
    for (int k = 0; k < CHAIN; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + y[i];
    expect_buffer(ctx, bu, want, N, "u after the chain");

    destroy_buffers((trr_buffer *[]){bu, bx, by, bz, NULL});
    /* a context destroyed with a batch open (the timer's) and never submitted: no validation message at close */
    OK(ctx, trr_timer_start(ctx));
    trr_context_destroy(ctx);
}

#endif
