/* CUDA's queued launches (backend_cuda/batch.c): small kernels after the first since a wait go to the device as
 * one graph, so the cases Vulkan's batches pass (queued_ops_cases.h) run here too, and some of CUDA's own: a
 * chain that changes kernels from node to node (each node's function is replaced), launches that must wait for
 * the queue (a matmul, a transfer), synchronized launches through the one-node graph, and the native stream
 * handed out, after which nothing is queued. Runs on
 * cuda:0 (skipped where there is none, as on CI). */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_host_check.h"
#include "queued_ops_cases.h"
#include "trr_cuda.h"

static trr_context *open_cuda(void) { return open_device_or_skip("cuda:0", "cuda"); }

static const trr_cuda_dev *dev_of(trr_context *ctx) { return ((const struct trr_context *)ctx)->dev; }

Test(cuda_batch, chained_adds) { queued_chained_adds(open_cuda()); }
Test(cuda_batch, mixed_chain) { queued_mixed_chain(open_cuda()); }
Test(cuda_batch, pending_host_access) { queued_pending_host_access(open_cuda()); }

#define R 37 /* the 2-D views (the row kernel) cover the first R * C elements */
#define C 110

/* a += b alternately through the flat kernel (1-D views) and the row kernel (2-D views of the same buffers),
 * with a copy into c through the row kernel's copy every third step and c added back: three functions in turn
 * in the graph's nodes, across several full batches; then a matmul by the identity (a launch of its own, which
 * must come after the queued adds and before the ones queued after it) and more adds. */
Test(cuda_batch, kernels_change_from_node_to_node) {
    trr_context *ctx = open_cuda();
    static float a[N], b[N], want[N], eye[C * C];
    fill_random(a, N);
    fill_random(b, N);
    memcpy(want, a, sizeof a);
    for (int i = 0; i < C; i++) eye[i * C + i] = 1.0f;
    trr_tensor ta, tb, tc, tc3, te, ta2, tb2, tc2, td2;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb), *bc = make(ctx, NULL, N, &tc),
               *bd = make(ctx, NULL, N, &tc3), *be = make(ctx, eye, C * C, &te);
    OK(ctx, trr_tensor_2d(ba, 0, TRR_F32, R, C, 0, &ta2));
    OK(ctx, trr_tensor_2d(bb, 0, TRR_F32, R, C, 0, &tb2));
    OK(ctx, trr_tensor_2d(bc, 0, TRR_F32, R, C, 0, &tc2));
    OK(ctx, trr_tensor_2d(bd, 0, TRR_F32, R, C, 0, &td2));
    OK(ctx, trr_tensor_2d(be, 0, TRR_F32, C, C, 0, &te));
    OK(ctx, trr_synchronize(ctx));
    for (int k = 0; k < CHAIN; k++) {
        if (k % 2) OK(ctx, trr_add(ctx, &ta2, &tb2, &ta2));
        else OK(ctx, trr_add(ctx, &ta, &tb, &ta));
        for (int i = 0; i < (k % 2 ? R * C : N); i++) want[i] = want[i] + b[i];
        if (k % 3 == 0) {
            OK(ctx, trr_copy(ctx, &ta2, &tc2));       /* c = a */
            OK(ctx, trr_add(ctx, &tc2, &tb2, &ta2)); /* a = c + b */
            for (int i = 0; i < R * C; i++) want[i] = want[i] + b[i];
        }
        if (k == CHAIN / 2) {
            OK(ctx, trr_matmul(ctx, &ta2, &te, &td2, TRR_EPI_NONE, 0.0f, 0)); /* d = a */
            OK(ctx, trr_add(ctx, &td2, &tb2, &ta2));                          /* a = d + b */
            for (int i = 0; i < R * C; i++) want[i] = want[i] + b[i];
        }
    }
    cr_assert_not_null(dev_of(ctx)->batch, "no kernel was queued: the test did not reach the graph");
    expect_buffer(ctx, ba, want, N, "a after the chain");
    destroy_buffers((trr_buffer *[]){ba, bb, bc, bd, be, NULL});
    trr_context_destroy(ctx);
}

