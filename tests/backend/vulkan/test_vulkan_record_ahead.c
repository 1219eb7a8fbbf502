/* Vulkan's synchronize records the last single-op batch's dispatch ahead into the next batch, which the same
 * dispatch then claims (backend_vulkan/vk_submit.c). What must hold: a claimed dispatch reads what the host and
 * earlier ops wrote before it; a dispatch recorded ahead and never claimed never runs (a synchronize, a host read,
 * another op, the timer or a free leave it unsubmitted or clear it); a freed buffer is never reached through
 * it. Every case runs with push descriptors and with per-batch pools, each with buffers
 * the host maps directly (lavapipe's default) and through the staging buffer (TRIREME_VK_STAGING=1); two of them
 * again with the waits of a GPU (TRIREME_VK_SPIN_WAIT=1: a synchronize may end on a batch's event before its
 * fence, which later waits and the slot's reuse take; the validation layer checks that no resource is reused or
 * freed before its fence). Results are compared bit for bit with the same f32 adds on the host, from random
 * inputs into poisoned outputs. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "trireme.h"

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_host_check.h"

#define N 1027 /* odd: the add's vector body and its scalar tail */
#define REPEAT 100 /* past three turns of the ring of batches (32 slots, vk_internal.h): slots reused under sparse fences */

static trr_context *open_vulkan(int push, int staging, int spin) {
    if (spin) setenv("TRIREME_VK_SPIN_WAIT", "1", 1);
    else unsetenv("TRIREME_VK_SPIN_WAIT");
    if (push) unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    else setenv("TRIREME_VK_PUSH_DESCRIPTORS", "0", 1);
    if (staging) setenv("TRIREME_VK_STAGING", "1", 1);
    else unsetenv("TRIREME_VK_STAGING");
    return open_device_or_skip("vulkan:0", "vulkan");
}

static void add_into(float *want, const float *b) {
    for (int i = 0; i < N; i++) want[i] = want[i] + b[i];
}

static void synchronized_repeats(int push, int staging, int spin) {
    trr_context *ctx = open_vulkan(push, staging, spin);
    static float a[N], b[N], b2[N], c[N], want[N], got[N];
    fill_random(a, N);
    fill_random(b, N);
    fill_random(b2, N);
    fill_random(c, N);
    memcpy(want, a, sizeof a);
    trr_tensor ta, tb, tc, tz;
    trr_buffer *ba = make(ctx, a, N, &ta), *bb = make(ctx, b, N, &tb), *bz = make(ctx, NULL, N, &tz);

    /* a = a + b synchronized again and again: each claimed add reads the one before's a */
    for (int k = 0; k < REPEAT; k++) {
        OK(ctx, trr_add(ctx, &ta, &tb, &ta));
        OK(ctx, trr_synchronize(ctx));
        add_into(want, b);
    }
    /* the add recorded ahead by the last synchronize never runs: not through a second synchronize, a read, or
     * the timer's own batch */
    OK(ctx, trr_synchronize(ctx));
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after the synchronized adds");
    double ms = -1;
    OK(ctx, trr_timer_start(ctx));
    OK(ctx, trr_timer_stop(ctx, &ms));
    cr_assert_geq(ms, 0.0);
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after an empty timed span");

    /* a host write to b between synchronized adds: the next add reads the new b */
    OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_synchronize(ctx));
    add_into(want, b);
    OK(ctx, trr_buffer_write(ctx, bb, 0, b2, sizeof b2));
    OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_synchronize(ctx));
    add_into(want, b2);
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after b was rewritten between synchronized adds");

    /* another op after the synchronize (z = a + b), then the first again, then the timer around it */
    OK(ctx, trr_add(ctx, &ta, &tb, &tz));
    OK(ctx, trr_synchronize(ctx));
    OK(ctx, trr_buffer_read(ctx, bz, 0, got, sizeof got));
    float zwant[N];
    for (int i = 0; i < N; i++) zwant[i] = want[i] + b2[i];
    expect_equal(got, zwant, N, "z = a + b after a synchronized a = a + b");
    OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_synchronize(ctx));
    add_into(want, b2);
    OK(ctx, trr_timer_start(ctx));
    OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_timer_stop(ctx, &ms));
    add_into(want, b2);
    cr_assert_gt(ms, 0.0, "the timer measured %g ms for one add", ms);
    OK(ctx, trr_add(ctx, &ta, &tb, &ta));
    OK(ctx, trr_synchronize(ctx));
    add_into(want, b2);
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after the other op and the timed add");

    /* b freed with an add on it recorded ahead; a new buffer (maybe on b's memory and handle) takes its place */
    trr_buffer_destroy(bb);
    trr_buffer *bc = make(ctx, c, N, &tc);
    for (int k = 0; k < 3; k++) {
        OK(ctx, trr_add(ctx, &ta, &tc, &ta));
        OK(ctx, trr_synchronize(ctx));
        add_into(want, c);
    }
    OK(ctx, trr_buffer_read(ctx, ba, 0, got, sizeof got));
    expect_equal(got, want, N, "a after b was freed and c added");
    trr_buffer_destroy(bc);
    trr_buffer_destroy(bz);
    trr_buffer_destroy(ba);
    trr_context_destroy(ctx); /* closes with nothing recorded ahead: the free above cleared it */
}

Test(vulkan_ahead, repeats_push_mapped) { synchronized_repeats(1, 0, 0); }
Test(vulkan_ahead, repeats_pools_mapped) { synchronized_repeats(0, 0, 0); }
Test(vulkan_ahead, repeats_push_staging) { synchronized_repeats(1, 1, 0); }
Test(vulkan_ahead, repeats_pools_staging) { synchronized_repeats(0, 1, 0); }
Test(vulkan_ahead, repeats_push_mapped_spin) { synchronized_repeats(1, 0, 1); }
Test(vulkan_ahead, repeats_pools_staging_spin) { synchronized_repeats(0, 1, 1); }
