/* Vulkan's device timer (backend_vulkan/vk_submit.c): its two timestamp queries are reset by the host after each
 * reading where the device offers hostQueryReset, else by a reset recorded before the start stamp
 * (TRIREME_VK_HOST_QUERY_RESET=0; lavapipe offers it, so both paths run here). What must hold on both: interval
 * after interval, empty or holding one op, a few, or more ops than one batch takes (the stop stamp then written
 * by several batches), each reading is a positive finite time and the timed work is done right; a query written
 * without a reset before it fails through the validation layer (TRIREME_VK_VALIDATION=1, as every test runs).
 * The timed ops are f32 adds compared bit for bit with the same adds on the host. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "f32_host_check.h"

#define N 515 /* odd: the add's vector body and its scalar tail */
#define MANY 300 /* more than one batch of TRR_VK_BATCH_OPS (128) ops */

static trr_context *open_vulkan(int host_reset) {
    if (host_reset) unsetenv("TRIREME_VK_HOST_QUERY_RESET");
    else setenv("TRIREME_VK_HOST_QUERY_RESET", "0", 1);
    return open_device_or_skip("vulkan:0", "vulkan");
}

static void intervals(int host_reset) {
    trr_context *ctx = open_vulkan(host_reset);
    static float a[N], b[N], want[N];
    trr_tensor ta, tb;
    trr_buffer *ba, *bb;
    random_pair(ctx, a, b, want, N, &ba, &ta, &bb, &tb);
    const int ops[] = {0, 1, 3, 0, MANY, 1, 0, 2};
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
            double ms = -1;
            OK(ctx, trr_timer_start(ctx));
            for (int k = 0; k < ops[i]; k++) {
                OK(ctx, trr_add(ctx, &ta, &tb, &ta));
                for (int e = 0; e < N; e++) want[e] += b[e];
            }
            OK(ctx, trr_timer_stop(ctx, &ms));
            cr_assert(isfinite(ms) && ms >= 0.0 && ms < 60e3, "round %d, interval %zu (%d adds): %g ms", round, i,
                      ops[i], ms);
            if (ops[i] > 0) cr_assert_gt(ms, 0.0, "round %d, interval %zu: %d adds in 0 ms", round, i, ops[i]);
            /* untimed work between intervals, and a host read that waits for it */
            OK(ctx, trr_add(ctx, &ta, &tb, &ta));
            for (int e = 0; e < N; e++) want[e] += b[e];
            expect_buffer(ctx, ba, want, N, "a after the interval and one more add");
        }
    trr_buffer_destroy(bb);
    trr_buffer_destroy(ba);
    trr_context_destroy(ctx);
}

Test(vulkan_timer, intervals_host_reset) { intervals(1); }
Test(vulkan_timer, intervals_recorded_reset) { intervals(0); }