/* After trr_context_native the caller may put work on the stream, so every launch goes straight to it: a chain
 * still gives the right result, and what was queued before the call was launched by it. */
Test(cuda_batch, native_stream_stops_queueing) {
    trr_context *ctx = open_cuda();
    static float a[N], b[N], want[N];
    trr_tensor ta, tb;
    trr_buffer *ba, *bb;
    random_pair(ctx, a, b, want, N, &ba, &ta, &bb, &tb);
    for (int k = 0; k < 10; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    cr_assert_not_null(dev_of(ctx)->batch, "nothing was queued before the native handles were taken");
    cr_assert_gt(trr_cuda_batch_queued(dev_of(ctx)), 0);
    trr_native nat;
    OK(ctx, trr_context_native(ctx, &nat));
    cr_assert_eq(dev_of(ctx)->batch_off, 1);
    for (int k = 0; k < 10; k++) OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    for (int k = 0; k < 20; k++)
        for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
    expect_buffer(ctx, ba, want, N, "a after the chain");
    destroy_buffers((trr_buffer *[]){ba, bb, NULL});
    trr_context_destroy(ctx);
}

/* Each op synchronized: every launch is the first after a wait, which goes out at once through the one-node
 * graph, its node updated each time. Repeats, alternations of two launches, and a kernel of another shape in
 * between must each run with their own arguments. */
Test(cuda_batch, synchronized_launches_repeat_and_alternate) {
    trr_context *ctx = open_cuda();
    static float a[N], b[N], c[N], want_a[N], want_c[N];
    fill_random(a, N);
    fill_random(b, N);
    fill_random(c, N);
    memcpy(want_a, a, sizeof a);
    memcpy(want_c, c, sizeof c);
    trr_tensor ta, tb, tc, ta2, tb2;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb), *bc = make(ctx, c, N, &tc);
    OK(ctx, trr_tensor_2d(ba, 0, TRR_F32, R, C, 0, &ta2));
    OK(ctx, trr_tensor_2d(bb, 0, TRR_F32, R, C, 0, &tb2));
    for (int k = 0; k < 40; k++) {
        const int which = k < 10 ? 0 : k < 30 ? k % 2 : k % 3; /* repeats, then alternations */
        if (which == 0) {
            OK(ctx, trr_add(ctx, &ta, &tb, &ta));
            for (int i = 0; i < N; i++) want_a[i] = want_a[i] + b[i];
        } else if (which == 1) {
            OK(ctx, trr_add(ctx, &tc, &tb, &tc));
            for (int i = 0; i < N; i++) want_c[i] = want_c[i] + b[i];
        } else {
            OK(ctx, trr_add(ctx, &ta2, &tb2, &ta2));
            for (int i = 0; i < R * C; i++) want_a[i] = want_a[i] + b[i];
        }
        OK(ctx, trr_synchronize(ctx));
    }
    expect_buffer(ctx, ba, want_a, N, "a");
    expect_buffer(ctx, bc, want_c, N, "c");
    destroy_buffers((trr_buffer *[]){ba, bb, bc, NULL});
    trr_context_destroy(ctx);
}

/* A one-block element-wise kernel on an idle stream writes the synchronize's flag itself (wait.c), so the
 * synchronize returns as soon as the host sees that word: the kernel's stores must be visible to the host by
 * then. The output lives in mapped host memory, wrapped as a buffer, and is read straight after each synchronize,
 * with no transfer that would wait for the stream again. Whatever follows that kernel takes the flag back to the
 * stream's write behind the last command, and its stores must be visible too: a second add queued behind it (no
 * flag: only a kernel on an idle stream writes it), the row kernel queued behind it, a copy, a grid of several
 * blocks. */
Test(cuda_batch, synchronize_sees_the_stores_of_a_kernel_that_writes_the_flag) {
    trr_context *ctx = open_cuda();
    trr_cuda_dev *dev = ((struct trr_context *)ctx)->dev;
    if (!dev->flag) cr_skip_test("cuda:0: the driver gives no mapped host memory for the flag");
    enum { M = 5, BIG = 1 << 20 };
    void *host = NULL;
    CUdeviceptr mapped = 0;
    cr_assert_eq(trr_cu.MemHostAlloc(&host, M * sizeof(float), TRR_CU_MEMHOSTALLOC_DEVICEMAP), TRR_CUDA_SUCCESS);
    cr_assert_eq(trr_cu.MemHostGetDevicePointer(&mapped, host, 0), TRR_CUDA_SUCCESS);
    volatile float *z = host;
    float y[M], want[M];
    fill_random(y, M);
    for (int i = 0; i < M; i++) z[i] = want[i] = (float)i;
    trr_buffer *bz = NULL;
    OK(ctx, trr_buffer_wrap(ctx, (uint64_t)mapped, M * sizeof(float), &bz));
    trr_tensor tz, ty, tz2, ty2, tbig, tbig2;
    OK(ctx, trr_tensor_1d(bz, 0, TRR_F32, M, &tz));
    trr_buffer *by = make(ctx, y, M, &ty), *bbig = make(ctx, NULL, BIG, &tbig), *bbig2 = make(ctx, NULL, BIG, &tbig2);
    OK(ctx, trr_tensor_2d(bz, 0, TRR_F32, 3, 1, 2, &tz2)); /* elements 0, 2, 4 as rows of one: the row kernel */
    OK(ctx, trr_tensor_2d(by, 0, TRR_F32, 3, 1, 2, &ty2));
    OK(ctx, trr_synchronize(ctx)); /* the fills above leave the stream busy */
    for (int k = 0; k < 2000; k++) {
        OK(ctx, trr_add(ctx, &tz, &ty, &tz));
        for (int i = 0; i < M; i++) want[i] = want[i] + y[i];
        cr_assert_neq(dev->flag_kernel, 0u, "call %d: the one-block add did not write the flag itself", k);
        const char *after = "nothing";
        if (k % 5 == 1) {
            after = "a queued add";
            OK(ctx, trr_add(ctx, &tz, &ty, &tz));
        } else if (k % 5 == 2) {
            after = "the row kernel";
            OK(ctx, trr_add(ctx, &tz2, &ty2, &tz2));
        }
        if (k % 5 == 1 || k % 5 == 2) {
            for (int i = 0; i < M; i += k % 5 == 2 ? 2 : 1) want[i] = want[i] + y[i];
            cr_assert_eq(dev->flag_kernel, 0u, "call %d: %s followed, yet the flag is the first kernel's", k, after);
        }
        if (k % 7 == 3) {
            after = "a copy";
            OK(ctx, trr_copy(ctx, &tbig, &tbig2));
            cr_assert_eq(dev->flag_kernel, 0u, "call %d: a copy followed, yet the flag is the kernel's", k);
        }
        if (k % 11 == 5) {
            after = "a grid of many blocks";
            OK(ctx, trr_add(ctx, &tbig, &tbig2, &tbig));
            cr_assert_eq(dev->flag_kernel, 0u, "call %d: a grid of many blocks wrote the flag", k);
        }
        OK(ctx, trr_synchronize(ctx));
        for (int i = 0; i < M; i++)
            cr_assert_eq(z[i], want[i], "call %d (then %s), element %d: %.9g after the synchronize, want %.9g", k,
                         after, i, (double)z[i], (double)want[i]);
    }
    destroy_buffers((trr_buffer *[]){bz, by, bbig, bbig2, NULL});
    trr_context_destroy(ctx);
    trr_cu.MemFreeHost(host);
}
